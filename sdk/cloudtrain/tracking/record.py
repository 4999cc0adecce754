"""Which jobs this machine submitted with ``tracking:`` on, and where their run is logged.

The SDK closes a tracked run's MLflow run when it sees the run's job end
(``cloudtrain.tracking.closing``). A job's provider keeps no trace of the tracking URI
that every provider can read back the same way, so ``submit`` records it here, beside
the other records cloudtrain keeps on this machine: one file per job (named by a digest
of its id) with the tracking URI, the experiment and the run, and one per run naming its
newest job, the one whose end is the run's end. A record holds no credential: the spec
refuses a URI with one (``cloudtrain.tracker``).

Example:
>>> job_digest("local:demo-20260101-120000-0a1b")
'12546518be5f26d73795b147'
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudtrain import files

if TYPE_CHECKING:
    from cloudtrain.planning import Plan

# A record is a few hundred bytes; anything larger is not one of ours.
MAX_RECORD_BYTES = 64 * 1024
DIGEST_CHARS = 24


@dataclass(frozen=True)
class TrackedJob:
    """A job of run ``run``, logged to the MLflow experiment ``experiment`` at ``uri``."""

    uri: str
    experiment: str
    run: str


def remember(plan: Plan, job_id: str, folder: Path | None = None) -> None:
    """Record that ``job_id`` is the newest job of ``plan``'s run, tracked as its spec says.

    The job exists already: a record that cannot be written (a full disk, a cache folder
    that is a file) is left out rather than failing the submit; the run's MLflow run is
    then closed by nothing but its chief.
    """
    tracking = plan.spec.tracking
    assert tracking is not None and tracking.uri, "tracking is on, with a URI"
    found = TrackedJob(tracking.uri, tracking.experiment_for(plan.name), str(plan.run_id))
    where = folder or records_folder()
    try:
        _write(where / "jobs" / f"{job_digest(job_id)}.json", asdict(found))
        _write(where / "runs" / f"{found.run}.json", {"job": job_id})
    except (OSError, files.FileProblem):
        return


def recall(job_id: str, folder: Path | None = None) -> TrackedJob | None:
    """The tracking of ``job_id`` as recorded here; None for a job not tracked, or not submitted here.

    A record that cannot be read is no record: closing a run is never worth failing a command.
    """
    document = _read((folder or records_folder()) / "jobs" / f"{job_digest(job_id)}.json")
    fields = ("uri", "experiment", "run")
    if not isinstance(document, dict) or sorted(document) != sorted(fields):
        return None
    values = [document[name] for name in fields]
    return TrackedJob(*values) if all(isinstance(value, str) and value for value in values) else None


def newest_job(run: str, folder: Path | None = None) -> str | None:
    """The newest job of ``run`` submitted here, as recorded; None when unknown."""
    document = _read((folder or records_folder()) / "runs" / f"{run}.json")
    job = document.get("job") if isinstance(document, dict) else None
    return job if isinstance(job, str) else None


def job_digest(job_id: str) -> str:
    """A name for ``job_id`` that is safe as a file name and an MLflow tag name, whatever the provider's id holds."""
    return hashlib.sha256(job_id.encode()).hexdigest()[:DIGEST_CHARS]


def records_folder() -> Path:
    """``$XDG_CACHE_HOME/cloudtrain/tracking`` (``~/.cache`` without XDG)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "cloudtrain" / "tracking"


def _read(path: Path) -> Any:
    try:
        return files.read_json(path, limit=MAX_RECORD_BYTES)
    except (OSError, files.UnreadableFile):
        return None


def _write(path: Path, document: dict[str, str]) -> None:
    """Write ``document`` whole: a file beside ``path``, then a rename, so a reader never sees half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    files.write_bytes(temporary, json.dumps(document, sort_keys=True).encode())
    os.replace(temporary, path)
