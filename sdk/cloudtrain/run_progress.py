"""Where a running job's training is, when it will finish, and what finishing will cost.

The chief writes a progress record beside the run's history (``cloudtrain_runtime.progress``):
the epoch and step, the steps per epoch and the recent rate. The steps left over that rate
is the time left, less the time since the record was written (the steps trained since); the
cost to finish is that time at the job's hourly price: the one stored with the job at submit
(``planning.ExpectedCost.usd_per_hour``, the same estimate ``list`` shows), where one is
known. A job its provider does not bill (local) says so rather than show a price. A job whose
provider cannot read the record back shows none (``provider.ReportsProgress``).

Example:
>>> found = parse({"epoch": 2, "epochs": 4, "step": 50, "steps_per_epoch": 100, "steps_per_s": 10.0,
...                "examples_per_s": 320.0, "loss": 0.5, "wall_s": 15.0, "attempt": 1, "updated_at": 100.0},
...               now=105.0, hourly_usd=36.0)
>>> found.steps_left, found.eta_s, round(found.to_finish_usd, 2)
(250, 20.0, 0.2)
>>> describe(found)
'epoch 2/4, step 50/100, 320 examples/s, loss 0.5, ETA 20 s, ~$0.2000 to finish'
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from cloudtrain.cost.units import clock_time, dollars
from cloudtrain.provider import registry
from cloudtrain.provider.base import Job, ReportsProgress

if TYPE_CHECKING:
    from cloudtrain.provider.base import JobSummary

_NUMBER = (int, float)


@dataclass(frozen=True)
class TrainingProgress:
    """A job's progress as its chief last recorded it, with the ETA and cost to finish from it.

    Attributes:
        epoch, epochs: the epoch under way (1-based) and the epochs planned.
        step, steps_per_epoch: the last step finished in that epoch, and its steps (None
            before the first epoch ended where Keras did not know them).
        steps_per_s, examples_per_s: the recent rate (None before two steps).
        loss: the last loss Keras reported.
        wall_s: seconds since the attempt started; ``attempt`` its number in the run's history.
        updated_at: when the chief wrote the record (Unix seconds).
        steps_left: steps until the last epoch ends; None where the steps per epoch are unknown.
        eta_s: seconds until then; None without a rate.
        to_finish_usd: the cost of those seconds at the job's hourly price; None where unknown
            or not billed.
        billed: whether the job's provider bills it (False: local, where nothing is charged).
    """

    epoch: int
    epochs: int
    step: int
    steps_per_epoch: int | None
    steps_per_s: float | None
    examples_per_s: float | None
    loss: float | None
    wall_s: float
    attempt: int | None
    updated_at: float
    steps_left: int | None
    eta_s: float | None
    to_finish_usd: float | None
    billed: bool = True

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``status --json``'s ``progress``."""
        return asdict(self)


def parse(
    raw: object, *, now: float, hourly_usd: float | None = None, billed: bool = True
) -> TrainingProgress | None:
    """The record in ``raw`` (decoded JSON) with its ETA at ``now``; None when it is not one the runtime wrote.

    ``hourly_usd`` prices the time left (None: unknown); a job that is not ``billed`` costs nothing to finish.
    """
    if not isinstance(raw, dict) or not all(_count(raw.get(key)) for key in ("epoch", "epochs")):
        return None
    if not _count(raw.get("step"), zero=True) or not all(
        _number(raw.get(k)) for k in ("wall_s", "updated_at")
    ):
        return None
    spe, rate = raw.get("steps_per_epoch"), raw.get("steps_per_s")
    optional = (("steps_per_s", _number), ("examples_per_s", _number), ("loss", _number), ("attempt", _count))
    if (spe is not None and not _count(spe)) or any(
        raw.get(k) is not None and not ok(raw.get(k)) for k, ok in optional
    ):
        return None
    left = steps_left(raw["epoch"], raw["epochs"], raw["step"], spe)
    eta = eta_s(left, rate, since_s=now - raw["updated_at"])
    return TrainingProgress(
        epoch=raw["epoch"],
        epochs=raw["epochs"],
        step=raw["step"],
        steps_per_epoch=spe,
        steps_per_s=rate,
        examples_per_s=raw.get("examples_per_s"),
        loss=raw.get("loss"),
        wall_s=raw["wall_s"],
        attempt=raw.get("attempt"),
        updated_at=raw["updated_at"],
        steps_left=left,
        eta_s=eta,
        to_finish_usd=to_finish_usd(eta, hourly_usd) if billed else None,
        billed=billed,
    )


