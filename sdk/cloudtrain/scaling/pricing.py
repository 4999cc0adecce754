"""What a run costs per hour, and where that figure comes from.

- **Billed**: where the provider reports what it billed (``status`` reads it,
  ``cost.actual``): the dollars the catalog's list price gives that billed time, spread
  over the billed hours. This is the job's own price, spot saving and hosts included.
- **Catalog**: a run nothing billed (on this machine, emulated or not) is priced as its
  shape would be: the catalog's on-demand rate of the machine with its accelerator and
  devices per host × its hosts, on the provider it emulated, else on the first billed
  provider whose catalog has that machine, in that provider's region from the profile and
  environment. The source names the machine, rate, region and price date.

A run's dollars at wall time ``t`` are this rate × ``t``: every host bills from the run's
start, restarts included.

Example:
>>> from cloudtrain.spec import JobSpec
>>> settings = JobSpec(name="demo", code={"module": "t"}, storage={"root": "/tmp/x"})
>>> basis = from_catalog("vertex", "t4", 1, 2, settings)
>>> basis.usd_per_hour > 0, basis.source.startswith("catalog: 2 × vertex n1-standard-8")
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cloudtrain import catalog
from cloudtrain.cost.units import dollars

if TYPE_CHECKING:
    from cloudtrain.provider.base import Usage
    from cloudtrain.spec import JobSpec

BILLED = "billed"
CATALOG = "catalog"


@dataclass(frozen=True)
class CostBasis:
    """Dollars per hour of the whole run (None: unknown), how it was found, and where from."""

    usd_per_hour: float | None
    kind: str
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"usd_per_hour": self.usd_per_hour, "kind": self.kind, "source": self.source}


def billed(provider: str, usage: Usage) -> CostBasis:
    """The rate of what ``provider`` billed for the job (``cost.actual``)."""
    from cloudtrain.cost.actual import actual_cost

    spent = actual_cost(provider, usage)
    if spent.usd is None or not spent.billed_s:
        return CostBasis(
            None, BILLED, f"billed {spent.describe()}; no catalog price for {usage.machine_type}"
        )
    return CostBasis(spent.usd / spent.billed_s * 3600, BILLED, f"billed: {spent.describe()}")


def from_catalog(
    provider: str | None, accelerator: str, devices_per_host: int, hosts: int, settings: JobSpec
) -> CostBasis:
    """The on-demand catalog rate of ``hosts`` machines with ``devices_per_host`` × ``accelerator``.

    ``provider`` None: the first billed provider whose catalog has such a machine.
    """
    from cloudtrain.cost.inputs import prices
    from cloudtrain.provider import registry

    names = [provider] if provider else [p.name for p in registry.billed()]
    for name in names:
        machine = catalog.machine_for(name, accelerator, devices_per_host)
        if machine is None:
            continue
        region = registry.get(name).region(settings)
        price = prices().lookup(name, region, machine.machine_type, accelerator)
        if price is None or price.on_demand is None:
            return CostBasis(None, CATALOG, f"catalog: no {name} {region} price for {machine.machine_type}")
        listed = "est." if price.is_estimate else "list"
        return CostBasis(
            price.on_demand * hosts,
            CATALOG,
            f"catalog: {hosts} × {name} {machine.machine_type} at {dollars(price.on_demand)}/h "
            f"({listed}, {region}, as of {price.as_of}); not billed",
        )
    where = provider or "any billed provider"
    return CostBasis(
        None, CATALOG, f"catalog: no {where} machine with {devices_per_host} × {accelerator} per host"
    )
