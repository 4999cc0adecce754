"""Upload a code bundle to S3 once: content-addressed names make "already there" mean "same bytes".

The bundle's file name is the hash of its content (``bundle.py``), so an object with that
key and the bundle's size is the same bundle, and a re-submit of unchanged code uploads
nothing (``cloudtrain.provider.transfer``, which also reports the upload's
progress).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from cloudtrain.errors import SpecError
from cloudtrain.provider import transfer
from cloudtrain.providers.sagemaker.clients import AwsCallError

if TYPE_CHECKING:
    from cloudtrain.bundle import Bundle
    from cloudtrain.progress import Advance, OnProgress
    from cloudtrain.providers.sagemaker.clients import AwsClients

_S3_URI = re.compile(r"^s3://(?P<bucket>[^/]+)/(?P<key>.+)\Z")


def split_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/a/b`` -> ``("bucket", "a/b")``.

    Example:
    >>> split_uri("s3://my-bucket/code/3f2a.tar.gz")
    ('my-bucket', 'code/3f2a.tar.gz')
    """
    match = _S3_URI.match(uri)
    if not match:
        raise SpecError(f"{uri!r} is not an S3 object URI. Use s3://BUCKET/key.")
    return match["bucket"], match["key"]


def upload_bundle(aws: AwsClients, bundle: Bundle, uri: str, *, progress: OnProgress | None = None) -> bool:
    """Upload ``bundle`` to ``uri`` unless an object of the same size is already there.

    ``progress`` is called with the upload's ``cloudtrain.Progress``; None reports nothing.

    Returns:
        True if the bundle was uploaded, False if it was already in S3.

    Raises:
        AwsCallError: S3 refused the check or the upload (AccessDenied, NoSuchBucket, ...).
    """
    bucket, key = split_uri(uri)
    return transfer.upload_once(
        exists=lambda: _size_of(aws, bucket, key) == bundle.size,
        upload=lambda advance: _upload(aws, bundle, bucket, key, advance),
        name=bundle.name,
        size=bundle.size,
        progress=progress,
    )


def _upload(aws: AwsClients, bundle: Bundle, bucket: str, key: str, advance: Advance) -> None:
    extra = {"ContentType": "application/gzip", "Metadata": {"sha256": bundle.sha256}}
    try:
        aws.call(
            "s3",
            "upload_file",
            Filename=str(bundle.path),
            Bucket=bucket,
            Key=key,
            ExtraArgs=extra,
            Callback=advance,
        )
    except AwsCallError as exc:
        if "NoSuchBucket" not in str(exc):
            raise
        raise AwsCallError(
            f"S3 bucket {bucket!r} does not exist. Create it (aws s3 mb s3://{bucket}), "
            "or set sagemaker.storage_root to a bucket you own.",
            "NoSuchBucket",
        ) from exc


def _size_of(aws: AwsClients, bucket: str, key: str) -> int | None:
    """The object's size, or None when there is no such object."""
    try:
        return int(aws.call("s3", "head_object", Bucket=bucket, Key=key)["ContentLength"])
    except AwsCallError as exc:
        if exc.code in ("404", "NoSuchKey", "NotFound"):
            return None
        raise
