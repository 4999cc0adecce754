"""A sweep on this machine: trials run as local runs, searched by a detached driver with Optuna.

``render(plan)`` is the sweep's request: the spec, the search (algorithm, early stopping,
seed), the trial counts, the provider the trials run on (``local``, or the cloud an
emulated trial renders). ``submit`` writes it to a sweep folder,
``$CLOUDTRAIN_LOCAL_HOME/sweeps/<id>/``, and starts the driver (``sweep_driver``) detached,
as the launcher of a run is: the sweep outlives the shell that submitted it, and
``cloudtrain status|logs|cancel local-sweep:<id>`` work from any shell.

Each trial is a normal local run (``cloudtrain status local:<run>`` shows it too) with
the run id ``<sweep run id>-t<N>``, so its own storage prefix, ``<root>/runs/<trial run
id>`` (``planning.storage_paths``): no trial reads or overwrites another's backup or
model. The sweep's model (``outputs.model``) is the best trial's.

The folder holds ``sweep.json`` (the request), ``state.json`` (the driver's record of the
trials, rewritten whole after each change), ``events.log`` (one line per trial event:
what ``logs`` shows), ``launcher.pid`` and ``launcher.log`` (the driver's process and
its own output).
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudtrain import planning
from cloudtrain.bundle import Bundle
from cloudtrain.errors import JobNotFoundError, ProviderError
from cloudtrain.messages import quote
from cloudtrain.outputs import Outputs, standard
from cloudtrain.provider.base import TERMINAL_STATES, JobStatus, JobSummary
from cloudtrain.provider.jobs import WaitsByPolling
from cloudtrain.provider.sweeps import TRIAL, Trial, best_of
from cloudtrain.providers.local import failures
from cloudtrain.providers.local.job import (
    CANCEL_POLL_S,
    CANCEL_WAIT_S,
    LAUNCHER_FILE,
    RUN_NAME,
    LocalJob,
    local_home,
    poll_sleep,
)
from cloudtrain.providers.local.logfile import Tail
from cloudtrain.providers.local.processes import ProcessRecord
from cloudtrain.providers.local.records import read_record, write_record
from cloudtrain.providers.local.run import start_detached
from cloudtrain.sweep import check_sweep_run_id, search

if TYPE_CHECKING:
    from cloudtrain.planning import Plan

ID_PREFIX = "local-sweep:"
REQUEST_FILE = "sweep.json"
# The code bundle every trial runs, packed once by the submit: its file and its URI in the plan.
BUNDLE_FILE = "bundle.json"
STATE_FILE = "state.json"
EVENTS_FILE = "events.log"
CANCEL_FILE = "cancel"
DRIVER_PROGRAM = "import sys; from cloudtrain.providers.local.sweep_driver import main; main(sys.argv[1:])"
DRIVER_GONE = "DRIVER_GONE"


def render(plan: Plan, *, emulate: str | None) -> dict[str, Any]:
    """The sweep's request: everything the driver needs to plan, run and search the trials."""
    tuning = plan.spec.tuning
    assert tuning is not None  # only a spec with tuning: is a sweep
    return {
        "name": plan.name,
        "run_id": plan.run_id and check_sweep_run_id(plan.run_id),
        "emulates": emulate,
        "search": {
            "library": "optuna",
            "algorithm": tuning.algorithm,
            "early_stopping": "median" if tuning.early_stopping else None,
            "seed": search.SEED,
        },
        "trials": {
            "max": search.trials_in_all(tuning),
            "parallel": tuning.parallel_trials,
            "max_failed": tuning.max_failed_trials,
            "root": plan.storage.root,
        },
        "spec": plan.spec.model_dump(mode="json"),
        # What the plan adds to every container's environment (Plan.with_env), for every trial's:
        # the sweep's MLflow run, with tracking: on.
        "env": dict(plan.env),
    }


def template_outputs(root: str) -> Outputs:
    """Trial ``{trial}``'s artifacts under ``root``: ``<root>/runs/{trial}/...``; its log in its run folder."""
    run = planning.storage_paths(root, TRIAL).run
    return standard(run, logs=str(local_home() / "runs" / "{job}" / "output.log"))


