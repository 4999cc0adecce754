"""Copy a run's newest verified backup from one store to another: streamed, checked, resumable.

``copy_newest`` takes the run's backups in the source newest first (``found.candidates``)
and copies the first that verifies. Each file streams from the source's reader into
the destination's writer through ``Checked``, which hashes the bytes as they pass,
counts them and reports them to ``progress``; memory holds one chunk of each store's
transfer, whatever the backup's size. A file whose bytes do not match the manifest
(its sha256, its size) is deleted at the destination, the backup is passed over with
the reason, and the one before it is copied instead.

What makes the copy safe to kill at any moment:

- the source is only read, never written or deleted;
- the manifest is written at the destination last, after every file arrived checked,
  and a backup without its manifest is never restored (``cloudtrain_runtime.manifests``),
  so a copy cut short leaves nothing that is taken for a backup;
- every file written carries the sha256 it was checked against (``RunStore.digest``), so
  the same command run again skips the files that already arrived whole: it resumes.
"""

from __future__ import annotations

import hashlib
import io
import json
import time
from dataclasses import dataclass

from cloudtrain.errors import ProviderError
from cloudtrain.progress import Advance, OnProgress, reporter
from cloudtrain.provider.backups import MissingObject, Reader, RunStore
from cloudtrain.provider.failures import CallError
from cloudtrain.resume import found
from cloudtrain_runtime import manifests

# The stamp and the history are a few kB; anything larger is not theirs.
MAX_SIDE_FILE_BYTES = 16 * 1024 * 1024


class CopyRefused(ProviderError):
    """A source file whose bytes are not what its manifest says; the message says which and how."""


@dataclass(frozen=True)
class Copied:
    """A backup copied and committed at the destination.

    Attributes:
        source: the backup's folder in the source store.
        destination: its folder in the destination store.
        manifest: what it holds (epoch, step, files, who wrote it).
        size: the backup's bytes; ``sent`` of them crossed now (the rest had arrived before).
        seconds: how long the copy took.
        passed: newer backups passed over, each with why.
    """

    source: str
    destination: str
    manifest: manifests.Manifest
    size: int
    sent: int
    seconds: float
    passed: tuple[str, ...]


class Checked:
    """A reader that passes on exactly ``size`` bytes of ``reader``, hashing and counting them.

    ``tell`` is how far it has been read (Cloud Storage's resumable upload asks), and
    each chunk read is reported to ``advance``.
    """

    def __init__(self, reader: Reader, size: int, advance: Advance) -> None:
        self._reader, self._left, self._advance = reader, size, advance
        self._hash = hashlib.sha256()
        self._read = 0

    def read(self, size: int = -1, /) -> bytes:
        want = self._left if size is None or size < 0 else min(size, self._left)
        data = self._reader.read(want) if want else b""
        self._hash.update(data)
        self._read += len(data)
        self._left -= len(data)
        if data:
            self._advance(len(data))
        return data

    def tell(self) -> int:
        return self._read

    def close(self) -> None:
        self._reader.close()

    def problem(self, entry: manifests.Entry) -> str | None:
        """Why the bytes read are not ``entry``'s (short, longer, another digest); None: they are."""
        if self._left:
            return f"{entry.name} ended after {self._read} of the {entry.size} bytes its manifest lists"
        if self._reader.read(1):
            return f"{entry.name} has more than the {entry.size} bytes its manifest lists"
        if self._hash.hexdigest() != entry.sha256:
            return f"{entry.name}'s sha256 differs from its manifest (the file changed after it was written)"
        return None


def copy_newest(run: str, source: RunStore, destination: RunStore, progress: OnProgress | None) -> Copied:
    """Copy run ``run``'s newest backup that verifies from ``source`` to ``destination`` (both the run's prefix).

    Raises:
        ProviderError: the source has no backup of the run, or none that verifies; the
            destination holds another run's backup; or a store refused (``CallError``,
            its reason kept). Nothing at the destination is then taken as a backup, and
            the source is as it was.
    """
    _refuse_foreign(run, destination)
    passed: list[found.Candidate] = []
    for candidate in found.candidates(source, run):
        if candidate.usable:
            try:
                return _copy(candidate, source, destination, progress, tuple(passed))
            except CopyRefused as refused:
                _discard(candidate, destination)
                candidate = found.Candidate(candidate.slot, candidate.manifest, candidate.raw, str(refused))
        passed.append(candidate)
    if not passed:
        raise ProviderError(
            f"No backup of run {run!r} under {source.uri}/{found.BACKUP}: nothing to resume from."
        )
    raise ProviderError(
        f"No backup of run {run!r} under {source.uri}/{found.SLOTS} verifies ({found.explain(passed)}), "
        "so none was copied; the source is unchanged. Restore the files from a copy, or start the run "
        "anew (cloudtrain submit --new)."
    )


