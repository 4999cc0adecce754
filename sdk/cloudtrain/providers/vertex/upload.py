"""Upload a code bundle to Cloud Storage once: its name is its content hash.

``upload_once`` skips the upload when the object already exists, so resubmitting an
unchanged project sends nothing. Large uploads show a progress bar on stderr.
google-cloud-storage is imported only here, when a bundle is uploaded; it honours
``STORAGE_EMULATOR_HOST`` (anonymous credentials) for tests.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from cloudtrain.errors import CredentialsError, ProviderError, require
from cloudtrain.providers.vertex.clients import ADC_FIX, with_retries

# Below this size an upload takes a moment and a progress bar would only flicker.
PROGRESS_MIN_BYTES = 8 * 1024 * 1024


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


def client(project: str | None) -> Any:
    """A ``google.cloud.storage.Client`` with Application Default Credentials.

    Raises:
        CredentialsError: no credentials are set up.
    """
    require("google.cloud.storage", "vertex")
    from google.auth import exceptions as auth_exceptions
    from google.cloud import storage  # type: ignore[attr-defined]

    try:
        return storage.Client(project=project)
    except auth_exceptions.DefaultCredentialsError as exc:
        raise CredentialsError(ADC_FIX) from exc


def upload_once(
    path: Path,
    uri: str,
    storage_client: Any,
    *,
    sleep: Callable[[float], None],
    progress_min_bytes: int = PROGRESS_MIN_BYTES,
) -> bool:
    """Upload the file at ``path`` to ``uri`` unless an object of that name exists.

    Args:
        path: the local file (a content-addressed bundle).
        uri: ``gs://bucket/name`` to upload to.
        storage_client: a ``google.cloud.storage.Client``.
        sleep: how to wait between retries of transient errors.
        progress_min_bytes: show a progress bar on stderr from this size up.

    Returns:
        True if the file was uploaded, False if it was already there.
    """
    bucket, name = split_uri(uri)
    blob = storage_client.bucket(bucket).blob(name)
    if with_retries(blob.exists, action=f"check {uri}", sleep=sleep):
        return False
    size = path.stat().st_size
    with_retries(
        lambda: _upload(blob, path, size, show_progress=size >= progress_min_bytes),
        action=f"upload the code to {uri}",
        sleep=sleep,
        fixes={"NotFound": f"Create the bucket first: gcloud storage buckets create gs://{bucket}"},
    )
    return True


def _upload(blob: Any, path: Path, size: int, *, show_progress: bool) -> None:
    if not show_progress:
        blob.upload_from_filename(str(path), content_type="application/gzip")
        return
    from rich.console import Console
    from rich.progress import Progress

    progress = Progress(console=Console(stderr=True), transient=True)
    with progress, path.open("rb") as raw:
        reader = progress.wrap_file(raw, total=size, description=f"Uploading {path.name}")
        blob.upload_from_file(reader, size=size, content_type="application/gzip")
