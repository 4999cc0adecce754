"""A run's files in Cloud Storage, streamed through google-cloud-storage (``cloudtrain.provider.backups.RunStore``).

Reads are ``Blob.open("rb")`` readers, which fetch ranged chunks of ``CHUNK_BYTES`` as
they are read. Writes are ``Blob.upload_from_file`` with the size given: above 8 MiB a
resumable upload sent ``CHUNK_BYTES`` at a time, so memory stays bounded whatever the
size, and the object exists only once the upload is finalized
(https://cloud.google.com/storage/docs/resumable-uploads). google-cloud-storage
computes a CRC32C of what it sends and compares it with Cloud Storage's own
(``checksum="auto"``, google-cloud-storage 3.17 ``Blob.upload_from_file``). The sha256
the copy checked is kept in the object's custom metadata, which ``digest`` reads back.
Calls are retried with the backend's own schedule (``clients.with_retries``), except
the streamed read and write themselves, which a copy resumes instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cloudtrain.provider.backups import MissingObject, Reader, Source, StoredObject
from cloudtrain.provider.calls import translated
from cloudtrain.providers.vertex.clients import STORAGE_API, ApiCall, translate, with_retries
from cloudtrain.providers.vertex.upload import split_uri

if TYPE_CHECKING:
    from cloudtrain.providers.vertex.clients import VertexClients

# A multiple of 256 KiB, as resumable uploads require (google-cloud-storage Blob.chunk_size).
CHUNK_BYTES = 8 * 1024 * 1024


class GcsStore:
    """The objects under one Cloud Storage prefix (``gs://bucket/root/runs/r1``), by key relative to it."""

    def __init__(self, google: VertexClients, uri: str) -> None:
        self.google = google
        self._uri = uri.rstrip("/")
        self.bucket_name, prefix = split_uri(self._uri + "/x")
        self.prefix = prefix[:-1]

    @property
    def uri(self) -> str:
        return self._uri

    def __repr__(self) -> str:
        return f"GcsStore(uri={self._uri!r})"

    def _bucket(self) -> Any:
        return self.google.storage_client(None).bucket(self.bucket_name)

    def _call(self, action: str, method: str) -> ApiCall:
        return ApiCall(action, method, STORAGE_API, resource=f"gs://{self.bucket_name}")

    def list(self, prefix: str = "") -> list[StoredObject]:
        call = self._call(f"list {self._uri}/{prefix}", "objects.list")

        def listed() -> list[StoredObject]:
            blobs = self.google.storage_client(None).list_blobs(
                self.bucket_name, prefix=self.prefix + prefix, retry=None
            )
            return [StoredObject(blob.name[len(self.prefix) :], int(blob.size or 0)) for blob in blobs]

        return sorted(with_retries(listed, call, sleep=self.google.sleep), key=lambda stored: stored.key)

    def open(self, key: str) -> Reader:
        call = self._call(f"read {self._uri}/{key}", "objects.get")
        blob = self._bucket().blob(self.prefix + key)
        if not with_retries(lambda: blob.exists(retry=None), call, sleep=self.google.sleep):
            raise MissingObject(f"{self._uri}/{key}: no such object.")
        with translated(lambda exc: translate(exc, call)):
            reader: Reader = blob.open("rb", chunk_size=CHUNK_BYTES, retry=None)
        return _Translating(reader, call)

    def write(self, key: str, source: Source, *, size: int, sha256: str) -> None:
        call = self._call(f"write {self._uri}/{key}", "objects.insert")
        blob = self._bucket().blob(self.prefix + key, chunk_size=CHUNK_BYTES)
        blob.metadata = {"sha256": sha256}
        with translated(lambda exc: translate(exc, call)):
            blob.upload_from_file(source, size=size, checksum="auto", retry=None)

    def digest(self, key: str) -> str | None:
        call = self._call(f"read {self._uri}/{key}", "objects.get")
        blob = with_retries(
            lambda: self._bucket().get_blob(self.prefix + key, retry=None), call, sleep=self.google.sleep
        )
        found = (blob.metadata or {}).get("sha256") if blob is not None else None
        return str(found) if found else None

    def delete(self, key: str) -> None:
        call = self._call(f"delete {self._uri}/{key}", "objects.delete")
        blob = self._bucket().blob(self.prefix + key)
        if with_retries(lambda: blob.exists(retry=None), call, sleep=self.google.sleep):
            with_retries(lambda: blob.delete(retry=None), call, sleep=self.google.sleep)


class _Translating:
    """A blob reader whose errors read as the backend's (``GoogleCallError``)."""

    def __init__(self, reader: Reader, call: ApiCall) -> None:
        self._reader, self._call = reader, call

    def read(self, size: int = -1) -> bytes:
        with translated(lambda exc: translate(exc, self._call)):
            return self._reader.read(size)

    def close(self) -> None:
        self._reader.close()

    def __enter__(self) -> _Translating:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
