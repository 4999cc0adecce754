"""The driver of a local sweep: asks Optuna for values, runs each trial as a local run, tells it the result.

It runs as its own detached process (``main([--detach, SWEEP_DIR])``, started by
``sweep.submit``), at most ``parallel_trials`` trials at once. While a trial runs it
reads the trial's log for the ``epoch N/M name=value`` lines (``sweep.objective``: the
lines SageMaker's MetricDefinitions read too) and reports each epoch's objective to
the study; with early stopping, a trial the median rule prunes is cancelled and ends
``stopped``. A trial's objective is its last reported value. The sweep ends
``succeeded`` when a trial succeeded, ``failed`` when none did or ``max_failed_trials``
failed, ``cancelled`` on ``cloudtrain cancel`` (SIGTERM or the ``cancel`` file), which
cancels the running trials first.
"""

from __future__ import annotations

import signal
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from cloudtrain.provider.sweeps import STOPPED, Trial, best_of, describe_values
from cloudtrain.providers.local import Local
from cloudtrain.providers.local.job import LocalJob
from cloudtrain.providers.local.launcher import detach
from cloudtrain.providers.local.records import read_record, write_record
from cloudtrain.providers.local.sweep import (
    CANCEL_FILE,
    EVENTS_FILE,
    REQUEST_FILE,
    STATE_FILE,
    _object,
    read_packed,
    trial_env,
)
from cloudtrain.spec import JobSpec
from cloudtrain.sweep import search, trial_run_id
from cloudtrain.sweep.objective import epoch_value
from cloudtrain.sweep.space import trial_spec
from cloudtrain_runtime.environments import TRIAL_RUN_ENV

if TYPE_CHECKING:
    import optuna

POLL_S = 0.5


@dataclass
class Running:
    """A trial in flight: its Optuna trial, its local run, and the log lines read so far."""

    asked: optuna.Trial
    job: LocalJob
    record: Trial
    lines: int = 0
    reported: dict[int, float] = field(default_factory=dict)


