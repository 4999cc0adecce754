"""One finished (or running) training run as ``compare`` sees it: its shape, its curve, its speed and price.

A run is named by what the user has at hand:

- a job ID any provider owns (``local:<run>``, a Vertex AI custom job, a SageMaker
  training-job ARN), or a local run folder's name: the job is attached, and its
  ``Job.outputs`` say where the result and the history are, read back by the provider's
  own ``read_output`` (on SageMaker out of ``output.tar.gz``, streamed);
- an output folder on this machine (holding ``cloudtrain-history.json``), or the path of
  its result file;
- a storage URI (``gs://…``, ``s3://…/output.tar.gz``) of the same, read by the provider
  whose scheme it is;
- given the plan of a spec (``compare --spec job.yaml --provider P``), a run ID of it
  (``--run-id`` at submit): its artifacts are under ``ROOT/runs/<run_id>``
  (``Plan.with_run``). Where the result's place depends on a job name (SageMaker's
  ``output.tar.gz``), the run's history is read from its backup folder, which SageMaker
  keeps, and its shape from the plan.

The history (``cloudtrain_runtime.history``) gives the curve: every epoch's metrics, the
wall time since the run started, the examples seen. The result beside it gives the
shape (replicas, hosts, devices, global batch, learning rate); a run still training has
no result yet and is read from its history alone. The price comes from ``pricing``.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudtrain import files
from cloudtrain.errors import CloudtrainError, JobNotFoundError, ProviderError, SpecError
from cloudtrain.messages import quote, shorten
from cloudtrain.scaling.pricing import CostBasis, billed, from_catalog
from cloudtrain_runtime import history as run_history
from cloudtrain_runtime.config import COUNT_MAX
from cloudtrain_runtime.inputs import loads
from cloudtrain_runtime.replica import HISTORY_FILE, RESULT_FILE

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from cloudtrain.planning import Plan
    from cloudtrain.provider.base import Job, Provider, ReadsOutputs
    from cloudtrain.spec import JobSpec


# A history or result file is a few MB at most, as the clouds' read_output caps them.
MAX_FILE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class EpochPoint:
    """One epoch of a run's curve: when it ended (seconds since the run started), what the model had seen."""

    epoch: int
    wall_s: float
    epoch_s: float
    examples: int
    attempt: int
    metrics: Mapping[str, float]


@dataclass(frozen=True)
class RunRecord:
    """A run's shape, curve, speed and price, read from its outputs.

    Attributes:
        label: how the user named it (a job ID, a folder, a URI).
        run: the run's ID, from its history.
        provider: where it ran (``local`` for a run on this machine, emulated or not);
            ``""`` when read from a folder or URI alone.
        accelerator: the accelerator the spec asked for; ``measured_on`` what the speed
            describes (``cpu`` where devices were emulated).
        hosts, devices_per_host, replicas, global_batch: the run's shape.
        learning_rate: the scaled rate it trained with (None: its result is not written yet).
        strategy: the tf.distribute strategy ("" when unknown).
        points: the curve, one point per epoch.
        examples_per_sec: the training speed; ``speed_basis`` says how it was measured.
        time_lost_s: wall time restarts cost; ``attempts`` how many attempts the run took.
        cost: dollars per hour of the whole run, and where that figure comes from.
    """

    label: str
    run: str
    provider: str
    accelerator: str
    measured_on: str
    hosts: int
    devices_per_host: int
    replicas: int
    global_batch: int
    learning_rate: float | None
    strategy: str
    points: tuple[EpochPoint, ...]
    examples_per_sec: float | None
    speed_basis: str
    time_lost_s: float
    attempts: int
    cost: CostBasis

    def __repr__(self) -> str:
        return f"RunRecord(label={self.label!r}, replicas={self.replicas}, epochs={len(self.points)})"

    @property
    def shape(self) -> str:
        """The hardware in words: ``2 hosts × 1 t4``."""
        return f"{self.hosts} host{'s' * (self.hosts != 1)} × {self.devices_per_host} {self.accelerator}"

    @property
    def wall_s(self) -> float:
        """Seconds from the run's start to its last epoch's end."""
        return self.points[-1].wall_s if self.points else 0.0

    def usd_at(self, wall_s: float) -> float | None:
        """What the run had cost after ``wall_s`` seconds (None: its price is unknown)."""
        rate = self.cost.usd_per_hour
        return None if rate is None else rate * wall_s / 3600

    def metrics(self) -> list[str]:
        """The metric names its epochs logged, in the order first logged."""
        return list(dict.fromkeys(name for point in self.points for name in point.metrics))

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "run": self.run,
            "provider": self.provider,
            "shape": self.shape,
            "accelerator": self.accelerator,
            "measured_on": self.measured_on,
            "hosts": self.hosts,
            "devices_per_host": self.devices_per_host,
            "replicas": self.replicas,
            "global_batch": self.global_batch,
            "learning_rate": self.learning_rate,
            "strategy": self.strategy,
            "examples_per_sec": self.examples_per_sec,
            "speed_basis": self.speed_basis,
            "wall_s": self.wall_s,
            "time_lost_s": self.time_lost_s,
            "attempts": self.attempts,
            "cost": self.cost.to_json(),
            "epochs": [
                {
                    "epoch": p.epoch,
                    "wall_s": p.wall_s,
                    "epoch_s": p.epoch_s,
                    "examples": p.examples,
                    "attempt": p.attempt,
                    "usd": self.usd_at(p.wall_s),
                    "metrics": dict(p.metrics),
                }
                for p in self.points
            ],
        }


