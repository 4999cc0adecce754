"""Read one file a Vertex AI custom job wrote to Cloud Storage, bounded in size.

The runtime writes its result and bench files straight to ``gs://`` (``Job.outputs``
names them), so reading one back is a single ranged GET: google-cloud-storage's
``Blob.download_as_bytes(end=...)`` (``end`` is inclusive,
https://cloud.google.com/python/docs/reference/storage/latest/google.cloud.storage.blob.Blob#google_cloud_storage_blob_Blob_download_as_bytes),
retried like every other Google call here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cloudtrain.errors import ProviderError
from cloudtrain.providers.vertex.clients import (
    STORAGE_API,
    ApiCall,
    GoogleCallError,
    VertexClients,
    with_retries,
)
from cloudtrain.providers.vertex.settings import VertexSettings
from cloudtrain.providers.vertex.upload import split_uri

if TYPE_CHECKING:
    from cloudtrain.planning import Plan

MAX_BYTES = 16 * 1024 * 1024
"""The largest file read back: cloudtrain's own result and bench files are a few kB."""


def read_output(plan: Plan, uri: str, clients: VertexClients | None = None) -> bytes:
    """The bytes of ``gs://bucket/name``, refusing more than ``MAX_BYTES``, with the plan's project.

    Raises:
        ProviderError: nothing is there, or it is larger than ``MAX_BYTES``.
        GoogleCallError: the read failed otherwise (permissions, a missing bucket).
    """
    return read_object(uri, VertexSettings.of(plan.spec).project, clients)


def read_object(uri: str, project: str | None, clients: VertexClients | None = None) -> bytes:
    """The bytes of ``gs://bucket/name``, refusing more than ``MAX_BYTES``; ``project`` bills the request.

    Raises:
        ProviderError: nothing is there, or it is larger than ``MAX_BYTES``.
        GoogleCallError: the read failed otherwise (permissions, a missing bucket).
    """
    google = clients or VertexClients()
    bucket, name = split_uri(uri)
    blob = google.storage_client(project).bucket(bucket).blob(name)
    call = ApiCall(
        f"read {uri}", "objects.get", STORAGE_API, project=project or "", resource=f"gs://{bucket}"
    )
    try:
        # retry=None: with_retries retries, waiting through ``sleep``.
        data: bytes = with_retries(
            lambda: blob.download_as_bytes(end=MAX_BYTES, retry=None), call, sleep=google.sleep
        )
    except GoogleCallError as error:
        if error.code != "NOT_FOUND":
            raise
        raise ProviderError(f"{uri}: the job wrote no such file.") from error
    if len(data) > MAX_BYTES:
        raise ProviderError(f"{uri}: more than the {MAX_BYTES} bytes read back.")
    return data
