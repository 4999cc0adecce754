"""Did scaling pay? Runs side by side at equal epochs, equal wall time and equal cost, and the verdict.

The guides' rule, made exact: a run 4× faster in examples/s that needs 5× the epochs to
reach the same validation metric is slower to that metric, so compare against the
single-device baseline at equal epochs, then at equal time and equal cost, and judge by
the time and the dollars to a target value.

- **Target**: ``METRIC=VALUE`` as given, else the best value of the metric that the
  slowest-converging run reached (the worst of the runs' best values): every run
  reaches it, so every run has a time and a cost to it.
- **Metric**: the target's, else one every run logged: a validation metric where higher
  is better (accuracy, AUC), else any validation metric, else any. A name with loss,
  error, mae, mse, mape or perplexity in it is better lower.
- **Baseline**: the run with the fewest replicas (the first given, of equals). Every
  other run gets a verdict against it: the speed-up in examples/s, the epochs-to-target
  ratio, the time and cost ratios to the target, and what each had reached at equal cost.

Example:
>>> parse_target("val_accuracy=0.95")
('val_accuracy', 0.95)
>>> higher_is_better("val_loss"), higher_is_better("val_binary_accuracy")
(False, True)
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cloudtrain.cost.units import dollars, duration
from cloudtrain.errors import SpecError, did_you_mean
from cloudtrain.scaling.runs import EpochPoint, RunRecord

MAX_RUNS = 26  # each run is shown by a letter, A to Z
_LOWER_IS_BETTER = re.compile(r"loss|error|mae|mse|mape|perplexity", re.IGNORECASE)
# Two dollar amounts this close are the same budget (float sums of per-second rates).
_SAME_USD = 1e-9

PAID = "paid"
PAID_IN_TIME = "paid in time, not in money"
NOT_PAID = "did not pay"
UNKNOWN = "cannot tell"


def higher_is_better(metric: str) -> bool:
    """Whether a larger ``metric`` is better: not for losses and errors."""
    return _LOWER_IS_BETTER.search(metric) is None


def parse_target(text: str) -> tuple[str, float]:
    """``METRIC=VALUE`` as the metric's name and a finite number.

    Raises:
        SpecError: naming the value received and the form expected.
    """
    name, equals, value = text.partition("=")
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not equals or not name.strip() or not math.isfinite(number):
        raise SpecError(
            f"--target must be METRIC=VALUE with a finite number, e.g. --target val_accuracy=0.95. Received: {text!r}"
        )
    return name.strip(), number


@dataclass(frozen=True)
class Target:
    """The value a run must reach; ``basis`` says where it came from."""

    metric: str
    value: float
    higher_is_better: bool
    basis: str

    def met(self, value: float | None) -> bool:
        if value is None:
            return False
        return value >= self.value if self.higher_is_better else value <= self.value

    def __str__(self) -> str:
        return f"{self.metric} {'≥' if self.higher_is_better else '≤'} {self.value:.4g}"


@dataclass(frozen=True)
class Reached:
    """When a run first reached the target: its epoch, wall time, dollars and examples seen."""

    epoch: int
    wall_s: float
    usd: float | None
    examples: int


@dataclass(frozen=True)
class Verdict:
    """One scaled run against the baseline, in numbers and in words."""

    baseline: str
    scaled: str
    speedup: float | None
    epochs_ratio: float | None
    time_ratio: float | None
    cost_ratio: float | None
    wins_at_equal_cost: bool | None
    kind: str
    text: str

    def to_json(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "scaled": self.scaled,
            "speedup_examples_per_sec": self.speedup,
            "epochs_to_target_ratio": self.epochs_ratio,
            "time_to_target_ratio": self.time_ratio,
            "cost_to_target_ratio": self.cost_ratio,
            "wins_at_equal_cost": self.wins_at_equal_cost,
            "verdict": self.kind,
            "text": self.text,
        }


@dataclass(frozen=True)
class Comparison:
    """Runs side by side: the target, when each reached it, each at equal time and cost, the verdicts.

    ``at_equal_time`` holds each run's best value by ``equal_time_s`` (the shortest run's
    wall time); ``at_equal_cost`` by ``equal_usd`` (the cheapest run's dollars), None
    where a price is unknown or the run had finished no epoch by then.
    """

    runs: tuple[RunRecord, ...]
    target: Target
    reached: tuple[Reached | None, ...]
    equal_time_s: float
    at_equal_time: tuple[float | None, ...]
    equal_usd: float | None
    at_equal_cost: tuple[float | None, ...]
    baseline: int
    verdicts: tuple[Verdict, ...]

    def __repr__(self) -> str:
        kinds = [verdict.kind for verdict in self.verdicts]
        return f"Comparison(runs={[run.label for run in self.runs]}, target={str(self.target)!r}, verdicts={kinds})"

    @property
    def metric(self) -> str:
        return self.target.metric

    @property
    def names(self) -> tuple[str, ...]:
        """Each run's letter, A first, in the order given: how tables, verdicts and the plot name them."""
        return names(len(self.runs))

    def table(self) -> list[tuple[int, list[float | None]]]:
        """The metric at each epoch, one column per run (None: the run did not train that epoch)."""
        last = max((run.points[-1].epoch for run in self.runs if run.points), default=0)
        values = [{p.epoch: p.metrics.get(self.metric) for p in run.points} for run in self.runs]
        return [(epoch, [found.get(epoch) for found in values]) for epoch in range(1, last + 1)]

    def to_json(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "higher_is_better": self.target.higher_is_better,
            "target": {"value": self.target.value, "basis": self.target.basis},
            "baseline": self.runs[self.baseline].label,
            "runs": [
                {
                    "name": name,
                    **run.to_json(),
                    "reached_target": None if found is None else vars(found),
                    "at_equal_time": at_time,
                    "at_equal_cost": at_cost,
                }
                for name, run, found, at_time, at_cost in zip(
                    self.names, self.runs, self.reached, self.at_equal_time, self.at_equal_cost, strict=True
                )
            ],
            "equal_time_s": self.equal_time_s,
            "equal_usd": self.equal_usd,
            "table": [{"epoch": epoch, "values": values} for epoch, values in self.table()],
            "verdicts": [verdict.to_json() for verdict in self.verdicts],
        }


def compare_runs(
    runs: Sequence[RunRecord], *, target: str | None = None, metric: str | None = None
) -> Comparison:
    """Put ``runs`` side by side and judge every one against the baseline (see the module).

    Raises:
        SpecError: fewer than two runs, a run without epochs, or a metric (or target) that
            not every run logged.
    """
    if not 2 <= len(runs) <= MAX_RUNS:
        raise SpecError(
            f"compare needs 2 to {MAX_RUNS} runs. Received: {len(runs)}. "
            "Pass two or more run or job IDs, folders or URIs."
        )
    empty = [run.label for run in runs if not run.points]
    if empty:
        raise SpecError(f"{empty[0]} has not finished an epoch yet, so there is nothing to compare.")
    goal = _target(runs, target, metric)
    reached = tuple(first_reached(run, goal) for run in runs)
    equal_time = min(run.wall_s for run in runs)
    totals = [run.usd_at(run.wall_s) for run in runs]
    known = [usd for usd in totals if usd is not None]
    equal_usd = min(known) if len(known) == len(totals) else None
    at_time = tuple(best_until(run, goal, lambda p: p.wall_s <= equal_time) for run in runs)
    at_cost = tuple(_at_cost(run, goal, equal_usd) for run in runs)
    base = min(range(len(runs)), key=lambda i: runs[i].replicas)
    letters = names(len(runs))
    verdicts = tuple(
        judge(
            (letters[base], runs[base]),
            (letters[i], runs[i]),
            goal,
            (reached[base], reached[i]),
            (at_cost[base], at_cost[i]),
            equal_usd,
        )
        for i in range(len(runs))
        if i != base
    )
    return Comparison(tuple(runs), goal, reached, equal_time, at_time, equal_usd, at_cost, base, verdicts)


def names(count: int) -> tuple[str, ...]:
    """``A``, ``B``, ...: the letters of ``count`` runs.

    Example:
    >>> names(3)
    ('A', 'B', 'C')
    """
    return tuple(chr(ord("A") + i) for i in range(count))


def _target(runs: Sequence[RunRecord], text: str | None, metric: str | None) -> Target:
    """The target given, or the best value the slowest-converging run reached."""
    if text is not None:
        name, value = parse_target(text)
        _require_metric(runs, name)
        return Target(name, value, higher_is_better(name), "--target")
    name = choose_metric(runs, metric)
    better = higher_is_better(name)
    bests = []
    for letter, run in zip(names(len(runs)), runs, strict=True):
        best = best_until(run, _any(name, better), lambda p: True)
        assert best is not None  # every run logged the metric (choose_metric)
        bests.append((best if better else -best, best, letter))
    _, worst, letter = min(bests)
    return Target(name, worst, better, f"the best {name} of the slowest-converging run, {letter}")


def _any(metric: str, better: bool) -> Target:
    """A target every value meets: for ``best_until`` over a whole run."""
    return Target(metric, -math.inf if better else math.inf, better, "")


def choose_metric(runs: Sequence[RunRecord], metric: str | None) -> str:
    """``metric`` if every run logged it, else a validation metric every run logged (see the module).

    Raises:
        SpecError: ``metric`` is not logged by every run, or no metric is.
    """
    if metric is not None:
        _require_metric(runs, metric)
        return metric
    common = [name for name in runs[0].metrics() if all(name in run.metrics() for run in runs[1:])]
    ranked = sorted(common, key=lambda n: (not n.startswith("val_"), not higher_is_better(n)))
    if not ranked:
        raise SpecError("The runs logged no metric in common, so they cannot be compared.")
    return ranked[0]


def _require_metric(runs: Sequence[RunRecord], metric: str) -> None:
    for run in runs:
        if metric not in run.metrics():
            raise SpecError(
                f"{run.label} logged no {metric!r}.{did_you_mean(metric, run.metrics(), 'metrics')}"
            )


def first_reached(run: RunRecord, target: Target) -> Reached | None:
    """The first epoch at which ``run`` met ``target``, or None if it never did."""
    for point in run.points:
        if target.met(point.metrics.get(target.metric)):
            return Reached(point.epoch, point.wall_s, run.usd_at(point.wall_s), point.examples)
    return None


def best_until(run: RunRecord, target: Target, within: Any) -> float | None:
    """The best value of the target's metric over the epochs ``within(point)`` keeps; None: none kept."""
    values = [v for p in run.points if within(p) and (v := p.metrics.get(target.metric)) is not None]
    if not values:
        return None
    return max(values) if target.higher_is_better else min(values)


def _at_cost(run: RunRecord, target: Target, usd: float | None) -> float | None:
    if usd is None:
        return None

    def spent(point: EpochPoint) -> bool:
        cost = run.usd_at(point.wall_s)
        return cost is not None and cost <= usd + _SAME_USD

    return best_until(run, target, spent)


def judge(
    base: tuple[str, RunRecord],
    scaled: tuple[str, RunRecord],
    target: Target,
    reached: tuple[Reached | None, Reached | None],
    at_cost: tuple[float | None, float | None],
    equal_usd: float | None,
) -> Verdict:
    """The run ``scaled`` (its letter, its record) against ``base``: ratios to the target, equal cost, in words."""
    (base_name, first_run), (name, run) = base, scaled
    first, then = reached
    speedup = _ratio(run.examples_per_sec, first_run.examples_per_sec)
    epochs = _ratio(then.epoch if then else None, first.epoch if first else None)
    time = _ratio(then.wall_s if then else None, first.wall_s if first else None)
    cost = _ratio(then.usd if then else None, first.usd if first else None)
    wins = None if None in at_cost else _better(target, at_cost[1], at_cost[0])
    kind = _kind(first, then, time, cost)
    facts = _facts(first_run, run, target, reached, (speedup, epochs, time, cost))
    if equal_usd is not None and None not in at_cost:
        facts.append(
            f"at equal cost ({dollars(equal_usd)}) it had reached {at_cost[1]:.4g} against {at_cost[0]:.4g}"
        )
    head = f"{name} ({_shape(run)}) against {base_name} ({_shape(first_run)})"
    text = f"{head}: {'; '.join(facts)}. {_conclusion(kind, speedup, epochs, run.time_lost_s)}"
    return Verdict(first_run.label, run.label, speedup, epochs, time, cost, wins, kind, text)


def _shape(run: RunRecord) -> str:
    return f"{run.shape}, {run.replicas} replica{'s' * (run.replicas != 1)}"


def _facts(
    base: RunRecord,
    scaled: RunRecord,
    target: Target,
    reached: tuple[Reached | None, Reached | None],
    ratios: tuple[float | None, float | None, float | None, float | None],
) -> list[str]:
    first, then = reached
    speedup, epochs, time, cost = ratios
    facts = []
    if speedup is not None and base.examples_per_sec and scaled.examples_per_sec:
        facts.append(
            f"{speedup:.2f}× the examples/s ({scaled.examples_per_sec:,.0f} vs {base.examples_per_sec:,.0f})"
        )
    if first is None or then is None:
        if first is None and then is None:
            facts.append(f"neither reached {target}")
        else:
            facts.append(f"{'it' if then is None else 'the baseline'} never reached {target}")
        return facts
    facts.append(f"{epochs:.2f}× the epochs to {target} ({then.epoch} vs {first.epoch})")
    facts.append(f"{time:.2f}× the time to it ({duration(then.wall_s)} vs {duration(first.wall_s)})")
    if cost is not None and then.usd is not None and first.usd is not None:
        facts.append(f"{cost:.2f}× the cost to it ({dollars(then.usd)} vs {dollars(first.usd)})")
    return facts


def _kind(first: Reached | None, then: Reached | None, time: float | None, cost: float | None) -> str:
    if then is None:
        return UNKNOWN if first is None else NOT_PAID
    if first is None:
        return PAID
    if time is None:
        return UNKNOWN
    if time >= 1:
        return NOT_PAID
    return PAID_IN_TIME if cost is not None and cost > 1 else PAID


def _conclusion(kind: str, speedup: float | None, epochs: float | None, lost_s: float) -> str:
    """The verdict's last sentence: what the numbers before it add up to, and what ate a speed-up."""
    if kind == PAID:
        return "Scaling paid: it reached the target sooner, and for no more money."
    if kind == PAID_IN_TIME:
        return "Scaling paid in time, not in money: it reached the target sooner, for more dollars."
    if kind == UNKNOWN:
        return "Cannot tell: pass a --target both runs reached."
    if speedup is not None and speedup <= 1:
        fewer = (
            f"; {epochs:.2f}× the epochs could not make up for it"
            if epochs is not None and epochs < 1
            else ""
        )
        return f"Scaling did not pay: it trained on fewer examples per second than the baseline{fewer}."
    if speedup is None or epochs is None:
        return "Scaling did not pay: it was no sooner at the target."
    if epochs >= speedup:
        return f"Scaling did not pay: {epochs:.2f}× the epochs ate the {speedup:.2f}× speed-up."
    if lost_s:
        return (
            f"Scaling did not pay: the {speedup:.2f}× speed-up outran {epochs:.2f}× the epochs, "
            f"but restarts lost {duration(lost_s)}."
        )
    return (
        f"Scaling did not pay: the {speedup:.2f}× speed-up outran {epochs:.2f}× the epochs, "
        "but the time outside the training steps (start-up, compilation, validation) did not shrink."
    )


def _better(target: Target, value: float | None, than: float | None) -> bool | None:
    if value is None or than is None:
        return None
    return value > than if target.higher_is_better else value < than


def _ratio(value: float | None, base: float | None) -> float | None:
    return value / base if value is not None and base else None