def submit(plan: Plan, request: dict[str, Any], bundle: Bundle) -> LocalSweep:
    """Write the sweep folder and start the driver; returns the sweep's handle.

    Every trial runs the code the submit packed (``bundle``, at ``plan.bundle``), as the
    clouds' trials share one bundle: the driver is handed it, and packs nothing.
    """
    sweeps = local_home() / "sweeps"
    sweeps.mkdir(parents=True, exist_ok=True)
    folder = _new_folder(sweeps, plan.name, request["run_id"])
    write_record(folder / REQUEST_FILE, request)
    write_record(folder / BUNDLE_FILE, packed_record(bundle, plan))
    write_record(
        folder / STATE_FILE, {"state": "queued", "provider_state": "QUEUED", "detail": "", "trials": []}
    )
    start_detached(folder, DRIVER_PROGRAM)
    return LocalSweep(f"{ID_PREFIX}{folder.name}", request=request)


def trial_env(request: dict[str, Any]) -> dict[str, str]:
    """What the sweep's ``request`` adds to every trial's environment (its ``env``, from ``render``).

    Raises:
        ProviderError: the request's ``env`` is not an object of strings (edited by hand, say).

    Example:
    >>> trial_env({"env": {"CLOUDTRAIN_MLFLOW_PARENT_RUN_ID": "4f2a"}})
    {'CLOUDTRAIN_MLFLOW_PARENT_RUN_ID': '4f2a'}
    """
    env = request.get("env", {})
    if isinstance(env, dict) and all(isinstance(item, str) for pair in env.items() for item in pair):
        return env
    raise ProviderError(f"The sweep's {REQUEST_FILE} is damaged: its env is not an object of strings.")


def packed_record(bundle: Bundle, plan: Plan) -> dict[str, Any]:
    """What the driver needs of the submit's code bundle: its file, digest, size and URI."""
    return {
        "path": str(bundle.path),
        "sha256": bundle.sha256,
        "files": bundle.files,
        "size": bundle.size,
        "uri": plan.bundle,
    }


def read_packed(folder: Path) -> tuple[Bundle, str]:
    """The bundle ``packed_record`` wrote in sweep ``folder``, and its URI.

    Raises:
        ProviderError: the record is missing or damaged.
    """
    found = read_record(folder / BUNDLE_FILE, _object) or {}
    try:
        bundle = Bundle(Path(found["path"]), str(found["sha256"]), int(found["files"]), int(found["size"]))
        return bundle, str(found["uri"])
    except (KeyError, TypeError, ValueError):
        raise ProviderError(f"The sweep's {folder / BUNDLE_FILE} is missing or damaged.") from None


def _new_folder(sweeps: Path, name: str, run_id: str) -> Path:
    """``<name>-<run id>``, created here (``mkdir`` fails if it exists: the run id is new)."""
    folder = sweeps / f"{name}-{run_id}"[:84]
    try:
        folder.mkdir()
    except FileExistsError:
        raise ProviderError(
            f"A local sweep with run id {run_id!r} exists: {folder}. Use another --run-id."
        ) from None
    return folder


def list_sweeps(*, limit: int | None) -> list[JobSummary]:
    """At most ``limit`` local sweeps (None: all), newest first."""
    sweeps = local_home() / "sweeps"
    folders = [p for p in sweeps.iterdir() if (p / REQUEST_FILE).is_file()] if sweeps.is_dir() else []
    folders.sort(key=lambda folder: (folder / REQUEST_FILE).stat().st_mtime, reverse=True)
    return [LocalSweep(f"{ID_PREFIX}{folder.name}").summary() for folder in folders[:limit]]


def owns(job_id: str) -> bool:
    return job_id.startswith(ID_PREFIX)


def attach(job_id: str) -> LocalSweep:
    """The handle of a local sweep by its id, from any shell.

    Raises:
        JobNotFoundError: no such sweep folder (or one without its request).
        ProviderError: ``job_id`` is not a local sweep ID.
    """
    sweep = LocalSweep(job_id)
    if read_record(sweep.folder / REQUEST_FILE, _object) is None:
        raise JobNotFoundError(
            f"No local sweep {quote(job_id)} under {sweep.folder.parent}. Check the ID submit printed "
            "(`cloudtrain list` shows them)."
        )
    return sweep


