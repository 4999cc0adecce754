"""The budget guard: what the job a submit would start can cost, against ``limits.max_cost_usd``.

With a measured throughput, the estimate for the planned shape is checked. Without one
(or when its accelerator has no relative speed to the planned one), the worst case is:
every host billed for all of ``limits.max_runtime`` at the shape's hourly price (the
spot price on spot). ``submit`` (CLI and Python) refuses with BudgetError (exit code 3)
when the figure exceeds the limit, unless forced; an unknown price is said, and refused
only when asked to be strict.

Example:
>>> BudgetCheck(limit=None, option=None, note="Budget: nothing to estimate.").lines()
['Budget: nothing to estimate.']
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cloudtrain import planning
from cloudtrain.cost.compare import work_examples
from cloudtrain.cost.inputs import CostSettings, Price
from cloudtrain.cost.option import CostOption, Workload, host_rate, price_option
from cloudtrain.cost.shapes import Shape
from cloudtrain.cost.throughput import Throughput, parse_throughput
from cloudtrain.cost.units import billed_seconds, charge, dollars, duration
from cloudtrain.errors import BudgetError
from cloudtrain.planning import FROM_THROUGHPUT, WORST_CASE, ExpectedCost
from cloudtrain.sweep import cost as sweep_cost
from cloudtrain.sweep import space

if TYPE_CHECKING:
    from cloudtrain.planning import Plan


@dataclass(frozen=True)
class WorstCase:
    """Every host billed for all of ``limits.max_runtime``: the most the job can cost."""

    label: str
    capacity: str
    region: str
    accelerator: str
    billed_s: int
    usd: float | None
    rate_basis: str
    price: Price | None
    trials: int = 1
    """A sweep's trials, each billed for all of limits.max_runtime (1: a job)."""

    def describe(self) -> str:
        """One line: shape, capacity, region, the runtime limit, dollars and the price's source."""
        money = "price unknown"
        if self.usd is not None and self.price is not None:
            money = f"{dollars(self.usd)} ({self.rate_basis}, price as of {self.price.as_of})"
        each = " each" if self.trials > 1 else ""
        return (
            f"{self.label} {self.capacity} in {self.region} for all of limits.max_runtime{each} "
            f"({duration(self.billed_s)}): {money}"
        )


def worst_case(planned: Plan, settings: CostSettings | None = None) -> WorstCase:
    """The planned shape billed for ``limits.max_runtime`` on every host (the spot rate on spot)."""
    settings = settings or CostSettings()
    machine = planned.machine
    assert machine is not None  # only billed providers are checked, and they plan a machine
    price, rate, basis = _host_rate(planned, settings)
    billed = billed_seconds(planned.max_runtime_s, price.billing_increment_s if price else 1)
    tuning = sweep_cost.of_plan(planned)
    trials = sweep_cost.trials(tuning) if tuning else 1
    sweep = f"{trials} trials × " if tuning else ""
    return WorstCase(
        label=f"{sweep}{planned.hosts} × {machine.machine_type}",
        capacity="spot" if planned.spot else "on-demand",
        region=planned.region,
        accelerator=machine.accelerator,
        billed_s=billed,
        usd=None if rate is None else charge(billed, rate, planned.hosts) * trials,
        rate_basis=basis,
        price=price,
        trials=trials,
    )


