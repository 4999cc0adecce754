"""Start a local run and find it again: the bundle "upload", the run folder, the detached launcher.

``submit`` copies the code bundle to where the request says, writes the run folder and
starts the detached launcher (``launcher``), which supervises the replicas and records
status and logs in the run folder. The run outlives the shell, as a cloud job does:
``cloudtrain cancel local:<id>`` stops it (and Ctrl-C on a foreground ``cloudtrain submit``).

Every request names its run (``cloudtrain.runs``), and submitting is idempotent as on
the clouds: ``submit`` returns the local job already made from the same request and run
id unless it failed or was cancelled. A submit without ``--run-id`` gets a new run id
(``Local.new_run_id``), so it starts a new run, as a script started twice would. One
submit at a time, per local home, looks for that run and makes a new one
(``_submit_lock``), so two identical submits of one run id started at the same moment
make one run, and the second returns it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudtrain.errors import JobNotFoundError, ProviderError
from cloudtrain.messages import quote
from cloudtrain.planning import RUN_ID
from cloudtrain.provider import transfer
from cloudtrain.provider.emulation import JOB, Emulable
from cloudtrain.providers.local import promise
from cloudtrain.providers.local.emulate import take_job_name
from cloudtrain.providers.local.job import HOME_ENV, LocalJob, local_home, run_dir_for
from cloudtrain.providers.local.launcher import substitute
from cloudtrain.providers.local.records import (
    REQUEST_FILE,
    STATUS_FILE,
    parse_request,
    read_record,
    write_atomically,
    write_record,
)

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
# Where request.json keeps ``request_key``; the states in which a run is reused, not repeated:
# with a run id, any that did not fail; without one, only a run still under way.
KEY_FIELD = "request_key"
REUSABLE_STATES = ("pending", "queued", "running", "succeeded")
# Held (flock) by the submit that looks for an identical run and makes a new one; beside
# ``runs/``, not in it, so it is never taken for a run.
LOCK_FILE = "submit.lock"


def submit(
    plan: Plan, request: dict[str, Any], bundle: Bundle, progress: OnProgress | None = None
) -> LocalJob:
    """Upload the bundle (reporting to ``progress``), write the run folder and start the detached launcher.

    Returns the run already made from the same request instead, when there is one to
    return (see the module's docstring).

    Raises:
        SpecError: the run finished, or left a backup, with other training settings or
            code (``promise``): nothing is started.
        ProviderError: the local home cannot hold a run (a file, not a folder; not
            writable; a full disk), or the launcher did not start.
    """
    home = local_home()
    key = request_key(request)
    try:
        with _submit_lock(home):
            earlier = find_submitted(key)
            if earlier is not None:
                earlier.attached = True
                return earlier
            promise.check_same_run(request, bundle.path, home / "buckets")
            job_id, run_dir = _new_run(plan.name)
            try:
                placeholders = {"<run>": str(run_dir), "<buckets>": str(home / "buckets")}
                if request.get("emulates"):
                    assert isinstance(plan.target, Emulable)  # local.render emulated it
                    placeholders[JOB] = take_job_name(request, home / "jobs", plan.target)
                resolved = substitute(request, placeholders)
                _upload(bundle.path, Path(resolved["upload"]["target"]), progress)
                write_record(run_dir / REQUEST_FILE, {**resolved, KEY_FIELD: key})
                if "stockout" in resolved:  # the emulated service found no capacity: nothing starts
                    write_record(run_dir / STATUS_FILE, resolved["stockout"])
                else:
                    start_detached(run_dir)
            except BaseException:
                shutil.rmtree(run_dir, ignore_errors=True)  # no half-made run is left to be listed
                raise
    except OSError as exc:
        raise _cannot_write(home, exc) from exc
    return LocalJob(job_id, request=resolved)


@contextlib.contextmanager
def _submit_lock(home: Path) -> Iterator[None]:
    """Hold the local home's submit lock (an exclusive ``flock``) for the block.

    The kernel releases it when the holder exits, so a submit that was killed never
    leaves the lock held. Each call opens the file anew, so threads exclude each other too.
    """
    home.mkdir(parents=True, exist_ok=True)
    with (home / LOCK_FILE).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _cannot_write(home: Path, exc: OSError) -> ProviderError:
    """The error for a local home that cannot hold a run, naming the path and the way out."""
    if isinstance(exc, FileExistsError | NotADirectoryError):  # mkdir where a file is, or below one
        path = Path(exc.filename or home)
        blocking = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), path)
        problem = f"{blocking} is a file, not a folder"
    else:
        problem = f"{exc.filename}: {exc.strerror or exc}" if exc.filename else str(exc.strerror or exc)
    if os.environ.get(HOME_ENV):
        fix = f"Set {HOME_ENV} to a folder this user can write (it is {str(home)!r}), or unset it."
    else:
        fix = f"Make {home} a folder this user can write, or set {HOME_ENV} to one."
    return ProviderError(f"Cannot make a local run: {problem}. {fix}")


def request_key(request: dict[str, Any]) -> str:
    """The hash of the request as rendered (before its run folder is filled in): what makes runs the same."""
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def find_submitted(key: str, states: tuple[str, ...] = REUSABLE_STATES) -> LocalJob | None:
    """The newest run made from the request of hash ``key`` whose state is one of ``states``.

    A run whose records cannot be believed is passed over, never returned. Callers that
    make a run when none is found hold ``_submit_lock``, so no other submit makes one meanwhile.
    """
    runs = sorted((local_home() / "runs").glob("*/" + REQUEST_FILE), key=_mtime, reverse=True)
    for path in runs:
        try:
            record = read_record(path, parse_request)
            if record is None or record.get(KEY_FIELD) != key:
                continue
            job = LocalJob(f"{ID_PREFIX}{path.parent.name}", request=record)
            if job.status().state in states:
                return job
        except ProviderError:
            continue
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


def start_detached(run_dir: Path, program: str = LAUNCHER_PROGRAM) -> None:
    """Start the launcher (or a sweep's driver) detached: it forks, writes its pid file, and this call returns."""
    started = subprocess.run(
        [sys.executable, "-c", program, "--detach", str(run_dir)],
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

    Only the run folder must exist: each record is read when it is needed, so a run
    whose ``request.json`` or ``status.json`` is damaged can still be cancelled.

    Raises:
        JobNotFoundError: no run folder exists for ``job_id``, or it is no local job ID
            (the same exit code: either way it names no job).
    """
    if exists(job_id):
        return LocalJob(job_id)
    if not (owns(job_id) and RUN_ID.fullmatch(job_id.removeprefix(ID_PREFIX))):
        try:
            run_dir_for(job_id)
        except ProviderError as malformed:
            raise JobNotFoundError(str(malformed)) from None
    raise JobNotFoundError(
        f"No local run {quote(job_id)} under {local_home() / 'runs'}, and no run with that run id. Check the ID "
        "that submit printed (`cloudtrain list` shows them), and that CLOUDTRAIN_LOCAL_HOME is the same as "
        "when it was submitted."
    )


def exists(job_id: str) -> bool:
    """Whether ``job_id`` names a local run folder here (never a path outside ``runs/``)."""
    try:
        return run_dir_for(job_id).is_dir()
    except ProviderError:
        return False


def owns(job_id: str) -> bool:
    """Local job IDs start with ``local:``."""
    return job_id.startswith(ID_PREFIX)
