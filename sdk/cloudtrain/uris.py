"""Where a spec may keep files: bucket URIs of an installed provider's scheme, or local paths.

``storage.root``, the data channels and each provider section's ``storage_root`` are
checked here: the scheme must be one some installed provider reads and writes (a
provider's own ``storage_root`` takes only that provider's), the bucket must be one its
store can have (``cloudtrain.buckets``), and no path may climb with ``..``.

Example:
>>> check_storage_root("gs://bucket/churn/")
'gs://bucket/churn'
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import field_validator
from pydantic_core import PydanticCustomError

from cloudtrain import buckets
from cloudtrain.messages import quote
from cloudtrain.providers import installed
from cloudtrain.sections import CONTROL, ProviderSection


def check_storage_root(value: str) -> str:
    """A bucket URI of a provider's scheme (gs://, s3://, ...) or a local path; trailing '/' dropped."""
    check_location(value)
    return value.rstrip("/") if len(value) > 1 else value


def check_location(value: str, *, schemes: tuple[str, ...] = ()) -> str:
    """A bucket URI its store can have (``cloudtrain.buckets``), or a local path; as written.

    ``schemes``: the only schemes the field takes (a provider's own section), if not every
    installed provider's.
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
    if "://" not in value:
        return value
    scheme = value.split("://", 1)[0] + "://"
    allowed = schemes or installed.schemes(plugins=False)
    if not schemes and scheme not in allowed:
        allowed = installed.schemes()
    if scheme not in allowed:
        raise PydanticCustomError(
            "storage_root",
            "{value} uses an unsupported scheme; use {schemes}",
            {
                "value": quote(value),
                "schemes": " or ".join(f"{s}BUCKET/path" for s in allowed)
                if schemes
                else ", ".join(allowed) + " or a local path",
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


class StoredSection(ProviderSection):
    """A provider section with a ``storage_root`` (a root used on that provider instead of
    ``storage.root``), which takes the provider's own ``schemes`` only."""

    schemes: ClassVar[tuple[str, ...]] = ()

    @field_validator("storage_root", check_fields=False)
    @classmethod
    def _bucket_uri(cls, value: str | None) -> str | None:
        if value is None:
            return None
        check_location(value, schemes=cls.schemes)
        return check_storage_root(value)