class Driver:
    """One sweep's search loop, recording every change in the sweep folder."""

    def __init__(self, folder: Path, cancelled: threading.Event) -> None:
        self.folder, self.cancelled = folder, cancelled
        request = read_record(folder / REQUEST_FILE, _object)
        assert request is not None  # submit wrote it before starting the driver
        self.request = request
        self.spec = JobSpec.model_validate(request["spec"])
        assert self.spec.tuning is not None
        self.tuning = self.spec.tuning
        self.provider = Local(emulate=request["emulates"])
        self.study = search.create_study(self.tuning)
        # One bundle for every trial, the one the sweep's submit packed, as the clouds' trials share
        # one: a trial's storage root (under the sweep's) never decides what the bundle leaves out.
        self.bundle, self.bundle_uri = read_packed(folder)
        self.trials: list[Trial] = []
        self.running: dict[int, Running] = {}
        self.state: dict[str, str] = {"state": "running", "provider_state": "RUNNING", "detail": ""}

    def run(self) -> None:
        self._record("running", "RUNNING")
        total = int(self.request["trials"]["max"])
        while not self._cancel_requested():
            while len(self.running) < self.request["trials"]["parallel"] and len(self.trials) < total:
                self._start()
            for number in list(self.running):
                self._poll(number)
            if not self.running and (len(self.trials) >= total or self._too_many_failures()):
                return self._finish()
            time.sleep(POLL_S)
        self._cancel()

    def _start(self) -> None:
        asked = search.ask(self.study, self.tuning)
        values = search.values(asked, self.tuning)
        number = len(self.trials) + 1
        run_id = trial_run_id(self.request["run_id"], number)
        spec = trial_spec(self.spec, values)
        planned = (
            self.provider.plan(spec)
            .with_run(run_id)
            .with_hparams(values)
            .with_bundle(self.bundle_uri)
            .with_env({**trial_env(self.request), TRIAL_RUN_ENV: run_id})
        )
        job = self.provider.submit(planned, self.provider.render(planned), self.bundle)
        assert isinstance(job, LocalJob)
        record = Trial(number, run_id, "running", values, job=job.id, model=job.outputs.model)
        self.trials.append(record)
        self.running[number] = Running(asked, job, record)
        self._say(f"trial {number} started ({job.id}): {describe_values(values)}")
        self._save()

    def _poll(self, number: int) -> None:
        running = self.running[number]
        status = running.job.status()
        lines = list(running.job.logs())
        for line in lines[running.lines :]:
            self._report(running, line)
        running.lines = len(lines)
        if running.record.state == STOPPED:
            return self._end(number, "stopped", STOPPED)
        if status.done:
            self._end(number, status.state, status.state, status.detail)

    def _report(self, running: Running, line: str) -> None:
        found = epoch_value(line, self.tuning.objective.metric)
        if found is None or running.record.state == STOPPED:
            return
        epoch, value = found
        running.reported[epoch] = value
        running.asked.report(value, epoch)
        running.record = replace(running.record, objective=value, epochs=len(running.reported))
        self._say(f"trial {running.record.number} epoch {epoch} {self.tuning.objective.metric}={value:.4f}")
        if running.asked.should_prune():
            running.job.cancel()
            running.record = replace(running.record, state=STOPPED, detail="early stopping: below the median")

    def _end(self, number: int, state: str, told: str, detail: str = "") -> None:
        import optuna

        running = self.running.pop(number)
        record = running.record
        value = record.objective
        if state == "succeeded" and value is not None:
            self.study.tell(running.asked, value)
        elif told == STOPPED:
            self.study.tell(running.asked, state=optuna.trial.TrialState.PRUNED)
        else:
            self.study.tell(running.asked, state=optuna.trial.TrialState.FAIL)
            state = "failed" if state == "succeeded" else state
            detail = detail or f"no {self.tuning.objective.metric} was reported"
        record = replace(record, state=state, detail=record.detail or detail)
        self.trials[number - 1] = record
        shown = "" if record.objective is None else f" {self.tuning.objective.metric}={record.objective:.4f}"
        self._say(f"trial {number} {state}{shown}")
        self._save()

    def _too_many_failures(self) -> bool:
        limit = self.request["trials"]["max_failed"]
        return bool(limit) and sum(t.state == "failed" for t in self.trials) >= limit

    def _finish(self) -> None:
        best = best_of(self.trials, self.tuning.objective.goal)
        if self._too_many_failures():
            self._record(
                "failed", "TOO_MANY_FAILURES", f"{self.request['trials']['max_failed']} trials failed."
            )
        elif best is None:
            self._record("failed", "NO_TRIAL_SUCCEEDED", "No trial succeeded with an objective.")
        else:
            metric = self.tuning.objective.metric
            detail = f"best: trial {best.number} {metric}={best.objective:.4f} {describe_values(best.values)}"
            self._say(detail)
            self._record("succeeded", "SUCCEEDED", detail)

    def _cancel_requested(self) -> bool:
        return self.cancelled.is_set() or (self.folder / CANCEL_FILE).exists()

    def _cancel(self) -> None:
        for number, running in list(self.running.items()):
            running.job.cancel()
            running.job.wait(poll_s=1.0)
            self._end(number, "cancelled", "cancelled", "the sweep was cancelled")
        self._record("cancelled", "CANCELLED", "The sweep was cancelled.")

    def _say(self, line: str) -> None:
        with (self.folder / EVENTS_FILE).open("a", encoding="utf-8") as events:
            events.write(line + "\n")

    def _record(self, state: str, provider_state: str, detail: str = "") -> None:
        self.state = {"state": state, "provider_state": provider_state, "detail": detail}
        self._save()

    def _save(self) -> None:
        trials = [trial.to_dict() for trial in self.trials]
        write_record(self.folder / STATE_FILE, {**self.state, "trials": trials})


def main(argv: list[str]) -> None:
    """Entry point: ``[--detach] SWEEP_DIR`` (run through ``sweep.DRIVER_PROGRAM``)."""
    if argv[0] == "--detach":
        argv = argv[1:]
        detach(Path(argv[0]))
    folder = Path(argv[0])
    cancelled = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: cancelled.set())
    driver = Driver(folder, cancelled)
    try:
        driver.run()
    except Exception as exc:  # the sweep must end with a status, whatever went wrong here
        driver._say(f"driver error: {exc!r}")
        driver._record("failed", "DRIVER_ERROR", f"The sweep's driver failed: {exc!r}")
        for running in driver.running.values():
            running.job.cancel()
        raise