@dataclass(frozen=True)
class Found:
    """What a run left in storage, and what is known about where it ran."""

    history: dict[str, Any]
    result: dict[str, Any]
    provider: str
    priced_on: str | None
    """The billed provider whose catalog prices it (None: the first that has its shape)."""
    job: Job | None


def read_run(ref: str, *, settings: JobSpec, clients: Any = None, planned: Plan | None = None) -> RunRecord:
    """The run ``ref`` names: a job ID, a local run folder's name, an output folder or path, a URI,
    or with ``planned`` (a spec's plan) a run ID of that spec.

    ``settings`` (the profile and environment, ``specfile.load_settings``) say where a
    cloud's outputs are read from (project, region) and which region prices a run that
    was not billed. ``clients`` are the provider's clients (tests, custom transports).

    Raises:
        CloudtrainError: ``ref`` names nothing that holds a run's history, with what it tried.
    """
    found = _find(ref, settings, clients, planned)
    return record(ref, found, cost=_cost(found, settings))


def _find(ref: str, settings: JobSpec, clients: Any, planned: Plan | None) -> Found:
    from cloudtrain.provider import registry

    if "://" not in ref and os.path.exists(ref):  # False for a name too long to be a path, too
        return _from_folder(Path(ref))
    if "://" in ref and not ref.startswith(("http://", "https://")):
        provider = _by_scheme(ref)
        read = _reader(provider, settings, clients)
        return _from_files(ref, _sources(ref), read, provider="", priced_on=provider.name, job=None)
    for job_id in (ref, f"local:{ref}"):
        owner = next((p for p in registry.providers() if p.owns(job_id)), None)
        if owner is not None and (job_id == ref or _attaches(owner, job_id)):
            return _from_job(job_id, owner, settings, clients)
    if planned is not None:
        return _from_run(ref, planned, clients)
    raise CloudtrainError(
        f"{quote(ref)} is not a job ID, a local run, an output folder or a storage URI. Pass what submit "
        "printed (e.g. local:demo-20260101-120000-0a1b), the folder holding cloudtrain-history.json, "
        "or its gs:// or s3:// URI."
    )


