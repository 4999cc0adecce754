"""Start a local run and find it again: the bundle "upload", the run folder, the detached launcher.

``submit`` copies the code bundle to where the request says, writes the run folder and
starts the detached launcher (``launcher``), which supervises the replicas and records
status and logs in the run folder. The run outlives the shell, as a cloud job does:
Ctrl-C on ``cloudtrain submit`` stops following it, ``cloudtrain cancel local:<id>``
stops it.

Every request names its run (``cloudtrain.runs``), and submitting is idempotent as on
the clouds: ``submit`` returns the local job already made from the same request and run
id unless it failed or was cancelled. A submit without ``--run-id`` gets a new run id
(``Local.new_run_id``), so it starts a new run, as a script started twice would.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudtrain.errors import ProviderError
from cloudtrain.providers import transfer
from cloudtrain.providers.emulation import JOB
from cloudtrain.providers.local.emulate import take_job_name
from cloudtrain.providers.local.job import REQUEST_FILE, LocalJob, local_home, run_dir_for
from cloudtrain.providers.local.launcher import substitute
from cloudtrain.providers.local.records import parse_request, read_record, write_atomically, write_record

if TYPE_CHECKING:
    from cloudtrain.bundle import Bundle
    from cloudtrain.planning import Plan
    from cloudtrain.progress import Advance, OnProgress

ID_PREFIX = "local:"
# Not ``-m cloudtrain.providers.local.launcher``: importing cloudtrain imports that
# module first, and runpy warns about running a module that is already imported.
LAUNCHER_PROGRAM = "import sys; from cloudtrain.providers.local.launcher import main; main(sys.argv[1:])"
# New run IDs to try when one is taken; the 4 hex digits make even a second one rare.
ID_ATTEMPTS = 8
# Where request.json keeps ``request_key``; the states in which a run is reused, not repeated.
KEY_FIELD = "request_key"
REUSABLE_STATES = ("queued", "running", "succeeded")


def submit(
    plan: Plan, request: dict[str, Any], bundle: Bundle, progress: OnProgress | None = None
) -> LocalJob:
    """Upload the bundle (reporting to ``progress``), write the run folder and start the detached launcher."""
    home = local_home()
    key = request_key(request)
    earlier = find_submitted(key)
    if earlier is not None:
        earlier.attached = True
        return earlier
    job_id, run_dir = _new_run(plan.name)
    placeholders = {"<run>": str(run_dir), "<buckets>": str(home / "buckets")}
    if request.get("emulates"):
        placeholders[JOB] = take_job_name(request, home / "jobs")
    resolved = substitute(request, placeholders)
    _upload(bundle.path, Path(resolved["upload"]["target"]), progress)
    write_record(run_dir / REQUEST_FILE, {**resolved, KEY_FIELD: key})
    _start_launcher(run_dir)
    return LocalJob(job_id, request=resolved)


def request_key(request: dict[str, Any]) -> str:
    """The hash of the request as rendered (before its run folder is filled in): what makes runs the same."""
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def find_submitted(key: str) -> LocalJob | None:
    """The newest run made from the request of hash ``key`` that is queued, running or succeeded.

    Two submits racing each other can both miss the other's run, as on the clouds: this
    guards against resubmitting (a retried pipeline step), not against concurrency.
    """
    runs = sorted((local_home() / "runs").glob("*/" + REQUEST_FILE), key=_mtime, reverse=True)
    for path in runs:
        record = read_record(path, parse_request)
        if record is None or record.get(KEY_FIELD) != key:
            continue
        job = LocalJob(f"{ID_PREFIX}{path.parent.name}", request=record)
        if job.status().state in REUSABLE_STATES:
            return job
    return None


def _mtime(path: Path) -> float:
    """When ``path`` was written; 0 for a run folder removed since it was listed."""
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _new_run(name: str) -> tuple[str, Path]:
    """A new run ID and its folder, created here and only here (``mkdir`` fails if it exists).

    Raises:
        ProviderError: every ID tried was taken.
    """
    runs = local_home() / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    for _ in range(ID_ATTEMPTS):
        job_id = f"{ID_PREFIX}{name}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
        run_dir = run_dir_for(job_id)
        with contextlib.suppress(FileExistsError):
            run_dir.mkdir()
            return job_id, run_dir
    raise ProviderError(
        f"Could not create a new run folder under {runs}: {ID_ATTEMPTS} new run IDs were "
        "all taken. Submit again."
    )


def _upload(source: Path, target: Path, progress: OnProgress | None = None) -> None:
    """Copy the bundle to its target; the name is the content hash, so an existing copy is it.

    Each copy goes to a temp file of its own, so submits of the same bundle at the same
    time each write a whole file and the last rename wins with the same content.
    """

    def copy(advance: Advance) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        with source.open("rb") as raw:
            write_atomically(
                target, lambda copied: shutil.copyfileobj(transfer.ProgressReader(raw, advance), copied)
            )

    transfer.upload_once(
        exists=target.exists, upload=copy, name=source.name, size=source.stat().st_size, progress=progress
    )


def _start_launcher(run_dir: Path) -> None:
    """Start the launcher detached: it forks, writes its pid file, and this call returns."""
    started = subprocess.run(
        [sys.executable, "-c", LAUNCHER_PROGRAM, "--detach", str(run_dir)],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    if started.returncode != 0:
        raise ProviderError(
            f"The local launcher did not start (exit {started.returncode}): "
            f"{(started.stderr.strip().splitlines() or ['no output'])[-1]}. Run folder: {run_dir}"
        )


def attach(job_id: str) -> LocalJob:
    """Reconnect to a local run by its ID, from any shell on this machine.

    Raises:
        ProviderError: if ``job_id`` is not a local run ID, no run folder exists for it,
            or its ``request.json`` is corrupt.
    """
    run_dir = run_dir_for(job_id)
    request = read_record(run_dir / REQUEST_FILE, parse_request)
    if request is None:
        raise ProviderError(
            f"No local run {job_id!r} under {run_dir.parent}. Check the ID that submit printed, "
            "and that CLOUDTRAIN_LOCAL_HOME is the same as when it was submitted."
        )
    return LocalJob(job_id, request=request)


def owns(job_id: str) -> bool:
    """Local job IDs start with ``local:``."""
    return job_id.startswith(ID_PREFIX)