@dataclass(frozen=True)
class BudgetCheck:
    """The figure for the shape a submit would use, against ``limits.max_cost_usd``.

    ``option`` is the estimate from a measured throughput; ``worst`` the worst case,
    used when there is no estimate. ``limit`` is None when there is nothing to check.
    """

    limit: float | None
    option: CostOption | None
    note: str = ""  # shown before the figures (or alone when there is none); empty: nothing
    worst: WorstCase | None = None
    unscaled: Throughput | None = None
    """A throughput given that could not be scaled to the shape's accelerator (no relative speed)."""

    @property
    def usd(self) -> float | None:
        """The dollars checked: the estimate's, else the worst case's; None when unknown."""
        if self.option is not None:
            return self.option.usd
        return self.worst.usd if self.worst is not None else None

    @property
    def over(self) -> bool:
        """True when the figure is known and above the limit."""
        return self.limit is not None and self.usd is not None and self.usd > self.limit

    @property
    def unchecked(self) -> bool:
        """True when a limit is set but no dollar figure exists to check it against."""
        return self.limit is not None and self.usd is None

    def lines(self) -> list[str]:
        """What submit shows on stderr: the figure and the verdict, or why there is none."""
        note = [self.note] if self.note else []
        if self.option is not None:
            return [*note, f"Estimate: {describe(self.option)}", self._verdict()]
        if self.worst is not None:
            return [*note, f"Worst case: {self.worst.describe()}", self._verdict()]
        return note

    def _verdict(self) -> str:
        if self.usd is None:
            return (
                "Budget: the price is unknown, so the cost cannot be checked against limits.max_cost_usd "
                "(submit --strict-budget refuses such a job)."
            )
        if self.limit is None:
            return "Budget: no limits.max_cost_usd is set."
        if self.over and self.option is None:
            return f"Budget: the worst case is over limits.max_cost_usd={self.limit:g}; submit refuses without --force."
        if self.over:
            return f"Budget: over limits.max_cost_usd={self.limit:g}; submit refuses without --force."
        if self.option is None:
            return f"Budget: within limits.max_cost_usd={self.limit:g} even if every host runs that long."
        return f"Budget: within limits.max_cost_usd={self.limit:g}."


def describe(option: CostOption) -> str:
    """One line: shape, capacity, region, time, dollars, and where the price comes from."""
    if option.usd is None or option.price is None:
        money = "price unknown"
    else:
        money = f"{dollars(option.usd)} ({option.rate_basis}, price as of {option.price.as_of})"
    return (
        f"{option.label} ({option.hosts * option.devices_per_host} × {option.accelerator}) {option.capacity} "
        f"in {option.region}: {duration(option.hours * 3600)} at {option.examples_per_sec:,.0f} examples/s, {money}"
    )


def hourly_usd(planned: Plan, settings: CostSettings | None = None) -> float | None:
    """An hour of the planned shape: every host at its rate (spot on spot); None where unpriced or unbilled."""
    if planned.machine is None or not planned.target.billed:
        return None
    rate = _host_rate(planned, settings or CostSettings())[1]
    return None if rate is None else rate * planned.hosts


def _host_rate(planned: Plan, settings: CostSettings) -> tuple[Price | None, float | None, str]:
    """The planned machine's catalog row, its hourly rate for the planned capacity and the rate's basis."""
    machine = planned.machine
    assert machine is not None  # only billed providers are priced, and they plan a machine
    price = settings.prices.lookup(
        planned.provider, planned.region, machine.machine_type, machine.accelerator
    )
    return (price, *host_rate(price, planned.spot, settings))


def check_budget(
    planned: Plan, throughput: str | Throughput | None, settings: CostSettings | None = None
) -> BudgetCheck:
    """The estimate for the planned shape, or its worst case; nothing where nothing is billed."""
    limit = planned.spec.limits.max_cost_usd
    if planned.machine is None or not planned.target.billed:
        return BudgetCheck(None, None)
    settings = settings or CostSettings()
    tuning = sweep_cost.of_plan(planned)
    if throughput is None:
        note = sweep_cost.note(tuning, planned.spec.training.epochs, worst=True) if tuning and limit else ""
        return BudgetCheck(
            limit, None, note, worst=worst_case(planned, settings) if limit is not None else None
        )
    longest = planning.plan(space.worst_case_spec(planned.spec), planned.target) if tuning else planned
    work, _ = work_examples(longest)
    measured = parse_throughput(throughput)
    shape = Shape(planned.provider, planned.machine, planned.hosts)
    option = price_option(shape, planned.region, planned.spot, Workload(work, measured, settings))
    if option is not None and tuning is not None:
        return BudgetCheck(
            limit, sweep_cost.scaled(option, tuning), sweep_cost.note(tuning, longest.spec.training.epochs)
        )
    if option is not None:
        return BudgetCheck(limit, option)
    accelerator = planned.machine.accelerator
    return BudgetCheck(
        limit,
        None,
        f"Budget: no estimate: no relative speed between {measured.accelerator} and {accelerator} "
        f"(catalog/speeds.csv). Measure on {accelerator}, or pass --speeds FILE to cloudtrain cost.",
        worst=worst_case(planned, settings) if limit is not None else None,
        unscaled=measured,
    )