def _from_run(run_id: str, planned: Plan, clients: Any) -> Found:
    """Run ``run_id`` of the planned spec, read where that plan puts its artifacts."""
    from cloudtrain.outputs import JOB
    from cloudtrain.provider import registry
    from cloudtrain.provider.base import ReadsOutputs

    provider = registry.get(planned.provider)
    outputs = planned.with_run(run_id).outputs
    if not isinstance(provider, ReadsOutputs):
        raise CloudtrainError(
            f"The {provider.name} provider cannot read a job's outputs back, so compare cannot."
        )
    history = outputs.history if JOB not in outputs.history else f"{outputs.backup}/{HISTORY_FILE}"
    result = outputs.result if JOB not in outputs.result else f"{outputs.backup}/{RESULT_FILE}"

    def read(uri: str) -> bytes:
        return provider.read_output(planned, uri, clients=clients)

    priced_on = provider.name if provider.billed else None
    found = _from_files(run_id, (history, result), read, provider.name, priced_on, job=None)
    attempts = found.history["attempts"]
    if found.result or not attempts or attempts[-1]["replicas"] != planned.replicas:
        return found  # the run's own shape differs from the plan's: the history alone
    return dataclasses.replace(found, result=_planned_shape(planned))


def _planned_shape(planned: Plan) -> dict[str, Any]:
    """The shape the plan gives the run: what its result would say, where the result cannot be read."""
    return {
        "hosts": planned.hosts,
        "devices_per_host": planned.devices_per_host,
        "learning_rate": planned.learning_rate,
        "accelerator": planned.spec.resources.accelerator,
        "strategy": planned.strategy,
    }


def _attaches(provider: Provider, job_id: str) -> bool:
    """Whether ``provider`` has a job ``job_id``: a run folder's name counts only where its run exists."""
    try:
        provider.attach(job_id)
    except (ProviderError, JobNotFoundError):
        return False
    return True


def read_stored(label: str, read: Callable[[str], bytes], *, settings: JobSpec) -> RunRecord:
    """The run whose history and result files ``read`` gives by their names (an MLflow run's artifacts).

    ``read`` raises ``ProviderError`` for a file that is not there: a run without a result
    (still training, or failed before the export) is read from its history alone.
    """
    found = _from_files(label, (HISTORY_FILE, RESULT_FILE), read, provider="", priced_on=None, job=None)
    return record(label, found, cost=_cost(found, settings))


def _from_folder(path: Path) -> Found:
    folder = path if path.is_dir() else path.parent

    def read(file: str) -> bytes:
        try:
            return files.read_bytes(file, limit=MAX_FILE_BYTES)
        except FileNotFoundError:
            raise ProviderError(f"{file}: cannot be read (No such file or directory).") from None
        except files.UnreadableFile as error:
            raise ProviderError(str(error)) from None

    paths = (str(folder / HISTORY_FILE), str(folder / RESULT_FILE))
    return _from_files(str(path), paths, read, provider="", priced_on=None, job=None)


def _sources(uri: str) -> tuple[str, str]:
    """The history and result URIs of an output URI: a folder, its result file, or an archive."""
    base = uri.rstrip("/")
    if base.endswith(".tar.gz"):
        return f"{base}#{HISTORY_FILE}", f"{base}#{RESULT_FILE}"
    if base.endswith((f"/{RESULT_FILE}", f"#{RESULT_FILE}")):
        base = base[: -len(RESULT_FILE) - 1]
        joint = uri[len(base)]
        return f"{base}{joint}{HISTORY_FILE}", f"{base}{joint}{RESULT_FILE}"
    return f"{base}/{HISTORY_FILE}", f"{base}/{RESULT_FILE}"


def _from_job(job_id: str, owner: Provider, settings: JobSpec, clients: Any) -> Found:
    job = owner.attach(job_id, clients=clients)
    outputs = job.outputs
    if not outputs.history:
        raise CloudtrainError(
            f"{job_id} ran before cloudtrain recorded a per-epoch history, so it cannot be compared. Run it again."
        )
    emulated = (job.request or {}).get("emulates") if owner.name == "local" else None
    read = _reader(owner, settings, clients)
    priced_on = emulated or (owner.name if owner.billed else None)
    return _from_files(job_id, (outputs.history, outputs.result), read, owner.name, priced_on, job)


