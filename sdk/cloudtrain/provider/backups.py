"""A run's files in its provider's storage, for moving its backups: the optional ``StoresBackups``.

A run keeps everything under its prefix (``ROOT/runs/<run_id>/``, ``cloudtrain.planning.storage_paths``):
its backups under ``checkpoints/`` and its record (``lineage.json``). To resume a run on
another provider or in another region, cloudtrain reads the backup where the run left it
and writes it where the next attempt looks (``cloudtrain.resume``). A provider that can do
that opens a ``RunStore``: the objects under one run's prefix, by key relative to it,
through the provider's own storage client (google-cloud-storage, boto3's S3). Nothing
above the providers names a bucket API.

A ``RunStore`` streams: ``open`` gives a reader of one object, ``write`` takes one, so a
backup of any size moves through a bounded buffer. ``write`` makes an object appear only
when it is whole (an S3 or Cloud Storage upload is visible once complete; a folder
store renames a finished temporary file), and the store checks the bytes it received
with its own checksum. Each written object carries the sha256 of its bytes where the
store can keep it (object metadata), which ``digest`` reads back, so a copy cut short can
skip what already arrived whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from cloudtrain.errors import ProviderError

__all__ = ["MissingObject", "Reader", "RunStore", "Source", "StoredObject", "StoresBackups"]


class MissingObject(ProviderError):
    """The object asked for is not there."""


@dataclass(frozen=True)
class StoredObject:
    """One object under a run's prefix: its key relative to the prefix and its size in bytes."""

    key: str
    size: int


class Reader(Protocol):
    """A stream of bytes: an object being read, or the bytes a write takes.

    ``tell`` is how many bytes were read so far (Cloud Storage's resumable upload asks it).
    """

    def read(self, size: int = -1, /) -> bytes: ...

    def close(self) -> None: ...


class Source(Reader, Protocol):
    """What ``RunStore.write`` reads from: a ``Reader`` that knows how far it has been read."""

    def tell(self) -> int: ...


class RunStore(Protocol):
    """The objects under one run's prefix in one bucket (or folder), by key relative to it.

    Every method raises ``cloudtrain.provider.failures.CallError`` (its ``failure``'s reason
    says permission, configuration, internal...) when the storage refuses.
    """

    @property
    def uri(self) -> str:
        """The prefix, as users write it (``gs://b/root/runs/r1``, ``s3://...``, a folder)."""
        ...

    def list(self, prefix: str = "") -> Sequence[StoredObject]:
        """Every object whose key starts with ``prefix``, at any depth, sorted by key."""
        ...

    def open(self, key: str) -> Reader:
        """A reader of the object's bytes, streamed (close it when done).

        Raises:
            MissingObject: no object has that key.
        """
        ...

    def write(self, key: str, source: Source, *, size: int, sha256: str) -> None:
        """Store ``size`` bytes read from ``source`` as ``key``, visible only once whole.

        ``sha256`` is what the caller expects of the bytes; it is kept with the object
        where the store can (``digest``). The caller checks it as the bytes pass.
        """
        ...

    def digest(self, key: str) -> str | None:
        """The sha256 a finished ``write`` kept with ``key``; None when it kept none or there is no such object."""
        ...

    def delete(self, key: str) -> None:
        """Delete the object (nothing happens when there is none)."""
        ...


@runtime_checkable
class StoresBackups(Protocol):
    """A provider that can read and write the files under a run's prefix. Optional.

    Without it a run cannot be resumed from, or moved to, that provider's storage: the
    error says so before anything is copied.
    """

    def run_store(self, uri: str, *, region: str, clients: Any = None) -> RunStore:
        """The objects under ``uri``, a run's prefix on this provider's storage (``Plan.storage.run``).

        ``region`` is where the run's jobs ran (``Plan.region``), for clients bound to one;
        ``clients`` are the provider's clients to use instead of the defaults (tests).
        Opening contacts nothing; the first call does.
        """
        ...