def expected_cost(
    planned: Plan, throughput: str | Throughput | None = None, settings: CostSettings | None = None
) -> ExpectedCost | None:
    """The figure stored with a billed job at submit: the estimate from ``throughput``, else the worst case.

    None where nothing is billed or the shape's price is unknown. ``status`` and ``list``
    show it beside what the job really cost; its hourly price prices a running job's
    time to finish (``cloudtrain.run_progress``).
    """
    if planned.machine is None or not planned.target.billed:
        return None
    settings = settings or CostSettings()
    hourly = hourly_usd(planned, settings)
    if throughput is not None:
        option = check_budget(planned, throughput, settings).option
        if option is not None and option.usd is not None:
            return ExpectedCost(option.usd, FROM_THROUGHPUT, hourly)
    worst = worst_case(planned, settings).usd
    return None if worst is None else ExpectedCost(worst, WORST_CASE, hourly)


def enforce_budget(check: BudgetCheck, *, force: bool = False, strict: bool = False) -> None:
    """Raise BudgetError over the limit, or (``strict``) when the limit cannot be checked; not if ``force``.

    Raises:
        BudgetError: the estimate, or without one the worst case, exceeds ``limits.max_cost_usd``;
            or ``strict`` and the price is unknown.
    """
    if force:
        return
    if check.over:
        raise BudgetError(_over_message(check))
    if strict and check.unchecked:
        raise BudgetError(
            f"limits.max_cost_usd={check.limit:g} cannot be checked: the price of this shape is unknown, "
            "and --strict-budget refuses a job it cannot check. Compare shapes with known prices: "
            "cloudtrain cost JOB --throughput ...; or pass --force to submit anyway."
        )


def _over_message(check: BudgetCheck) -> str:
    usd = check.usd
    assert usd is not None  # over means the figure is known
    raise_it = f"the limit (--set limits.max_cost_usd={math.ceil(usd)})"
    if check.option is not None:
        option = check.option
        return (
            f"The estimated cost {dollars(usd)} ({option.label} {option.capacity}, "
            f"{duration(option.hours * 3600)}) exceeds limits.max_cost_usd={check.limit:g}. "
            f"Raise {raise_it}, compare cheaper options with cloudtrain cost JOB --throughput ..., "
            "or pass --force to submit anyway."
        )
    worst = check.worst
    assert worst is not None  # a figure without an estimate is the worst case
    return (
        f"The worst-case cost {dollars(usd)} ({worst.label} {worst.capacity} for all of "
        f"limits.max_runtime, {duration(worst.billed_s)}) exceeds limits.max_cost_usd={check.limit:g}. "
        f"{_tighter(worst.accelerator, check.unscaled)} Or lower "
        f"limits.max_runtime, raise {raise_it}, or pass --force to submit anyway."
    )


def _tighter(accelerator: str, unscaled: Throughput | None) -> str:
    """How to replace the worst case by an estimate: a speed measured on the shape's own accelerator.

    A speed measured elsewhere that the relative-speed table cannot scale (a run on this
    machine's CPU, for a GPU job) would be refused the same way, so it is not suggested again.
    """
    measured = (
        f"The throughput given was measured on {unscaled.accelerator}, which catalog/speeds.csv does not "
        f"relate to {accelerator}. "
        if unscaled is not None
        else ""
    )
    return (
        f"{measured}For a tighter estimate, give a speed measured on {accelerator}: --throughput "
        f"1200@{accelerator} (examples/s of one device), or the cloudtrain-throughput.json of a run on "
        f"{accelerator}."
    )
