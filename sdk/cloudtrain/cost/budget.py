"""The budget guard: the estimate for the shape a submit would use, against ``limits.max_cost_usd``.

``submit`` (CLI and Python) refuses with BudgetError (exit code 3) when a known estimate
exceeds the limit, unless forced. Without a throughput nothing can be estimated: the
CLI says so when a limit is set, and how to give one.

Example:
>>> BudgetCheck(limit=None, option=None, note="Budget: nothing to estimate.").lines()
['Budget: nothing to estimate.']
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cloudtrain.cost.compare import work_examples
from cloudtrain.cost.inputs import CostSettings
from cloudtrain.cost.option import CostOption, Workload, price_option
from cloudtrain.cost.shapes import Shape
from cloudtrain.cost.throughput import Throughput, parse_throughput
from cloudtrain.cost.units import dollars, duration
from cloudtrain.errors import BudgetError
from cloudtrain.providers import registry

if TYPE_CHECKING:
    from cloudtrain.planning import Plan


@dataclass(frozen=True)
class BudgetCheck:
    """The estimate for the shape a submit would use, against ``limits.max_cost_usd``."""

    limit: float | None
    option: CostOption | None
    note: str = ""  # shown instead of the estimate when there is none; empty: show nothing

    @property
    def over(self) -> bool:
        """True when the estimate is known and above the limit."""
        usd = self.option.usd if self.option else None
        return self.limit is not None and usd is not None and usd > self.limit

    def lines(self) -> list[str]:
        """What submit shows on stderr: the estimate, or why the budget cannot be checked."""
        if self.option is None:
            return [self.note] if self.note else []
        return [f"Estimate: {describe(self.option)}", self._verdict()]

    def _verdict(self) -> str:
        if self.option is None or self.option.usd is None:
            return "Budget: the price is unknown, so the cost cannot be checked against limits.max_cost_usd."
        if self.limit is None:
            return "Budget: no limits.max_cost_usd is set."
        if self.over:
            return f"Budget: over limits.max_cost_usd={self.limit:g}; submit refuses without --force."
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


def check_budget(
    planned: Plan, throughput: str | Throughput | None, settings: CostSettings | None = None
) -> BudgetCheck:
    """Estimate the planned shape; no estimate where nothing is billed or without a throughput."""
    limit = planned.spec.limits.max_cost_usd
    if planned.machine is None or not registry.get(planned.provider).billed:
        return BudgetCheck(limit, None)
    if throughput is None:
        return BudgetCheck(limit, None, _no_throughput(limit))
    settings = settings or CostSettings()
    work, _ = work_examples(planned)
    measured = parse_throughput(throughput)
    shape = Shape(planned.provider, planned.machine, planned.hosts)
    option = price_option(shape, planned.region, planned.spot, Workload(work, measured, settings))
    accelerator = planned.machine.accelerator
    return BudgetCheck(
        limit,
        option,
        f"Budget: no estimate: no relative speed between {measured.accelerator} and {accelerator} "
        f"(catalog/speeds.csv). Measure on {accelerator}, or pass --speeds FILE to cloudtrain cost.",
    )


def _no_throughput(limit: float | None) -> str:
    if limit is None:
        return ""
    return (
        f"Budget: limits.max_cost_usd={limit:g} cannot be checked: no throughput is known. "
        "Pass --throughput RATE@ACCELERATOR (e.g. --throughput 1200@a100-40gb, or the "
        "cloudtrain-throughput.json of a run)."
    )


def enforce_budget(check: BudgetCheck, *, force: bool = False) -> None:
    """Raise BudgetError when the estimate exceeds the limit, unless ``force``."""
    if not check.over or force or check.option is None or check.option.usd is None:
        return
    option, usd = check.option, check.option.usd
    raise BudgetError(
        f"The estimated cost {dollars(usd)} ({option.label} {option.capacity}, {duration(option.hours * 3600)}) "
        f"exceeds limits.max_cost_usd={check.limit:g}. Raise the limit "
        f"(--set limits.max_cost_usd={math.ceil(usd)}), compare cheaper options with "
        "cloudtrain cost JOB --throughput ..., or pass --force to submit anyway."
    )
