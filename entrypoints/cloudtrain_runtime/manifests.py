"""Verified backups: numbered folders, each committed by a manifest written last.

A torn newest backup is the usual way a resume goes wrong: a replica killed during the
write, a bucket sync that copied half a checkpoint (SageMaker syncs ``/opt/ml/checkpoints``
asynchronously, https://docs.aws.amazon.com/sagemaker/latest/dg/model-checkpoints.html;
Cloud Storage FUSE uploads a file when it is closed,
https://cloud.google.com/storage/docs/cloud-storage-fuse/semantics), or a lifecycle rule
that deleted one file. So each backup gets a folder of its own under the run's backup
folder, and its manifest (every file's name, size and sha256, the epoch, batch and
optimizer step, the run, the attempt, the provider and the time) is written last::

    checkpoints/verified/epoch-000002/latest.weights.h5
    checkpoints/verified/epoch-000002/training_metadata.json
    checkpoints/verified/epoch-000002/cloudtrain-manifest.json    <- written last

A folder without a manifest was never committed. Restore takes the newest folder whose
manifest verifies (every file there, of its size and digest, and of this run), says
which, and falls back to the one before; it never loads one that does not verify. The
chief keeps the two newest committed folders and deletes older ones after each commit.
The SDK reads the same manifests to find and move a run's backup between buckets
(``cloudtrain.provider.backups``): this module is the one definition of the format.

Example:
>>> slot_name(2, 0), slot_name(2, 50)
('epoch-000002', 'epoch-000002-batch-000050')
>>> parse('{"format": 1}')
Traceback (most recent call last):
...
cloudtrain_runtime.manifests.BadManifest: the manifest lacks run, epoch, batch, step, attempt, job, provider, created_at, files
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cloudtrain_runtime.errors import ConfigError

MANIFEST_FILE = "cloudtrain-manifest.json"
SLOTS_FOLDER = "verified"
FORMAT = 1
# The newest committed backup and the one before it: the fallback when the newest is torn.
KEEP = 2
CHUNK = 1024 * 1024
_FIELDS = ("run", "epoch", "batch", "step", "attempt", "job", "provider", "created_at", "files")


class BadManifest(ValueError):
    """A manifest that cannot be read or believed; the message says why."""


@dataclass(frozen=True)
class Entry:
    """One file of a backup: its name in the backup's folder, size in bytes and sha256 (hex)."""

    name: str
    size: int
    sha256: str


@dataclass(frozen=True)
class Origin:
    """Who writes a backup: the run, the provider's job, the attempt's number in the run, the provider."""

    run: str
    job: str | None
    attempt: int | None
    provider: str


@dataclass(frozen=True)
class Manifest:
    """What one committed backup holds, and where in training it was taken.

    ``epoch`` epochs and ``batch`` batches of the next were done; ``step`` is the
    optimizer's step count then.
    """

    run: str
    epoch: int
    batch: int
    step: int
    attempt: int | None
    job: str | None
    provider: str
    created_at: str
    files: tuple[Entry, ...]

    @property
    def slot(self) -> str:
        return slot_name(self.epoch, self.batch)

    @property
    def total_bytes(self) -> int:
        return sum(entry.size for entry in self.files)

    def to_json(self) -> str:
        return json.dumps({"format": FORMAT, **asdict(self)}, indent=2) + "\n"

    def describe(self) -> str:
        """``epoch 2 (step 64) of run r1, written by vertex job 123 at ...``: for log lines."""
        where = f"{self.provider} job {self.job}" if self.job else self.provider
        done = f"epoch {self.epoch}" + (f" batch {self.batch}" if self.batch else "")
        return f"{done} (step {self.step}) of run {self.run}, written by {where} at {self.created_at}"


def slot_name(epoch: int, batch: int) -> str:
    """The folder of the backup taken after ``epoch`` epochs and ``batch`` more batches; sorts in training order."""
    return f"epoch-{epoch:06d}" + (f"-batch-{batch:06d}" if batch else "")


