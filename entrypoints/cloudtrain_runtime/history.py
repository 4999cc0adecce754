"""The run's per-epoch history: every attempt's epochs as one curve, kept where a restart finds it.

For each epoch the chief records its metrics, the wall time since the run's first attempt
started (``wall_s``) and of the epoch itself (``epoch_s``), the optimizer steps and the
examples the model has seen so far, the replicas and global batch, and the attempt that
trained it. For each attempt it records the provider job it ran in (``job``: the
provider's job id; ``restart``: the earlier attempts of that same job), the epoch it
resumed from, the epochs it trained, the epochs it threw away, its measured throughput,
and ``lost_s``: the wall time from the end of the last epoch it kept to its own start,
spent on work that was lost and on restarting. So a resumed run's curve is continuous in
epochs and its lost time shows as a gap in wall time.

The file is ``cloudtrain-history.json``; the chief writes it whole after every epoch, to
two places, before the epoch's backup is written:

- **durable**, in the backup folder beside the stamp (``cloudtrain_runtime.backups``): the
  one place every provider hands a restarted attempt. SageMaker syncs
  ``/opt/ml/checkpoints`` to ``CheckpointConfig.S3Uri`` and restores it into the
  restarted job (https://docs.aws.amazon.com/sagemaker/latest/dg/model-checkpoints.html), while ``/opt/ml/output/data`` starts empty;
  Vertex and the local provider read the folder from storage. After the verified export
  the folder is emptied, this copy with it (where the provider keeps the backup, SageMaker,
  it stays): the published copy is whole by then, and an attempt of a finished run trains
  nothing (``Backups.finished``). The folder is the run's own (``ROOT/runs/<run_id>/checkpoints``): a history there
  of another run, or one that cannot be read, is left as it is and stops the attempt with
  one error, as another run's backup does (``cloudtrain_runtime.backups``).
- **published**, beside the result (``Locations.history_file``), where
  ``cloudtrain.outputs.Outputs.history`` finds it (on SageMaker inside ``output.tar.gz``).

Written before the backup, a kill between the two leaves an epoch in the history that the
backup lacks; the restarted attempt trains it again and its record replaces the earlier one
(one record per epoch, the latest attempt's). Each write goes to a ``.partial`` file that
then replaces the old one, so a kill mid-write leaves the previous history whole.

Example:
>>> found = new("run-1", started_at=100.0, epochs=2)
>>> found = begin_attempt(found, job="job-1", started_at=100.0, resumed_from=0, replicas=1, global_batch=8)
>>> found = record_epoch(found, epoch=1, metrics={"loss": 0.5}, now=110.0, epoch_s=9.0, steps=4)
>>> found["epochs"][0]["wall_s"], found["epochs"][0]["examples"], curves(found)
(10.0, 32, {'loss': [0.5]})
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cloudtrain_runtime import backups
from cloudtrain_runtime.config import COUNT_MAX, RuntimeConfig
from cloudtrain_runtime.errors import ConfigError
from cloudtrain_runtime.inputs import loads

FORMAT = 1
# Where the provider names this attempt's job: SageMaker's training job, Vertex AI's custom job.
JOB_ENV = ("TRAINING_JOB_NAME", "CLOUD_ML_JOB_ID")
_NUMBER = (int, float)
_EXAMPLES_MAX = 2**63 - 1


@dataclass(frozen=True)
class Identity:
    """Which run this process trains, and in which provider job (None where nothing names one)."""

    run: str | None
    job: str | None


def identity(config: RuntimeConfig, env: Mapping[str, str]) -> Identity:
    """The run every attempt shares and this attempt's provider job.

    The one place the runtime learns them: the run is what backups key on
    (``backups.run_id``: ``RuntimeConfig.run_id``, else ``CLOUDTRAIN_RUN_ID``), the job is
    the provider's id of the running job (``TRAINING_JOB_NAME``, ``CLOUD_ML_JOB_ID``), else
    the run's: a plain local run's attempts are told apart by their restart count alone.
    """
    job = next((env[name] for name in JOB_ENV if env.get(name)), None)
    run = backups.run_id(config, env)
    return Identity(run=run, job=job or run)


def new(run: str, *, started_at: float, epochs: int) -> dict[str, Any]:
    """An empty history of ``run``, whose first attempt started at ``started_at`` (Unix seconds)."""
    return {
        "format": FORMAT,
        "run": run,
        "started_at": started_at,
        "epochs_planned": epochs,
        "attempts": [],
        "epochs": [],
    }


def begin_attempt(
    history: Mapping[str, Any],
    *,
    job: str | None,
    started_at: float,
    resumed_from: int,
    replicas: int,
    global_batch: int,
) -> dict[str, Any]:
    """``history`` with a new attempt that started at ``started_at`` and resumes after epoch ``resumed_from``.

    Records after ``resumed_from`` are dropped (their weights were not restored) and listed
    as the attempt's ``discarded_epochs``.
    """
    kept = [record for record in history["epochs"] if record["epoch"] <= resumed_from]
    discarded = [record["epoch"] for record in history["epochs"] if record["epoch"] > resumed_from]
    started_s = max(0.0, started_at - history["started_at"])
    attempts = history["attempts"]
    attempt = {
        "attempt": len(attempts) + 1,
        "job": job,
        "restart": sum(1 for earlier in attempts if earlier["job"] == job),
        "started_s": round(started_s, 3),
        "resumed_from_epoch": resumed_from,
        "lost_s": round(max(0.0, started_s - (kept[-1]["wall_s"] if kept else 0.0)), 3) if attempts else 0.0,
        "epochs": [],
        "discarded_epochs": discarded,
        "replicas": replicas,
        "global_batch": global_batch,
        "throughput": None,
    }
    return {**history, "attempts": [*attempts, attempt], "epochs": kept}


def record_epoch(
    history: Mapping[str, Any],
    *,
    epoch: int,
    metrics: Mapping[str, float],
    now: float,
    epoch_s: float,
    steps: int,
) -> dict[str, Any]:
    """``history`` with the current attempt's record of ``epoch`` (1-based), replacing any earlier one."""
    attempt = history["attempts"][-1]
    before = [record for record in history["epochs"] if record["epoch"] < epoch]
    seen = before[-1]["examples"] if before else 0
    record = {
        "epoch": epoch,
        "attempt": attempt["attempt"],
        "metrics": dict(metrics),
        "wall_s": round(now - history["started_at"], 3),
        "epoch_s": round(epoch_s, 3),
        "steps": steps,
        "examples": seen + steps * attempt["global_batch"],
        "replicas": attempt["replicas"],
        "global_batch": attempt["global_batch"],
    }
    current = {**attempt, "epochs": sorted({*attempt["epochs"], epoch})}
    return {**history, "attempts": [*history["attempts"][:-1], current], "epochs": [*before, record]}