def _refuse_foreign(run: str, destination: RunStore) -> None:
    """Refuse a destination that already holds another run's stamped backup: it is never overwritten."""
    try:
        stamp = json.loads(found.read_small(destination, found.STAMP, MAX_SIDE_FILE_BYTES))
    except MissingObject:
        return
    except ValueError:
        stamp = {}
    if not isinstance(stamp, dict) or stamp.get("run") != run:
        whose = (
            f"run {stamp.get('run')!r}" if isinstance(stamp, dict) and stamp.get("run") else "an unknown run"
        )
        raise ProviderError(
            f"{destination.uri}/{found.BACKUP} holds {whose}'s backup, not run {run!r}'s, so nothing was "
            "copied there. Resume into the run's own prefix (the same --run-id), or start a new run."
        )


def _copy(
    candidate: found.Candidate,
    source: RunStore,
    destination: RunStore,
    progress: OnProgress | None,
    passed: tuple[found.Candidate, ...],
) -> Copied:
    manifest = candidate.manifest
    assert manifest is not None  # only a usable candidate is copied
    started = time.monotonic()
    advance = reporter(progress, step="copy", name=candidate.slot, total=manifest.total_bytes)
    sent = 0
    try:
        for entry in manifest.files:
            sent += _copy_file(candidate.key(entry.name), entry, source, destination, advance)
        for key in (found.STAMP, found.HISTORY):
            _copy_side_file(key, source, destination)
        write_small(destination, candidate.key(manifests.MANIFEST_FILE), candidate.raw)
    except CallError as error:
        raise CallError(
            f"Copying run {manifest.run!r}'s backup {candidate.slot} from {source.uri} to {destination.uri} "
            f"stopped: {error} Nothing at the destination is taken as a backup until the copy ends, and the "
            "source is unchanged: fix this and run the same command again, and the copy resumes.",
            error.failure,
        ) from error
    return Copied(
        source=f"{source.uri}/{found.SLOTS}{candidate.slot}",
        destination=f"{destination.uri}/{found.SLOTS}{candidate.slot}",
        manifest=manifest,
        size=manifest.total_bytes,
        sent=sent,
        seconds=time.monotonic() - started,
        passed=tuple(f"{c.slot}: {c.problem}" for c in passed),
    )


def _copy_file(
    key: str, entry: manifests.Entry, source: RunStore, destination: RunStore, advance: Advance
) -> int:
    """Copy one file of the backup, or skip it if it already arrived whole; the bytes sent now."""
    if destination.digest(key) == entry.sha256:
        advance(entry.size)
        return 0
    checked = Checked(source.open(key), entry.size, advance)
    try:
        destination.write(key, checked, size=entry.size, sha256=entry.sha256)
        wrong = checked.problem(entry)
    finally:
        checked.close()
    if wrong:
        destination.delete(key)
        raise CopyRefused(wrong)
    return entry.size


def _copy_side_file(key: str, source: RunStore, destination: RunStore) -> None:
    """Copy the stamp or the history beside the backups (small; the runtime checks the stamp itself)."""
    try:
        data = found.read_small(source, key, MAX_SIDE_FILE_BYTES)
    except MissingObject:
        if key == found.STAMP:
            raise CopyRefused(
                f"{found.STAMP} is missing beside it, so no run would take it as its own"
            ) from None
        return
    write_small(destination, key, data)


def write_small(destination: RunStore, key: str, data: bytes) -> None:
    """Write ``data`` (a manifest, the stamp, the history) as ``key``."""
    source = Checked(io.BytesIO(data), len(data), _nothing)
    destination.write(key, source, size=len(data), sha256=hashlib.sha256(data).hexdigest())


def _discard(candidate: found.Candidate, destination: RunStore) -> None:
    """Delete what arrived of a backup passed over: without its manifest it is not one, but it is no use either."""
    assert candidate.manifest is not None  # only a usable candidate was copied
    for entry in candidate.manifest.files:
        destination.delete(candidate.key(entry.name))


def _nothing(amount: int) -> None:
    """The ``Advance`` of a small file: the progress counts the backup's own bytes."""