def _from_files(
    label: str,
    uris: Sequence[str],
    read: Callable[[str], bytes],
    provider: str,
    priced_on: str | None,
    job: Job | None,
) -> Found:
    """The history (required) and the result (absent while the run trains) at ``uris``."""
    history_uri, result_uri = uris
    history = run_history.parse(_json(read(history_uri), history_uri))
    if history is None:
        raise CloudtrainError(
            f"{history_uri} is not a history cloudtrain wrote (cut short, edited, or of another version)."
        )
    try:
        result = _json(read(result_uri), result_uri)
    except ProviderError:  # still training, or failed before the export: the history alone
        result = {}
    return Found(history, _checked_result(result, result_uri), provider, priced_on, job)


def _json(data: bytes, where: str) -> Any:
    try:
        return loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise CloudtrainError(f"{where} is not JSON ({shorten(str(error))}).") from None


# The result's fields compare reads, as ``cloudtrain_runtime.session`` writes them.
RESULT_COUNTS = ("replicas", "hosts", "devices_per_host", "global_batch")
RESULT_TEXTS = ("accelerator", "strategy")
TEXT_MAX = 200


def _checked_result(result: Any, where: str) -> dict[str, Any]:
    """``result`` when every field compare reads is what the runtime writes there, else one error line.

    Raises:
        CloudtrainError: the result is not a JSON object, or a field is of another type or
            out of range (a count past the runtime's int32, a throughput that is a number).
    """
    problem = _result_problem(result)
    if problem is not None:
        raise CloudtrainError(
            f"{where} is not a cloudtrain result: {problem}. Restore the file the run wrote, "
            "or remove it to compare the run by its history alone."
        )
    return dict(result)


def _result_problem(result: Any) -> str | None:
    if not isinstance(result, dict):
        return "expected a JSON object"
    for key in RESULT_COUNTS:
        if result.get(key) is not None and not _is_count(result[key]):
            return f"{key} must be a whole number from 1 to {COUNT_MAX:,}, not {quote(result[key])}"
    if result.get("learning_rate") is not None and _number(result["learning_rate"]) is None:
        return f"learning_rate must be a finite number, not {quote(result['learning_rate'])}"
    for key in RESULT_TEXTS:
        if not _is_text(result.get(key)):
            return f"{key} must be a string of at most {TEXT_MAX} characters"
    throughput = result.get("throughput")
    if throughput is None:
        return None
    if not isinstance(throughput, dict):
        return f"throughput must be an object (examples_per_sec, accelerator), not {quote(throughput)}"
    rate = throughput.get("examples_per_sec")
    if rate is not None and (_number(rate) is None or rate < 0):
        return f"throughput.examples_per_sec must be a finite number >= 0, not {quote(rate)}"
    return (
        None if _is_text(throughput.get("accelerator")) else "throughput.accelerator must be a short string"
    )


def _is_count(value: Any) -> bool:
    return type(value) is int and 1 <= value <= COUNT_MAX


def _is_text(value: Any) -> bool:
    return value is None or (isinstance(value, str) and len(value) <= TEXT_MAX)


def _by_scheme(uri: str) -> ReadsOutputs:
    from cloudtrain.provider import registry
    from cloudtrain.provider.base import ReadsOutputs

    for provider in registry.providers():
        if isinstance(provider, ReadsOutputs) and any(uri.startswith(s) for s in provider.schemes):
            return provider
    raise CloudtrainError(f"{uri}: no provider reads {uri.split('://')[0]}:// storage.")


def _reader(provider: Provider, settings: JobSpec, clients: Any) -> Callable[[str], bytes]:
    """``read_output`` of ``provider``, with the plan of the settings it needs (project, region)."""
    from cloudtrain.provider.base import ReadsOutputs

    if not isinstance(provider, ReadsOutputs):
        raise CloudtrainError(
            f"The {provider.name} provider cannot read a job's outputs back, so compare cannot."
        )
    try:
        planned = provider.plan(settings)
    except SpecError as error:
        raise SpecError(
            [
                f"Reading {provider.name} outputs needs its settings in your profile or environment:",
                *error.problems,
            ]
        ) from None
    return lambda uri: provider.read_output(planned, uri, clients=clients)


