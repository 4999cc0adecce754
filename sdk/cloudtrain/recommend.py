"""``bench``'s recommendation: the job's options priced from what bench measured of this model.

The guides' last sanity check, "price three options for your actual model: one large GPU
instance, N smaller instances, and a TPU slice", with this model's own numbers: every
layout of the spec's replica count on every billed provider (one host with all the
devices, several smaller hosts, a TPU slice where the spec's strategy can drive one:
``cost.shapes``), priced by ``cost.compare.report`` from the throughput bench measured.

- speed per device: the 1-replica run's, measured on its accelerator; another
  accelerator's is extrapolated by ``catalog/speeds.csv`` (``CostOption.speed_kind``);
- scaling efficiency: measured for the layout bench ran, extrapolated to the others,
  assumed where nothing was measured (``cost.option.efficiency_for``);
- per epoch: the option's time and dollars over the spec's epochs; to a target, times the
  epochs a ``compare`` run of the same replica count needed to reach it.

The throughput is read from the bench result's JSON exactly as ``cloudtrain cost
--throughput bench.json`` reads it (``cost.throughput.from_bench``), so both rank alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudtrain import files
from cloudtrain.cost.compare import Estimate, plan_of, report
from cloudtrain.cost.throughput import MAX_FILE_BYTES, from_bench
from cloudtrain.errors import SpecError

if TYPE_CHECKING:
    from cloudtrain.bench import BenchResult
    from cloudtrain.cost.option import CostOption
    from cloudtrain.spec import JobSpec


@dataclass(frozen=True)
class Target:
    """Epochs a run of the job's replica count needed to reach a target, and which ``compare`` said so."""

    epochs: int
    source: str


@dataclass(frozen=True)
class Recommendation:
    """The ranked options, per epoch and (given a target) to the target."""

    estimate: Estimate
    epochs: int
    target: Target | None

    def __repr__(self) -> str:
        return f"Recommendation(options={len(self.estimate.options)}, epochs={self.epochs}, target={self.target})"

    def per_epoch(self, option: CostOption) -> tuple[float, float | None]:
        """Hours and dollars of one epoch on ``option``."""
        return option.hours / self.epochs, None if option.usd is None else option.usd / self.epochs

    def to_target(self, option: CostOption) -> tuple[float, float | None] | None:
        """Hours and dollars to the target on ``option``; None without a target."""
        if self.target is None:
            return None
        hours, usd = self.per_epoch(option)
        return hours * self.target.epochs, None if usd is None else usd * self.target.epochs

    def to_json(self) -> dict[str, Any]:
        options = []
        for option in self.estimate.options:
            hours, usd = self.per_epoch(option)
            reach = self.to_target(option)
            extra = {"hours_to_target": reach[0], "usd_to_target": reach[1]} if reach else {}
            options.append({**option.to_dict(), "hours_per_epoch": hours, "usd_per_epoch": usd, **extra})
        target = None if self.target is None else {"epochs": self.target.epochs, "source": self.target.source}
        return {"epochs": self.epochs, "target": target, "options": options, "notes": self.estimate.notes}


def recommend(result: BenchResult, spec: JobSpec, *, target: Target | None = None) -> Recommendation:
    """The spec's options priced from ``result``, per epoch and, given ``target``, to it.

    Raises:
        SpecError: the spec gives no size of an epoch (``training.examples_per_epoch``).
    """
    found = report(spec, throughput=from_bench(result.to_json(), "this bench"))
    return Recommendation(found, spec.training.epochs, target)


def load_target(path: str | Path, spec: JobSpec) -> Target:
    """The epochs to its target of the run of ``spec``'s replica count in a ``compare --json`` file.

    Raises:
        SpecError: the file is not one, or holds no such run that reached the target.
    """
    return epochs_to_target(_read(path), plan_of(spec).replicas, str(path))


def epochs_to_target(comparison: dict[str, Any], replicas: int, source: str) -> Target:
    """The epochs the compared run with ``replicas`` replicas took to its target.

    Raises:
        SpecError: no compared run has that replica count and reached the target.
    """
    runs = comparison.get("runs") if isinstance(comparison, dict) else None
    for run in runs if isinstance(runs, list) else []:
        reached = run.get("reached_target") if isinstance(run, dict) else None
        if (
            run.get("replicas") == replicas
            and isinstance(reached, dict)
            and type(reached.get("epoch")) is int
        ):
            target = comparison.get("target", {})
            what = (
                f"{comparison.get('metric')} {target.get('value')}"
                if isinstance(target, dict)
                else "the target"
            )
            return Target(
                reached["epoch"], f"{run.get('label')} reached {what} in {reached['epoch']} epochs ({source})"
            )
    raise SpecError(
        f"{source} has no run of {replicas} replicas that reached its target, so no epochs to the target. "
        "Compare a run of the spec's shape, or leave out --target-from."
    )


def _read(path: str | Path | None) -> dict[str, Any]:
    try:
        data = files.read_json(str(path), limit=MAX_FILE_BYTES)
    except FileNotFoundError:
        raise SpecError(f"--target-from {path}: no such file. Pass what compare --json wrote.") from None
    except files.UnreadableFile as error:
        raise SpecError(f"--target-from {path}: not a compare --json file ({error.problem})") from None
    if not isinstance(data, dict):
        raise SpecError(f"--target-from {path}: not a compare --json file (expected a JSON object).")
    return data
