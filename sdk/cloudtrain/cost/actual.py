"""What a job really cost, from what its provider says it billed: the other half of the estimate.

The provider reports its own measure (``Usage``): SageMaker's ``BillableTimeInSeconds``
per instance, which already holds a managed-spot saving; Vertex AI's start and end
times for every replica. The dollars are that time, rounded up to the price row's
billing increment (30 s on Vertex AI, whole seconds on SageMaker:
``catalog/price_sources.csv``), times the host's rate from the catalog, times the hosts.
It is the catalog's list price, so a negotiated discount or a price change since the
run is not in it: ``cost`` says when its prices were last refreshed.

Example:
>>> from cloudtrain.provider.base import Usage
>>> used = Usage("us-east-1", "ml.g4dn.xlarge", "t4", hosts=2, seconds=301, spot=False, measure="billed")
>>> spent = actual_cost("sagemaker", used)
>>> spent.billed_s, spent.usd == 2 * 301 / 3600 * spent.price.on_demand
(301, True)
"""

from __future__ import annotations

from dataclasses import dataclass

from cloudtrain.cost.inputs import CostSettings, Price
from cloudtrain.cost.option import host_rate
from cloudtrain.cost.units import billed_seconds, charge, dollars
from cloudtrain.provider.base import Usage


@dataclass(frozen=True)
class ActualCost:
    """Dollars a job was charged (None: the catalog has no price for its shape), and how.

    ``billed_s`` is each host's billed time after the increment; ``rate_basis`` says
    which rate applied (``list``, ``est.``, or why it is unknown).
    """

    usd: float | None
    billed_s: int
    hosts: int
    rate_basis: str
    price: Price | None
    measure: str

    def describe(self) -> str:
        """One line: dollars, the hosts and billed time, and where the time came from."""
        money = "price unknown" if self.usd is None else dollars(self.usd)
        return f"{money} ({self.hosts} × {self.billed_s} s billed, {self.measure})"


def actual_cost(provider: str, usage: Usage, settings: CostSettings | None = None) -> ActualCost:
    """Price ``usage`` on ``provider`` from the catalog, with the row's billing increment."""
    settings = settings or CostSettings()
    price = settings.prices.lookup(provider, usage.region, usage.machine_type, usage.accelerator)
    rate, basis = host_rate(price, usage.spot, settings)
    billed = billed_seconds(usage.seconds, price.billing_increment_s if price else 1)
    return ActualCost(
        usd=None if rate is None else charge(billed, rate, usage.hosts),
        billed_s=billed,
        hosts=usage.hosts,
        rate_basis=basis,
        price=price,
        measure=usage.measure,
    )
