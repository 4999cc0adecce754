"""The local runs cloudtrain made, read from the run folders: what ``cloudtrain list`` shows.

Only folders named as ``run.submit`` names them count; anything else under ``runs/``
is not cloudtrain's. Each run describes itself (``LocalJob.summary``).
"""

from __future__ import annotations

from pathlib import Path

from cloudtrain.provider.base import JobSummary
from cloudtrain.providers.local.job import RUN_NAME, STAMP, LocalJob, local_home
from cloudtrain.providers.local.records import REQUEST_FILE


def list_runs(*, limit: int | None) -> list[JobSummary]:
    """At most ``limit`` local runs (None: all), newest submit first."""
    runs = local_home() / "runs"
    folders = [path for path in runs.iterdir() if is_run(path)] if runs.is_dir() else []
    folders.sort(key=_submitted, reverse=True)
    return [LocalJob(f"local:{folder.name}").summary() for folder in folders[:limit]]


def jobs_of_run(run_id: str) -> list[JobSummary]:
    """The local runs and sweeps whose request names run ``run_id``, newest first."""
    from cloudtrain.providers.local import sweep

    found = [job for job in list_runs(limit=None) + sweep.list_sweeps(limit=None) if job.run == run_id]
    return sorted(found, key=lambda job: job.created, reverse=True)


def is_run(path: Path) -> bool:
    """Whether ``path`` is a run folder as ``run.submit`` names them."""
    return path.is_dir() and RUN_NAME.fullmatch(path.name) is not None and STAMP.search(path.name) is not None


def _submitted(folder: Path) -> float:
    return (
        (folder / REQUEST_FILE).stat().st_mtime
        if (folder / REQUEST_FILE).exists()
        else folder.stat().st_mtime
    )