def parse(text: str | bytes) -> Manifest:
    """The manifest in ``text``, checked field by field.

    Raises:
        BadManifest: not JSON, another format, a missing or mistyped field, or a file
            name that is not a plain name in the backup's folder.
    """
    try:
        raw = json.loads(text)
    except (ValueError, UnicodeDecodeError) as error:
        raise BadManifest(f"the manifest is not JSON ({error})") from None
    if not isinstance(raw, dict):
        raise BadManifest("the manifest is not a JSON object")
    missing = [name for name in _FIELDS if name not in raw]
    if missing:
        raise BadManifest(f"the manifest lacks {', '.join(missing)}")
    if raw.get("format") != FORMAT:
        raise BadManifest(f"the manifest's format is {raw.get('format')!r}, not {FORMAT}")
    files = raw["files"]
    if not isinstance(files, list) or not files:
        raise BadManifest("the manifest lists no files")
    entries = tuple(_entry(item) for item in files)
    if len({entry.name for entry in entries}) != len(entries):
        raise BadManifest("the manifest lists a file twice")
    numbers = {name: raw[name] for name in ("epoch", "batch", "step")}
    if not all(_count(value) for value in numbers.values()) or not _optional_count(raw["attempt"]):
        raise BadManifest("the manifest's epoch, batch, step or attempt is not a whole number >= 0")
    texts = (raw["run"], raw["provider"], raw["created_at"])
    if not all(isinstance(value, str) and value for value in texts) or not _optional_text(raw["job"]):
        raise BadManifest("the manifest's run, job, provider or created_at is not text")
    return Manifest(
        run=raw["run"],
        epoch=raw["epoch"],
        batch=raw["batch"],
        step=raw["step"],
        attempt=raw["attempt"],
        job=raw["job"],
        provider=raw["provider"],
        created_at=raw["created_at"],
        files=entries,
    )


def _entry(item: Any) -> Entry:
    if not isinstance(item, dict) or set(item) != {"name", "size", "sha256"}:
        raise BadManifest(f"the manifest's file entry {item!r} is not {{name, size, sha256}}")
    name, size, digest = item["name"], item["size"], item["sha256"]
    if not isinstance(name, str) or not plain_name(name):
        raise BadManifest(f"the manifest names {name!r}, which is not a file in the backup's folder")
    if not _count(size):
        raise BadManifest(f"the manifest's size of {name} is {size!r}, not a whole number >= 0")
    if not (isinstance(digest, str) and len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)):
        raise BadManifest(f"the manifest's sha256 of {name} is {digest!r}, not 64 hex digits")
    return Entry(name, size, digest)


def plain_name(name: str) -> bool:
    """Whether ``name`` is one file's name: no folder, no ``..``, no NUL, not the manifest itself."""
    return bool(name) and name not in (".", "..", MANIFEST_FILE) and not any(c in name for c in "/\\\x00")


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _optional_count(value: Any) -> bool:
    return value is None or _count(value)


def _optional_text(value: Any) -> bool:
    return value is None or isinstance(value, str)


