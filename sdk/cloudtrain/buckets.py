"""Bucket URIs: whether a ``gs://`` or ``s3://`` URI names a bucket its service can have.

Each object store states its own naming rule (length, characters, reserved prefixes
and suffixes, no IP addresses); the rules are rows of ``catalog/bucket_rules.csv``
with their sources, read here. A scheme without a row (a third-party provider's) is
held to the shape every store shares: 3-63 lowercase letters, digits, '.', '_' and
'-', starting and ending with a letter or digit.

Example:
>>> uri_problem("gs://192.168.5.4/data").split(";")[0]
"names the bucket '192.168.5.4', which is not a valid Cloud Storage bucket name"
>>> uri_problem("s3://my-bucket/data") is None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cloudtrain.messages import quote

# The bucket, then an optional path without whitespace or control characters.
_URI = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<bucket>[^/]*)(?P<path>/.*)?", re.DOTALL)
_PATH = re.compile(r"(/[^\s\x00-\x1f\x7f]*)?")
_ANY_STORE = re.compile(r"[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]")
_ANY_STORE_RULE = (
    "3-63 lowercase letters, digits, '.', '_' and '-', starting and ending with a letter or digit"
)


@dataclass(frozen=True)
class BucketRule:
    """One object store's bucket naming rule: a row of ``bucket_rules.csv``."""

    scheme: str
    service: str
    pattern: str
    rule: str
    source: str


def rules() -> dict[str, BucketRule]:
    """Every scheme's naming rule, by scheme (``gs://``)."""
    from cloudtrain import catalog

    return {row["scheme"]: BucketRule(**row) for row in catalog.rows("bucket_rules.csv")}


def uri_problem(uri: str) -> str | None:
    """What is wrong with the bucket URI ``uri`` (its scheme already known), in words; None if nothing.

    The words follow the quoted URI in a message and end with the fix.
    """
    found = _URI.fullmatch(uri)
    assert found is not None, "the caller checked the scheme"
    scheme, bucket, path = found["scheme"], found["bucket"], found["path"] or ""
    rule = rules().get(scheme)
    if not bucket:
        return f"names no bucket; use {scheme}BUCKET/path"
    pattern, service, words = (
        (rule.pattern, f"{rule.service} ", rule.rule) if rule else (_ANY_STORE.pattern, "", _ANY_STORE_RULE)
    )
    if not re.fullmatch(pattern, bucket):
        return f"names the bucket {quote(bucket)}, which is not a valid {service}bucket name; use {words}"
    if not _PATH.fullmatch(path):
        return "is not a valid bucket URI: its path holds whitespace or a control character; remove them"
    return None
