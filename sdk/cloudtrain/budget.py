"""The budget guard: the estimate for the shape a submit would use, against ``limits.max_cost_usd``.

``submit`` (CLI and Python) refuses with BudgetError (exit code 3) when a known estimate
exceeds the limit, unless forced. Without a throughput nothing can be estimated: the
CLI says so when a limit is set, and how to give one.

Example:
>>> BudgetCheck(limit=5.0, option=None, throughput_given=False).lines()[0][:47]
'Budget: limits.max_cost_usd=5 cannot be checked'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cloudtrain.cost import (
    CostOption,
    CostSettings,
    Shape,
    Workload,
    dollars,
    duration,
    price_option,
    work_examples,
)
from cloudtrain.errors import BudgetError
from cloudtrain.throughput import Throughput, parse_throughput

if TYPE_CHECKING:
    from cloudtrain.planning import Plan


@dataclass(frozen=True)
class BudgetCheck:
    """The estimate for the shape a submit would use, against ``limits.max_cost_usd``."""

    limit: float | None
    option: CostOption | None
    throughput_given: bool

    @property
    def over(self) -> bool:
        """True when the estimate is known and above the limit."""
        usd = self.option.usd if self.option else None
        return self.limit is not None and usd is not None and usd > self.limit

    def lines(self) -> list[str]:
        """What submit shows on stderr: the estimate, or why the budget cannot be checked."""
        if not self.throughput_given:
            if self.limit is None:
                return []
            return [
                f"Budget: limits.max_cost_usd={self.limit:g} cannot be checked: no throughput is known. "
                "Pass --throughput RATE@ACCELERATOR (e.g. --throughput 1200@a100-40gb, or the "
                "cloudtrain-throughput.json of a local run)."
            ]
        if self.option is None:
            return []
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
    """Estimate the planned shape; no estimate for the local provider or without a throughput."""
    limit = planned.spec.limits.max_cost_usd
    if throughput is None or planned.machine is None:
        return BudgetCheck(limit, None, throughput is not None)
    settings = settings or CostSettings()
    work, _ = work_examples(planned.spec)
    region = planned.spec.vertex.region if planned.provider == "vertex" else planned.spec.sagemaker.region
    shape = Shape(planned.provider, planned.machine, planned.hosts)
    option = price_option(shape, region, planned.spot, Workload(work, parse_throughput(throughput), settings))
    return BudgetCheck(limit, option, True)


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