def steps_left(epoch: int, epochs: int, step: int, steps_per_epoch: int | None) -> int | None:
    """The steps until the last epoch ends: the rest of this one and every later one.

    >>> steps_left(3, 30, 120, 400)
    11080
    """
    if steps_per_epoch is None:
        return None
    return max(0, (epochs - epoch) * steps_per_epoch + steps_per_epoch - step)


def eta_s(steps: int | None, steps_per_s: float | None, *, since_s: float = 0.0) -> float | None:
    """Seconds until ``steps`` more at ``steps_per_s``, less the ``since_s`` already trained since the rate was read.

    >>> eta_s(1000, 10.0, since_s=30.0)
    70.0
    >>> eta_s(1000, 10.0, since_s=500.0), eta_s(None, 10.0), eta_s(10, None)
    (0.0, None, None)
    """
    if steps is None or not steps_per_s or steps_per_s <= 0:
        return None
    return max(0.0, steps / steps_per_s - max(0.0, since_s))


def to_finish_usd(eta: float | None, hourly_usd: float | None) -> float | None:
    """The cost of ``eta`` seconds at ``hourly_usd`` for the whole job.

    >>> to_finish_usd(7800.0, 38.4)
    83.2
    """
    if eta is None or hourly_usd is None:
        return None
    return round(eta / 3600 * hourly_usd, 4)


def of_job(job: Job, *, now: float, summary: JobSummary | None = None) -> TrainingProgress | None:
    """``job``'s progress at ``now``; None where its provider cannot read it or the chief wrote none yet.

    ``summary`` is the job as ``list`` shows it: the hourly price of the estimate stored
    with it at submit prices the time left (none given, or none stored: no cost to finish).
    A job its provider does not bill says so.
    """
    if not isinstance(job, ReportsProgress):
        return None
    estimate = summary.estimate if summary is not None else None
    return parse(
        job.progress_record(),
        now=now,
        hourly_usd=estimate.usd_per_hour if estimate is not None else None,
        billed=registry.get(job.provider).billed,
    )


def describe(found: TrainingProgress) -> str:
    """One line for ``status``: where training is, how fast, and when and for how much it finishes."""
    steps = f"{found.steps_per_epoch}" if found.steps_per_epoch else "?"
    parts = [f"epoch {found.epoch}/{found.epochs}", f"step {found.step}/{steps}"]
    if found.examples_per_s is not None:
        parts.append(f"{found.examples_per_s:,.0f} examples/s")
    if found.loss is not None:
        parts.append(f"loss {found.loss:.4g}")
    parts.append("ETA " + ("?" if found.eta_s is None else clock_time(found.eta_s)))
    if not found.billed:
        parts.append("not billed")
    elif found.to_finish_usd is not None:
        parts.append(f"~{dollars(found.to_finish_usd)} to finish")
    return ", ".join(parts)


def short(found: TrainingProgress | None) -> str:
    """A few characters for ``list``: the epoch, and the ETA and cost to finish where known.

    >>> short(None)
    '-'
    """
    if found is None:
        return "-"
    eta = "" if found.eta_s is None else f" ETA {clock_time(found.eta_s, compact=True)}"
    usd = "" if found.to_finish_usd is None else f" ~{dollars(found.to_finish_usd)}"
    return f"{found.epoch}/{found.epochs}{eta}{usd}"


def _count(value: Any, *, zero: bool = False) -> bool:
    return type(value) is int and value >= (0 if zero else 1)


def _number(value: Any) -> bool:
    return type(value) in _NUMBER and math.isfinite(value)