def sha256_of(path: Path) -> str:
    """The sha256 of the file at ``path``, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def commit(
    folder: Path, origin: Origin, *, epoch: int, batch: int, step: int, clock: Callable[[], float] = time.time
) -> Manifest:
    """Commit the backup just written to ``folder``: hash every file there, then write the manifest.

    The files are read back from where they were written, so the digests are of what
    storage holds, not of what was meant to be written. The manifest goes to a
    temporary name first and is then renamed, so a reader finds a whole manifest or none.
    """
    names = sorted(path.name for path in folder.iterdir() if path.is_file() and plain_name(path.name))
    entries = tuple(Entry(name, (folder / name).stat().st_size, sha256_of(folder / name)) for name in names)
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(clock()))
    manifest = Manifest(
        origin.run, epoch, batch, step, origin.attempt, origin.job, origin.provider, created, entries
    )
    partial = folder / f".{MANIFEST_FILE}.partial"
    partial.write_text(manifest.to_json())
    partial.replace(folder / MANIFEST_FILE)
    return manifest


def read(folder: Path) -> Manifest:
    """The manifest of the backup in ``folder``.

    Raises:
        BadManifest: there is none (the backup was never committed), or it cannot be believed.
    """
    try:
        text = (folder / MANIFEST_FILE).read_bytes()
    except FileNotFoundError:
        raise BadManifest(
            "it has no manifest: the backup was never committed (cut short while written)"
        ) from None
    except OSError as error:
        raise BadManifest(f"its manifest cannot be read ({error.strerror})") from None
    return parse(text)


def size_problem(manifest: Manifest, sizes: Mapping[str, int]) -> str | None:
    """Why files of these ``sizes`` (name -> bytes present) are not the backup ``manifest`` lists; None: they are."""
    for entry in manifest.files:
        found = sizes.get(entry.name)
        if found is None:
            return f"{entry.name} is missing"
        if found != entry.size:
            return f"{entry.name} has {found} bytes, its manifest says {entry.size}"
    return None


def problem(folder: Path, run: str | None) -> tuple[Manifest | None, str | None]:
    """The backup in ``folder``'s manifest and why it cannot be restored (None: it verifies).

    It verifies when its manifest is whole and of run ``run`` (any run while ``run`` is
    None), and every file it lists is there with its size and sha256.
    """
    try:
        manifest = read(folder)
    except BadManifest as error:
        return None, str(error)
    if run is not None and manifest.run != run:
        return manifest, f"it is run {manifest.run!r}'s backup, not run {run!r}'s"
    sizes = {path.name: path.stat().st_size for path in folder.iterdir() if path.is_file()}
    wrong_size = size_problem(manifest, sizes)
    if wrong_size:
        return manifest, wrong_size
    for entry in manifest.files:
        if sha256_of(folder / entry.name) != entry.sha256:
            return (
                manifest,
                f"{entry.name}'s sha256 differs from its manifest (the file changed after it was written)",
            )
    return manifest, None


def slots(backup: Path) -> list[Path]:
    """The backup folders under ``backup``'s ``verified/``, newest first (committed or not)."""
    root = backup / SLOTS_FOLDER
    if not root.is_dir():
        return []
    return sorted((path for path in root.iterdir() if path.is_dir()), key=lambda p: p.name, reverse=True)


def choose(backup: Path, run: str | None, say: Callable[[str], None]) -> tuple[Path, Manifest] | None:
    """The newest backup under ``backup`` that verifies, saying which and why any newer one was passed over.

    Returns None when ``backup`` holds no numbered backup at all (a fresh run, or a
    backup written before manifests: ``legacy``).

    Raises:
        ConfigError: numbered backups are there but none verifies. Nothing was loaded,
            moved or deleted.
    """
    found = slots(backup)
    passed: list[str] = []
    for folder in found:
        manifest, why = problem(folder, run)
        if why is None:
            assert manifest is not None  # a backup verifies only with its manifest
            if passed:
                say(f"warning: {'; '.join(passed)}; restoring the previous one instead")
            say(f"restoring the verified backup {folder.name}: {manifest.describe()}")
            return folder, manifest
        passed.append(f"the backup {folder.name} does not verify: {why}")
    if not found:
        return None
    raise ConfigError(
        f"No backup in {str(backup / SLOTS_FOLDER)!r} verifies, so none was loaded and nothing was deleted: "
        f"{'; '.join(passed)}. Restore the files from a copy, or submit the run anew "
        "(cloudtrain submit --new)."
    )


def prune(backup: Path, keep: int = KEEP) -> None:
    """Delete every backup folder older than the ``keep`` newest committed ones (chief only).

    An uncommitted folder newer than those (a write cut short) is left: a later commit
    passes it and it is deleted then.
    """
    found = slots(backup)
    committed = [folder for folder in found if (folder / MANIFEST_FILE).is_file()]
    if len(committed) < keep:
        return
    oldest_kept = committed[keep - 1].name
    for folder in found:
        if folder.name < oldest_kept:
            _remove(folder)


def _remove(folder: Path) -> None:
    """The manifest first, so a folder cut short in its removal is never taken for a committed backup."""
    (folder / MANIFEST_FILE).unlink(missing_ok=True)
    shutil.rmtree(folder, ignore_errors=True)


def new_slot(backup: Path, epoch: int, batch: int) -> Path:
    """An empty folder for the backup after ``epoch`` epochs and ``batch`` batches.

    A folder of that name left by an attempt that was cut short (or whose backup failed
    to verify) is emptied: the backup is taken again at the same point.
    """
    folder = backup / SLOTS_FOLDER / slot_name(epoch, batch)
    if folder.exists():
        _remove(folder)
    folder.mkdir(parents=True)
    return folder