def _object(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


class LocalSweep(WaitsByPolling):
    """A sweep on this machine, read from its folder: status, trials, best, logs, cancel, wait."""

    provider = "local"
    runs_here = True  # base.RunsHere: Ctrl-C, SIGTERM or SIGHUP on a foreground submit stops it, as a run's

    def __init__(self, job_id: str, *, request: dict[str, Any] | None = None) -> None:
        name = job_id.removeprefix(ID_PREFIX)
        if not owns(job_id) or not RUN_NAME.fullmatch(name):
            raise ProviderError(
                f"{quote(job_id)} is not a local sweep ID. Expected {ID_PREFIX}<name>-<run id>."
            )
        self.id = job_id
        self.folder = local_home() / "sweeps" / name
        self.request = request

    def _request(self) -> dict[str, Any]:
        found = self.request or read_record(self.folder / REQUEST_FILE, _object)
        if found is None:
            raise ProviderError(f"{self.id} has no readable {REQUEST_FILE}.")
        return found

    def _state(self) -> dict[str, Any]:
        return read_record(self.folder / STATE_FILE, _object) or {"state": "queued", "trials": []}

    @property
    def goal(self) -> str:
        return str(self._request()["spec"]["tuning"]["objective"]["goal"])

    @property
    def metric(self) -> str:
        return str(self._request()["spec"]["tuning"]["objective"]["metric"])

    def trials(self) -> list[Trial]:
        return [Trial(**trial) for trial in self._state()["trials"]]

    def best(self) -> Trial | None:
        return best_of(self.trials(), self.goal)

    @property
    def outputs(self) -> Outputs:
        """The best trial's artifacts (its local run's); before one has ended, trial ``{trial}``'s."""
        best = self.best()
        if best is not None and best.job is not None:
            return LocalJob(best.job).outputs
        template = template_outputs(self._request()["trials"]["root"])
        return Outputs(**{**template.to_dict(), "logs": str(self.folder / EVENTS_FILE)})

    def status(self) -> JobStatus:
        state = self._state()
        current = JobStatus(state["state"], state.get("provider_state", ""), state.get("detail", ""))
        if current.done or (current.state == "queued" and not (self.folder / LAUNCHER_FILE).exists()):
            return current
        if self._driver_runs():
            return current
        detail = f"The sweep's driver ended without a final status; see {self.folder / 'launcher.log'}."
        return JobStatus("failed", DRIVER_GONE, detail, failures.launcher_failure(detail))

    def logs(
        self, follow: bool = False, *, since: datetime | None = None, tail: int | None = None
    ) -> Iterator[str]:
        """The sweep's events, one line per trial started, epoch reported and trial ended."""
        log = Tail(self.folder / EVENTS_FILE, skip_before=since)
        return log.lines(follow=follow, is_done=lambda: self.status().done, tail=tail)

    def cancel(self) -> None:
        """Ask the driver to stop, and return once it has: it cancels the running trials and records ``cancelled``.

        Each running trial is a local run whose cancel takes at most ``CANCEL_WAIT_S``, so
        the driver is waited for that long per trial that may run at once, and once more.
        """
        (self.folder / CANCEL_FILE).touch()
        driver = read_record(self.folder / LAUNCHER_FILE, ProcessRecord.from_json)
        if driver is None or not driver.signal(signal.SIGTERM):
            return
        parallel = int(self._request()["trials"].get("parallel", 1))
        deadline = time.monotonic() + CANCEL_WAIT_S * (parallel + 1)
        while driver.is_alive() and time.monotonic() < deadline:
            time.sleep(CANCEL_POLL_S)

    def _sleep(self, seconds: float) -> None:
        poll_sleep(seconds)

    def summary(self) -> JobSummary:
        state = self.status().state
        created = _modified(self.folder / REQUEST_FILE) or datetime.now(UTC)
        ended = _modified(self.folder / STATE_FILE) if state in TERMINAL_STATES else None
        trials = len(self._state()["trials"])
        return JobSummary(
            id=self.id,
            name=str(self._request()["name"]),
            provider=self.provider,
            state=state,
            created=created,
            started=_modified(self.folder / LAUNCHER_FILE),
            ended=ended,
            shape=f"sweep of {trials} trials",
            run=self._request().get("run_id"),
        )

    def _driver_runs(self) -> bool:
        driver = read_record(self.folder / LAUNCHER_FILE, ProcessRecord.from_json)
        return driver is not None and driver.is_alive()

    def __repr__(self) -> str:
        return f"LocalSweep(id={self.id!r})"


def _modified(path: Path) -> datetime | None:
    with contextlib.suppress(OSError):
        return datetime.fromtimestamp(path.stat().st_mtime, UTC)
    return None
