"""What cloudtrain keeps in this machine's cache, how big it is, and cleaning it.

Under ``$XDG_CACHE_HOME/cloudtrain`` (``~/.cache/cloudtrain``):

- ``bundles/``: every code bundle packed, named by content, and the index that lets an
  unchanged project skip packing (``cloudtrain.bundle``). Each changed pack adds a
  bundle and none is ever removed by submit: three dry runs of a 300 MB folder that
  changed between them leave three bundles. Any of them can go: a later submit packs
  again what it needs.
- the local provider's run folders and stand-in buckets (``providers.local.cache``).

``clean`` removes the bundles and the folders of local runs that have ended (older
than a cutoff, when given); the stand-in buckets (emulated clouds' models, backups and
results) only when asked. Nothing is removed that a run still going may read.

Example:
>>> [part.name for part in usage()]
['bundles', 'local runs', 'stand-in buckets']
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from cloudtrain import submission
from cloudtrain.providers.local import cache as local_cache

# A bundle written this recently may be one a submit in another shell is about to upload.
FRESH_S = 60.0
# Why a cache folder that is a symbolic link is not cleaned through.
LINKED = "a symbolic link out of the cache, not followed"


@dataclass(frozen=True)
class Part:
    """One folder of the cache: what it is, where, its bytes and how many things it holds."""

    name: str
    path: Path
    size: int
    items: int
    unit: str

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "path": str(self.path), "bytes": self.size, self.unit: self.items}


@dataclass
class Cleaned:
    """What ``clean`` removed (or would remove, in a dry run), its bytes, and what it kept and why."""

    removed: list[tuple[Path, int]] = field(default_factory=list)
    kept: list[tuple[Path, str]] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(size for _, size in self.removed)

    def to_dict(self) -> dict[str, object]:
        return {
            "removed": [{"path": str(path), "bytes": size} for path, size in self.removed],
            "bytes": self.size,
            "kept": [{"path": str(path), "why": why} for path, why in self.kept],
        }


def usage() -> list[Part]:
    """The cache's parts and their sizes, read from disk (nothing is created)."""
    bundles = submission.bundle_cache()
    runs, buckets = local_cache.runs_dir(), local_cache.buckets_dir()
    return [
        Part("bundles", bundles, folder_size(bundles), len(list(bundles.glob("*.tar.gz"))), "bundles"),
        Part("local runs", runs, folder_size(runs), len(local_cache.run_folders()), "runs"),
        Part("stand-in buckets", buckets, folder_size(buckets), _entries(buckets), "buckets"),
    ]


def clean(*, older_than: datetime | None = None, buckets: bool = False, dry_run: bool = False) -> Cleaned:
    """Remove the bundles and the ended local runs (older than ``older_than`` when given).

    Nothing outside the cache is removed: a symbolic link in it, or a folder of it that
    is one (``bundles/index``, ``buckets/``), is removed as a link, its target left as it
    is. ``runs/`` as a link is kept whole, since a run behind it may still be going.

    Args:
        older_than: keep what was written since then; None removes whatever may go.
        buckets: also remove the stand-in buckets of emulated clouds (their models, backups
            and results), which are kept otherwise.
        dry_run: only say what would go.
    """
    cleaned = Cleaned()
    cutoff = older_than.timestamp() if older_than else None
    for path in _bundle_files(submission.bundle_cache()):
        _remove(path, _bundle_kept(path, cutoff), cleaned, dry_run)
    runs = local_cache.runs_dir()
    if runs.is_symlink():
        cleaned.kept.append((runs, f"{LINKED} ({os.readlink(runs)}); its runs are not judged through it"))
    else:
        for run in local_cache.run_folders(older_than=older_than):
            _remove(run.path, run.why_kept, cleaned, dry_run)
    if buckets:
        for path in _entries_of(local_cache.buckets_dir()):
            _remove(path, _age_kept(path, cutoff), cleaned, dry_run)
    return cleaned


def _entries_of(folder: Path) -> list[Path]:
    """What ``folder`` holds, sorted; ``folder`` itself when it is a symbolic link (removed as one)."""
    if folder.is_symlink():
        return [folder]
    return sorted(folder.iterdir()) if folder.is_dir() else []


def _bundle_files(folder: Path) -> list[Path]:
    """The bundles, their index records and any temporary file a failed pack left; links as links."""
    if folder.is_symlink():
        return [folder]
    if not folder.is_dir():
        return []
    index = folder / "index"
    records = _entries_of(index) if index.is_dir() or index.is_symlink() else []
    return sorted(path for path in folder.iterdir() if path != index and not _is_folder(path)) + records


def _is_folder(path: Path) -> bool:
    """A real folder: not a symbolic link to one."""
    return path.is_dir() and not path.is_symlink()


def _bundle_kept(path: Path, cutoff: float | None) -> str:
    if time.time() - path.lstat().st_mtime < FRESH_S:
        return "written in the last minute: a submit may be about to upload it"
    return _age_kept(path, cutoff)


def _age_kept(path: Path, cutoff: float | None) -> str:
    return "it is newer than --older-than" if cutoff is not None and path.lstat().st_mtime >= cutoff else ""


def _remove(path: Path, why_kept: str, cleaned: Cleaned, dry_run: bool) -> None:
    if why_kept:
        cleaned.kept.append((path, why_kept))
        return
    cleaned.removed.append((path, folder_size(path)))
    if dry_run:
        return
    if _is_folder(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def folder_size(path: Path) -> int:
    """Bytes of the files under ``path`` (a file: its own), links not followed; 0 if it is missing."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return 0
    if not path.is_dir() or path.is_symlink():
        return info.st_size
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except FileNotFoundError:  # removed while counted
                continue
    return total


def _entries(folder: Path) -> int:
    return sum(1 for _ in folder.iterdir()) if folder.is_dir() else 0
