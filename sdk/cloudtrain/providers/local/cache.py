"""What the local provider keeps on this machine, and which of it ``cloudtrain cache clean`` may remove.

Two folders under ``$CLOUDTRAIN_LOCAL_HOME``: ``runs/`` (one folder per run: its request,
status, launcher records and ``output.log``, which ``status``, ``logs`` and ``list`` read)
and ``buckets/`` (the stand-in buckets of emulated clouds: their code bundles, backups,
models and results, which the user may still want). A run folder is removable once its
run has ended; one whose run may still be going (queued, running, or a record that
cannot be read) is kept, so no launcher loses its folder under it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from cloudtrain.errors import ProviderError
from cloudtrain.providers.local.job import LocalJob, local_home
from cloudtrain.providers.local.listing import is_run


@dataclass(frozen=True)
class RunFolder:
    """A run's folder, whether it may go, and why not when it may not."""

    path: Path
    removable: bool
    why_kept: str = ""


def runs_dir() -> Path:
    return local_home() / "runs"


def buckets_dir() -> Path:
    return local_home() / "buckets"


def run_folders(*, older_than: datetime | None = None) -> list[RunFolder]:
    """Every run folder, removable when its run has ended (and, with ``older_than``, before then)."""
    runs = runs_dir()
    folders = sorted(path for path in runs.iterdir() if is_run(path)) if runs.is_dir() else []
    return [_judged(folder, older_than) for folder in folders]


def _judged(folder: Path, older_than: datetime | None) -> RunFolder:
    try:
        state = LocalJob(f"local:{folder.name}").status()
    except ProviderError as error:
        return RunFolder(folder, False, f"its status cannot be read ({error})")
    if not state.done:
        return RunFolder(folder, False, f"it is {state.state}")
    if older_than is not None and folder.lstat().st_mtime >= older_than.timestamp():
        return RunFolder(folder, False, "it is newer than --older-than")
    return RunFolder(folder, True)
