"""Upload a code bundle to Cloud Storage once: its name is its content hash.

``upload_once`` skips the upload when the object already exists, so resubmitting an
unchanged project sends nothing (``cloudtrain.provider.transfer``, which also reports
the upload's progress). The storage client comes from ``clients``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudtrain.errors import ProviderError
from cloudtrain.provider import transfer
from cloudtrain.providers.vertex.clients import STORAGE_API, ApiCall, with_retries

if TYPE_CHECKING:
    from cloudtrain.progress import Advance, OnProgress


def split_uri(uri: str) -> tuple[str, str]:
    """``gs://bucket/a/b`` -> ``("bucket", "a/b")``.

    Example:
    >>> split_uri("gs://my-bucket/code/abc.tar.gz")
    ('my-bucket', 'code/abc.tar.gz')
    """
    bucket, _, name = uri.removeprefix("gs://").partition("/")
    if not uri.startswith("gs://") or not bucket or not name:
        raise ProviderError(f"{uri!r} is not a Cloud Storage object URI; expected gs://BUCKET/PATH.")
    return bucket, name


def upload_once(
    path: Path,
    uri: str,
    storage_client: Any,
    *,
    sleep: Callable[[float], None],
    progress: OnProgress | None = None,
) -> bool:
    """Upload the file at ``path`` to ``uri`` unless an object of that name exists.

    Args:
        path: the local file (a content-addressed bundle).
        uri: ``gs://bucket/name`` to upload to.
        storage_client: a ``google.cloud.storage.Client``.
        sleep: how to wait between retries of transient errors.
        progress: called with the upload's ``cloudtrain.Progress``; None reports nothing.

    Returns:
        True if the file was uploaded, False if it was already there.
    """
    bucket, name = split_uri(uri)
    blob = storage_client.bucket(bucket).blob(name)
    check = ApiCall(f"check {uri}", "objects.get", STORAGE_API, resource=f"gs://{bucket}")
    send = ApiCall(f"upload the code to {uri}", "objects.insert", STORAGE_API, resource=f"gs://{bucket}")
    return transfer.upload_once(
        # retry=None: with_retries retries, waiting through ``sleep``, not google-cloud-storage.
        exists=lambda: with_retries(lambda: blob.exists(retry=None), check, sleep=sleep),
        upload=lambda advance: with_retries(lambda: _upload(blob, path, advance), send, sleep=sleep),
        name=path.name,
        size=path.stat().st_size,
        progress=progress,
    )


def _upload(blob: Any, path: Path, advance: Advance) -> None:
    with path.open("rb") as raw:
        reader = transfer.ProgressReader(raw, advance)
        blob.upload_from_file(reader, size=path.stat().st_size, content_type="application/gzip")