def with_throughput(history: Mapping[str, Any], measured: Mapping[str, Any]) -> dict[str, Any]:
    """``history`` with the current attempt's throughput measurement (``callbacks.Throughput.result``)."""
    current = {**history["attempts"][-1], "throughput": dict(measured)}
    return {**history, "attempts": [*history["attempts"][:-1], current]}


def curves(history: Mapping[str, Any]) -> dict[str, list[float | None]]:
    """Each metric's values in epoch order, None where an epoch did not log it."""
    names = dict.fromkeys(name for record in history["epochs"] for name in record["metrics"])
    return {name: [record["metrics"].get(name) for record in history["epochs"]] for name in names}


def epochs(history: Mapping[str, Any]) -> list[int]:
    """The epochs the history holds, in order."""
    return [record["epoch"] for record in history["epochs"]]


def lost_seconds(history: Mapping[str, Any]) -> float:
    """Wall time every restart cost: the sum of the attempts' ``lost_s``."""
    return round(sum(attempt["lost_s"] for attempt in history["attempts"]), 3)


def merged_throughput(history: Mapping[str, Any], *, global_batch: int) -> dict[str, Any]:
    """One examples/s over every attempt that measured one, and each attempt's own.

    The measured steps and seconds of those attempts add up; an attempt too short to
    measure (its first epoch only) counts for nothing. ``steady`` holds when every
    counted attempt was timed after its full warm-up (``callbacks.Throughput``), and the
    note says why not, in the attempt's own words.
    """
    measured = [(a["attempt"], a["throughput"]) for a in history["attempts"] if a["throughput"]]
    counted = [result for _, result in measured if result.get("examples_per_sec")]
    steps = sum(int(result["measured_steps"]) for result in counted)
    seconds = sum(float(result["measured_seconds"]) for result in counted)
    rate = steps * global_batch / seconds if steps and seconds else None
    steady = bool(counted) and all(result.get("steady", True) for result in counted)
    notes = [str(result["note"]) for _, result in measured if result.get("note")]
    missing = "no attempt had an epoch after its first one"
    return {
        "examples_per_sec": rate,
        "measured_steps": steps,
        "measured_examples": steps * global_batch,
        "measured_seconds": seconds,
        "warmup_steps": sum(int(result.get("warmup_steps", 0)) for result in counted),
        "global_batch": global_batch,
        "steady": steady,
        "attempts_measured": [attempt for attempt, result in measured if result.get("examples_per_sec")],
        "by_attempt": {str(attempt): result.get("examples_per_sec") for attempt, result in measured},
        "note": None if rate and steady else (notes[0] if notes else missing),
    }


def parse(raw: Any) -> dict[str, Any] | None:
    """The history in ``raw`` (decoded JSON), or None when it is not one this runtime wrote.

    Everything is checked before it is trusted: a file cut short, edited, or from another
    format reads as no history rather than as a wrong one.
    """
    if not isinstance(raw, dict) or raw.get("format") != FORMAT or not isinstance(raw.get("run"), str):
        return None
    if not _finite(raw.get("started_at")) or not _count(raw.get("epochs_planned")):
        return None
    attempts, records = raw.get("attempts"), raw.get("epochs")
    if not isinstance(attempts, list) or not all(map(_is_attempt, attempts)):
        return None
    if not isinstance(records, list) or not all(map(_is_record, records)):
        return None
    numbers = [record["epoch"] for record in records]
    return raw if numbers == sorted(set(numbers)) else None