def _cost(found: Found, settings: JobSpec) -> CostBasis:
    summary = getattr(found.job, "summary", None)
    usage = summary().usage if callable(summary) else None
    if usage is not None:
        return billed(found.provider, usage)
    shape = _shape(found.history, found.result)
    return from_catalog(
        found.priced_on, shape["accelerator"], shape["devices_per_host"], shape["hosts"], settings
    )


def record(label: str, found: Found, *, cost: CostBasis) -> RunRecord:
    """A run's record from its history and result."""
    history, result = found.history, found.result
    points = tuple(
        EpochPoint(
            epoch=r["epoch"],
            wall_s=float(r["wall_s"]),
            epoch_s=float(r["epoch_s"]),
            examples=r["examples"],
            attempt=r["attempt"],
            metrics=r["metrics"],
        )
        for r in history["epochs"]
    )
    speed, basis = _speed(result, points)
    shape = _shape(history, result)
    return RunRecord(
        label=label,
        run=history["run"],
        provider=found.provider,
        accelerator=shape["accelerator"],
        measured_on=str(result.get("throughput", {}).get("accelerator") or shape["accelerator"]),
        hosts=shape["hosts"],
        devices_per_host=shape["devices_per_host"],
        replicas=shape["replicas"],
        global_batch=shape["global_batch"],
        learning_rate=_number(result.get("learning_rate")),
        strategy=str(result.get("strategy", "")),
        points=points,
        examples_per_sec=speed,
        speed_basis=basis,
        time_lost_s=run_history.lost_seconds(history),
        attempts=len(history["attempts"]),
        cost=cost,
    )


def _shape(history: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Any]:
    """Replicas, hosts, devices, global batch and accelerator: the result's, else the last attempt's."""
    last = history["attempts"][-1] if history["attempts"] else {"replicas": 1, "global_batch": 0}
    replicas = _whole(result.get("replicas")) or last["replicas"]
    hosts = _whole(result.get("hosts")) or 1
    return {
        "replicas": replicas,
        "global_batch": _whole(result.get("global_batch")) or last["global_batch"],
        "hosts": hosts,
        "devices_per_host": _whole(result.get("devices_per_host")) or max(1, replicas // hosts),
        "accelerator": str(result.get("accelerator") or "unknown"),
    }


def _speed(result: Mapping[str, Any], points: Sequence[EpochPoint]) -> tuple[float | None, str]:
    """Examples/s: the runtime's measurement after warm-up, else the epochs' own times.

    Without a measurement (a short run never passes the warm-up steps), each attempt's
    first epoch is left out, as it compiles the step; with one epoch per attempt, every
    epoch counts. Validation is in the epochs' time either way.
    """
    measured = _number(result.get("throughput", {}).get("examples_per_sec"))
    if measured:
        return measured, "measured by the runtime after its warm-up steps"
    previous = [0, *(p.examples for p in points)]
    spans = [(p, p.examples - seen) for p, seen in zip(points, previous, strict=False)]
    firsts = {p.attempt: p.epoch for p in reversed(points)}
    steady = [(p, n) for p, n in spans if firsts[p.attempt] != p.epoch] or spans
    seconds = sum(p.epoch_s for p, _ in steady)
    if not seconds:
        return None, "no epoch was timed"
    which = "epochs after each attempt's first" if len(steady) < len(spans) else "every epoch"
    return sum(n for _, n in steady) / seconds, f"{which}, validation included"


def _number(value: Any) -> float | None:
    """``value`` as a finite float; None for anything else (a boolean, a string, NaN, a 400-digit int)."""
    if type(value) not in (int, float) or (type(value) is int and abs(value) > COUNT_MAX):
        return None
    return float(value) if math.isfinite(value) else None


def _whole(value: Any) -> int | None:
    return value if type(value) is int and value > 0 else None
