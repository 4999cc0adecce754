"""A run's committed backups in a store, newest first, each with why it cannot be used (if it cannot).

The runtime commits each backup with a manifest written last (``cloudtrain_runtime.manifests``):
``checkpoints/verified/<slot>/cloudtrain-manifest.json`` under the run's prefix. Here they
are read from a listing and one small read per manifest: a backup is a candidate when its
manifest is whole, names this run, and every file it lists is there with the size it
says. The sha256 of each file is checked as the file is copied (``cloudtrain.resume.copy``),
so a backup whose bytes changed after the manifest was written is caught on the way.
"""

from __future__ import annotations

from dataclasses import dataclass

from cloudtrain.errors import ProviderError
from cloudtrain.planning import storage_paths
from cloudtrain.provider.backups import RunStore
from cloudtrain_runtime import manifests
from cloudtrain_runtime.backups import STAMP_FILE
from cloudtrain_runtime.replica import HISTORY_FILE

_PATHS = storage_paths("root", "run")
# The run's backup folder, relative to its prefix (``planning.storage_paths``: ``checkpoints``).
BACKUP = _PATHS.backup.removeprefix(_PATHS.run + "/")
SLOTS = f"{BACKUP}/{manifests.SLOTS_FOLDER}/"
# Beside the numbered backups, what the runtime needs to resume: whose backup it is, and the run's history.
STAMP = f"{BACKUP}/{STAMP_FILE}"
HISTORY = f"{BACKUP}/{HISTORY_FILE}"
# A manifest lists a few files: anything larger is not one.
MAX_MANIFEST_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Candidate:
    """One numbered backup of a run: its slot, its manifest (raw and read) and why it cannot be used."""

    slot: str
    manifest: manifests.Manifest | None
    raw: bytes
    problem: str | None

    def key(self, name: str) -> str:
        """The key of the backup's file ``name`` under the run's prefix."""
        return f"{SLOTS}{self.slot}/{name}"

    @property
    def usable(self) -> bool:
        return self.problem is None


def candidates(store: RunStore, run: str) -> list[Candidate]:
    """Every numbered backup under ``store`` (a run's prefix), newest first."""
    files: dict[str, dict[str, int]] = {}
    for stored in store.list(SLOTS):
        slot, _, name = stored.key.removeprefix(SLOTS).partition("/")
        if name and "/" not in name:
            files.setdefault(slot, {})[name] = stored.size
    return [_candidate(store, run, slot, files[slot]) for slot in sorted(files, reverse=True)]


def _candidate(store: RunStore, run: str, slot: str, sizes: dict[str, int]) -> Candidate:
    size = sizes.get(manifests.MANIFEST_FILE)
    if size is None:
        return Candidate(
            slot, None, b"", "it has no manifest: it was never committed (cut short while written)"
        )
    if size > MAX_MANIFEST_BYTES:
        return Candidate(slot, None, b"", f"its manifest has {size} bytes, too many for a manifest")
    raw = read_small(store, f"{SLOTS}{slot}/{manifests.MANIFEST_FILE}", MAX_MANIFEST_BYTES)
    try:
        manifest = manifests.parse(raw)
    except manifests.BadManifest as error:
        return Candidate(slot, None, raw, str(error))
    if manifest.run != run:
        return Candidate(slot, manifest, raw, f"it is run {manifest.run!r}'s backup, not run {run!r}'s")
    return Candidate(slot, manifest, raw, manifests.size_problem(manifest, sizes))


def read_small(store: RunStore, key: str, limit: int) -> bytes:
    """The bytes of ``key``, refusing more than ``limit``.

    Raises:
        ProviderError: the object is larger than ``limit``.
    """
    reader = store.open(key)
    try:
        data = reader.read(limit + 1)
    finally:
        reader.close()
    if len(data) > limit:
        raise ProviderError(f"{store.uri}/{key} is larger than the {limit} bytes cloudtrain reads of it.")
    return data


def explain(passed: list[Candidate]) -> str:
    """``epoch-000003: <why>; epoch-000002: <why>``: the backups passed over and why."""
    return "; ".join(f"{candidate.slot}: {candidate.problem}" for candidate in passed)