def _is_attempt(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and _count(value.get("attempt"))
        and (value.get("job") is None or isinstance(value.get("job"), str))
        and all(_finite(value.get(key)) for key in ("started_s", "lost_s"))
        and isinstance(value.get("epochs"), list)
        and isinstance(value.get("discarded_epochs"), list)
        and all(_count(value.get(key)) for key in ("replicas", "global_batch"))
        and (value.get("throughput") is None or _is_throughput(value["throughput"]))
    )


def _is_throughput(value: Any) -> bool:
    rate = value.get("examples_per_sec") if isinstance(value, dict) else "missing"
    return (rate is None or _finite(rate)) and _count(value.get("measured_steps"), zero=True)


def _is_record(value: Any) -> bool:
    metrics = value.get("metrics") if isinstance(value, dict) else None
    return (
        isinstance(metrics, dict)
        and all(isinstance(name, str) and _finite(number) for name, number in metrics.items())
        and all(_count(value.get(key)) for key in ("epoch", "attempt", "replicas", "global_batch"))
        and _count(value.get("steps"), zero=True)
        and _count(value.get("examples"), zero=True, limit=_EXAMPLES_MAX)
        and all(_finite(value.get(key)) for key in ("wall_s", "epoch_s"))
    )


def _count(value: Any, *, zero: bool = False, limit: int = COUNT_MAX) -> bool:
    """A whole number from 1 (0 with ``zero``) to ``limit``: never a boolean, a float or a string."""
    return type(value) is int and (0 if zero else 1) <= value <= limit


def _finite(value: Any) -> bool:
    return type(value) in _NUMBER and math.isfinite(value)


def read(path: Path) -> dict[str, Any] | None:
    """The history at ``path``; None when there is none or it cannot be trusted (see ``parse``)."""
    try:
        return parse(loads(path.read_text()))
    except (OSError, ValueError):
        return None


def write(history: Mapping[str, Any], paths: Iterable[Path]) -> None:
    """Write ``history`` whole to each path, through a ``.partial`` file, so a reader never sees half."""
    text = json.dumps(history, indent=1) + "\n"
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        partial.write_text(text)
        os.replace(partial, path)


def latest(found: Sequence[dict[str, Any] | None], run: str) -> dict[str, Any] | None:
    """Of the histories found, the most advanced one of ``run`` (most attempts, then most epochs)."""
    mine = [history for history in found if history is not None and history["run"] == run]
    return max(mine, key=lambda h: (len(h["attempts"]), len(h["epochs"])), default=None)


@dataclass
class Recorder:
    """The chief's history of this run, kept up to date and written after every epoch.

    Attributes:
        durable: the history in the backup folder (a restarted attempt reads it).
        published: the history beside the result (``Outputs.history``).
        started_at: when this attempt's process started (Unix seconds).
        epochs_planned: the configured epochs.
        replicas, global_batch: this attempt's.
        clock: Unix seconds now.
    """

    durable: Path
    published: Path
    started_at: float
    epochs_planned: int
    replicas: int
    global_batch: int
    clock: Callable[[], float]
    history: dict[str, Any] | None = None

    def __repr__(self) -> str:
        attempts = len(self.history["attempts"]) if self.history else 0
        return f"Recorder(durable={str(self.durable)!r}, attempts={attempts})"

    def begin(self, run: str, job: str | None, resumed_from: int) -> None:
        """Start this attempt in the run's history (read back from either copy) and write it.

        Raises:
            ConfigError: the backup folder holds another run's history, or one that cannot
                be read; it is left as it is.
        """
        durable = read(self.durable)
        if self.durable.exists() and (durable is None or durable["run"] != run):
            whose = (
                "cannot be read (cut short or edited)"
                if durable is None
                else f"belongs to run {durable['run']!r}"
            )
            raise ConfigError(
                f"The history {str(self.durable)!r} {whose}, not to run {run!r}, so it was left as it is. "
                "Point this run at its own storage, or submit it as a new run (cloudtrain submit --new)."
            )
        found = latest([durable, read(self.published)], run)
        base = found or new(run, started_at=self.started_at, epochs=self.epochs_planned)
        self.history = begin_attempt(
            base,
            job=job,
            started_at=self.started_at,
            resumed_from=resumed_from,
            replicas=self.replicas,
            global_batch=self.global_batch,
        )
        self.save()

    def epoch(self, epoch: int, metrics: Mapping[str, float], *, epoch_s: float, steps: int) -> None:
        """Record the 1-based ``epoch`` this attempt just trained, and write the history."""
        assert self.history is not None, "begin() comes first"
        self.history = record_epoch(
            self.history, epoch=epoch, metrics=metrics, now=self.clock(), epoch_s=epoch_s, steps=steps
        )
        self.save()

    def throughput(self, measured: Mapping[str, Any]) -> None:
        """Keep this attempt's throughput measurement (written with the next save)."""
        assert self.history is not None, "begin() comes first"
        self.history = with_throughput(self.history, measured)

    def save(self) -> None:
        assert self.history is not None, "begin() comes first"
        write(self.history, (self.durable, self.published))
