"""The local runs cloudtrain made, read from the run folders: what ``cloudtrain list`` shows.

Only folders named as ``run.submit`` names them count; anything else under ``runs/``
is not cloudtrain's. A run keeps no clock of its own, so its times are those of the
records the launcher writes once each: ``request.json`` when it was submitted,
``launcher.pid`` when the launcher took charge (the start), and ``status.json``'s last
write for a run that ended (the end).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from cloudtrain.errors import ProviderError
from cloudtrain.providers.base import JobSummary
from cloudtrain.providers.local.job import (
    LAUNCHER_FILE,
    REQUEST_FILE,
    RUN_NAME,
    STATUS_FILE,
    LocalJob,
    local_home,
)

# ``<job name>-<YYYYmmdd>-<HHMMSS>-<4 hex>``: the job name is what comes before the stamp.
STAMP = re.compile(r"-\d{8}-\d{6}-[0-9a-f]{4}$")
# A record that cannot be believed: the run is listed, its state says so.
UNREADABLE = "unreadable"


def list_runs(*, limit: int | None) -> list[JobSummary]:
    """At most ``limit`` local runs (None: all), newest submit first."""
    runs = local_home() / "runs"
    folders = [path for path in runs.iterdir() if _is_run(path)] if runs.is_dir() else []
    folders.sort(key=_submitted, reverse=True)
    return [summary(folder) for folder in folders[:limit]]


def summary(folder: Path) -> JobSummary:
    """One run folder as a ``JobSummary``; a corrupt record makes its state ``unreadable``."""
    job = LocalJob(f"local:{folder.name}")
    try:
        state = job.status().state
    except ProviderError:
        state = UNREADABLE
    return JobSummary(
        id=job.id,
        name=STAMP.sub("", folder.name),
        provider=job.provider,
        state=state,
        created=_modified(folder / REQUEST_FILE) or _modified(folder) or datetime.now(UTC),
        started=_modified(folder / LAUNCHER_FILE),
        ended=_modified(folder / STATUS_FILE) if state in ("succeeded", "failed", "cancelled") else None,
    )


def _is_run(path: Path) -> bool:
    return path.is_dir() and RUN_NAME.fullmatch(path.name) is not None and STAMP.search(path.name) is not None


def _submitted(folder: Path) -> float:
    return (
        (folder / REQUEST_FILE).stat().st_mtime
        if (folder / REQUEST_FILE).exists()
        else folder.stat().st_mtime
    )


def _modified(path: Path) -> datetime | None:
    """When ``path`` was last written, in UTC; None if it does not exist."""
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except FileNotFoundError:
        return None
