"""What every shape that fits a job costs per hour, before anyone has measured its speed.

``cloudtrain cost job.yaml`` without ``--throughput`` has no time to multiply by, so it
lists what it can state: for every billed provider, shape and region the job's replica
count fits, the price of all its hosts for one hour on-demand, on spot, with flex-start
and on a reservation, side by side, from the same catalog rows the ranked estimate uses. It needs no ``training.examples_per_epoch``
(the work), only the plan's replica count. SkyPilot's ``sky show-gpus`` answers the same
question for its clouds.

Example:
>>> from cloudtrain.spec import JobSpec
>>> spec = JobSpec(name="demo", code={"module": "trainer.task"}, resources={"accelerator": "t4"})
>>> listed = price_list(spec, providers=("sagemaker",))
>>> row = next(row for row in listed.rows if row.machine_type == "ml.g4dn.xlarge")
>>> row.label, row.on_demand is not None, row.spot_basis
('1 × ml.g4dn.xlarge', True, 'spot ≤ on-demand, exact price unknown')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cloudtrain import catalog
from cloudtrain.cost import inputs
from cloudtrain.cost.compare import billed, plan_of, region_notes, regions_for, runnable
from cloudtrain.cost.inputs import CostSettings, Price
from cloudtrain.cost.option import NOT_OFFERED, mode_rate
from cloudtrain.cost.shapes import PlacedShape, Shape, enumerate_shapes

if TYPE_CHECKING:
    from cloudtrain.spec import JobSpec


@dataclass(frozen=True)
class HourlyPrice(PlacedShape):
    """One shape in one region: what its hosts cost together per hour, on-demand and spot.

    ``rate_basis`` says where the on-demand figure comes from (``list``, ``est.``, or
    ``price unknown``), ``spot_basis`` the same for spot (an upper bound or an assumed
    discount where the provider publishes no spot price).
    """

    on_demand: float | None
    spot: float | None
    rate_basis: str
    spot_basis: str
    price: Price | None
    flex: float | None = None
    flex_basis: str = NOT_OFFERED
    reservation: float | None = None
    reservation_basis: str = NOT_OFFERED
    plan: float | None = None
    plan_basis: str = NOT_OFFERED

    @property
    def devices(self) -> int:
        return self.hosts * self.devices_per_host

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields; an unknown price is null, never a number."""
        return {
            **self.placement(),
            "on_demand_usd_per_hour": self.on_demand,
            "spot_usd_per_hour": self.spot,
            "rate_basis": self.rate_basis,
            "spot_basis": self.spot_basis,
            "flex_usd_per_hour": self.flex,
            "flex_basis": self.flex_basis,
            "reservation_usd_per_hour": self.reservation,
            "reservation_basis": self.reservation_basis,
            "plan_usd_per_hour": self.plan,
            "plan_basis": self.plan_basis,
            "price": inputs.price_summary(self.price),
        }

    def __repr__(self) -> str:
        rate = "price unknown" if self.on_demand is None else f"${self.on_demand:.4g}/h"
        return f"HourlyPrice({self.provider} {self.region} {self.label}, {rate})"


@dataclass(frozen=True)
class PriceList:
    """Every shape's hourly price, by accelerator then cheapest first, and what was left out and why."""

    rows: list[HourlyPrice]
    notes: list[str]
    replicas: int
    settings: CostSettings


def price_list(
    spec: JobSpec,
    *,
    providers: tuple[str, ...] = (),
    regions: tuple[str, ...] = (),
    settings: CostSettings | None = None,
) -> PriceList:
    """The hourly price of every shape with the job's replica count, on every billed provider.

    Args:
        spec: the job; only its planned replica count and strategy matter.
        providers: which providers to list; empty means every billed provider.
        regions: catalog regions to list; empty means each provider's region for the spec.
        settings: price catalog and spot assumptions; default the catalog's.

    Raises:
        SpecError: no provider can plan the job, or a region has no prices.
    """
    settings = settings or CostSettings()
    planned = plan_of(spec)
    names, left_out = runnable(spec, providers or billed(), asked=bool(providers))
    notes = left_out + region_notes(spec, names, regions, settings.prices)
    shapes, skipped = enumerate_shapes(planned, names)
    rows = [
        hourly(shape, region, settings)
        for shape in shapes
        for region in regions_for(spec, shape.provider, regions, settings.prices)
    ]
    order = catalog.accelerator_names()
    rows.sort(
        key=lambda r: (
            order.index(r.accelerator),
            r.on_demand is None,
            r.on_demand or 0.0,
            r.provider,
            r.label,
        )
    )
    return PriceList(rows, skipped + notes, planned.replicas, settings)


def hourly(shape: Shape, region: str, settings: CostSettings) -> HourlyPrice:
    """``shape`` in ``region``: its hosts' dollars per hour in each capacity mode, from the catalog rows.

    On-demand and spot from the price row; flex and a reservation from ``capacity_rates.csv``
    (a reservation already paid for costs a job nothing more).
    """
    machine = shape.machine
    price = settings.prices.lookup(shape.provider, region, machine.machine_type, machine.accelerator)
    rates = {
        mode: mode_rate(price, mode, settings)
        for mode in ("on_demand", "spot", "flex", "reservation", "plan")
    }
    hosts = {mode: None if rate is None else rate * shape.hosts for mode, (rate, _) in rates.items()}
    return HourlyPrice(
        **shape.placed(region),
        on_demand=hosts["on_demand"],
        spot=hosts["spot"],
        rate_basis=rates["on_demand"][1],
        spot_basis=rates["spot"][1],
        price=price,
        flex=hosts["flex"],
        flex_basis=rates["flex"][1],
        reservation=hosts["reservation"],
        reservation_basis=rates["reservation"][1],
        plan=hosts["plan"],
        plan_basis=rates["plan"][1],
    )
