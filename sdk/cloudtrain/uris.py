"""Where a spec may keep files: bucket URIs of a scheme some provider reads, or local paths.

``storage.root``, the data channels and each provider section's ``storage_root`` are
checked here: the scheme must be one of those the caller allows (every installed
provider's for ``storage.root``, the provider's own for its section's ``storage_root``),
the bucket must be one its store can have (``cloudtrain.buckets``), and no path may
climb with ``..``. Which schemes exist is the spec's to say (``cloudtrain.installed``):
this module knows URIs, not providers.

Example:
>>> check_storage_root("gs://bucket/churn/", ("gs://", "s3://"))
'gs://bucket/churn'
>>> scheme_of("s3://bucket/key"), scheme_of("./outputs")
('s3://', None)
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic_core import PydanticCustomError

from cloudtrain import buckets
from cloudtrain.messages import CONTROL, quote


def scheme_of(value: str) -> str | None:
    """``value``'s scheme with its ``://`` (``"gs://"``); None for a local path."""
    return value.split("://", 1)[0] + "://" if "://" in value else None


def check_storage_root(value: str, schemes: Sequence[str], *, own: bool = False) -> str:
    """A bucket URI of one of ``schemes`` or a local path (``check_location``); trailing '/' dropped."""
    check_location(value, schemes, own=own)
    return value.rstrip("/") if len(value) > 1 else value


def check_location(value: str, schemes: Sequence[str], *, own: bool = False) -> str:
    """A bucket URI of one of ``schemes`` that its store can have (``cloudtrain.buckets``), or a local path.

    ``own``: ``schemes`` are one provider's, for its own section's field, and the error
    names only them; else they are every installed provider's, and it offers a local
    path too. Returns ``value`` as written.
    """
    if not value.strip():
        raise PydanticCustomError(
            "storage_root",
            "must not be empty; use gs://BUCKET/path, s3://BUCKET/path or a local path like ./outputs",
        )
    if CONTROL.search(value):
        raise PydanticCustomError(
            "storage_root",
            "{value} holds a control character (newline, tab, NUL); remove it",
            {"value": quote(value)},
        )
    scheme = scheme_of(value)
    if scheme is None:
        return value
    if scheme not in schemes:
        raise PydanticCustomError(
            "storage_root",
            "{value} uses an unsupported scheme; use {schemes}",
            {
                "value": quote(value),
                "schemes": " or ".join(f"{s}BUCKET/path" for s in schemes)
                if own
                else ", ".join(schemes) + " or a local path",
            },
        )
    problem = buckets.uri_problem(value)
    if problem:
        raise PydanticCustomError(
            "storage_root", "{value} {problem}", {"value": quote(value), "problem": problem}
        )
    if ".." in value.split("://", 1)[1].split("/"):
        raise PydanticCustomError(
            "storage_root",
            "{value} has a '..' segment, which object stores keep as a literal name; "
            "write the path without '..'",
            {"value": quote(value)},
        )
    return value


def sibling(uri: str, name: str) -> str:
    """The file ``name`` beside ``uri``, in its folder or, after ``#``, its archive.

    Example:
    >>> sibling("s3://b/job/output/output.tar.gz#cloudtrain-result.json", "cloudtrain-bench.json")
    's3://b/job/output/output.tar.gz#cloudtrain-bench.json'
    >>> sibling("gs://b/job/cloudtrain-result.json", "cloudtrain-bench.json")
    'gs://b/job/cloudtrain-bench.json'
    """
    cut = max(uri.rfind("/"), uri.rfind("#"))
    return f"{uri[: cut + 1]}{name}"
