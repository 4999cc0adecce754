"""A run's files on this machine: a folder, or an emulated job's stand-in bucket (``cloudtrain.provider.backups``).

An emulated Vertex or SageMaker job keeps its run under ``$CLOUDTRAIN_LOCAL_HOME/buckets``
(``gcs/BUCKET/...``, ``s3/BUCKET/...``), which stand in for the cloud's buckets, so a run
stopped in an emulated Vertex region can resume in an emulated SageMaker one through the
same copy that moves a real one. A local ``storage.root`` is its folder.

A written file goes to a hidden temporary name beside its target and is renamed once
whole, so a copy killed half-way leaves no file under a real name.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import shutil
from pathlib import Path

from cloudtrain.provider.backups import MissingObject, Reader, Source, StoredObject
from cloudtrain.provider.emulation import bucket_path
from cloudtrain.provider.failures import CallError, Failure, Reason

PARTIAL_PREFIX = ".cloudtrain-partial-"
CHUNK = 8 * 1024 * 1024


def folder_of(uri: str, home: Path) -> Path:
    """Where ``uri`` lives on this machine: in the stand-in buckets under ``home``, or the path itself.

    Example:
    >>> str(folder_of("s3://b/root/runs/r1", Path("/h")))
    '/h/buckets/s3/b/root/runs/r1'
    """
    return Path(bucket_path(uri).replace("<buckets>", str(home / "buckets")))


class FolderStore:
    """The files under one folder, by path relative to it (``RunStore``)."""

    def __init__(self, folder: Path, uri: str) -> None:
        self.folder = folder
        self._uri = uri

    @property
    def uri(self) -> str:
        return self._uri

    def __repr__(self) -> str:
        return f"FolderStore(uri={self._uri!r}, folder={str(self.folder)!r})"

    def list(self, prefix: str = "") -> list[StoredObject]:
        if not self.folder.is_dir():
            return []
        found = []
        for path in self.folder.rglob("*"):
            key = path.relative_to(self.folder).as_posix()
            if key.startswith(prefix) and path.is_file() and not path.name.startswith(PARTIAL_PREFIX):
                found.append(StoredObject(key, path.stat().st_size))
        return sorted(found, key=lambda stored: stored.key)

    def open(self, key: str) -> Reader:
        path = self._path(key)
        try:
            return path.open("rb")
        except FileNotFoundError:
            raise MissingObject(f"{self._uri}/{key}: no such file.") from None
        except OSError as error:
            raise _refused("read", path, error) from error

    def write(self, key: str, source: Source, *, size: int, sha256: str) -> None:
        path = self._path(key)
        partial = path.with_name(f"{PARTIAL_PREFIX}{secrets.token_hex(4)}-{path.name}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with partial.open("wb") as target:
                shutil.copyfileobj(source, target, CHUNK)
                target.flush()
                os.fsync(target.fileno())
            partial.replace(path)
        except OSError as error:
            partial.unlink(missing_ok=True)
            raise _refused("write", path, error) from error
        finally:
            partial.unlink(missing_ok=True)

    def digest(self, key: str) -> str | None:
        """The sha256 of the file: read here, where reading costs nothing."""
        path = self._path(key)
        if not path.is_file():
            return None
        digest = hashlib.sha256()
        with path.open("rb") as file:
            while chunk := file.read(CHUNK):
                digest.update(chunk)
        return digest.hexdigest()

    def delete(self, key: str) -> None:
        path = self._path(key)
        try:
            path.unlink(missing_ok=True)
        except OSError as error:
            raise _refused("delete", path, error) from error

    def _path(self, key: str) -> Path:
        """``folder / key``, refusing a key that would leave the folder."""
        path = self.folder / key
        if not key or key.startswith("/") or ".." in Path(key).parts or "\x00" in key:
            raise MissingObject(f"{key!r} is not a file under {self._uri}.")
        return path


def _refused(action: str, path: Path, error: OSError) -> CallError:
    """The error for a file this user cannot ``action``: permission, or the disk."""
    denied = error.errno in (errno.EACCES, errno.EPERM, errno.EROFS)
    reason = Reason.PERMISSION if denied else Reason.INTERNAL
    fix = "Make it writable by this user, or choose another storage root." if denied else "Check the disk."
    message = f"Cannot {action} {path}: {error.strerror or error}. {fix}"
    return CallError(message, Failure(reason, message, errno.errorcode.get(error.errno or 0, "")))
