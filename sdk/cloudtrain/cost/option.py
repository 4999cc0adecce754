"""One priced option: a shape in a region, on-demand or spot, with its hours and dollars.

- speed = the measured single-device throughput, scaled to the shape's accelerator by
  the relative-speed table, times devices, times the layout's scaling efficiency
  (``efficiency_for``: measured by ``bench`` where the throughput carries a measurement,
  else assumed);
- dollars = billed time (rounded up to the price row's billing increment) × the per-host
  price × hosts. Spot runs take longer by the assumed interruption overhead; where a
  provider's catalog rows publish no spot price, its spot rate is the on-demand rate as
  an upper bound (``SPOT_UPPER_BOUND``), or an assumed discount on it when one is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cloudtrain import catalog
from cloudtrain.cost import inputs
from cloudtrain.cost.inputs import EXTRAPOLATED, MEASURED, CostSettings, Efficiency, Price
from cloudtrain.cost.shapes import PlacedShape, Shape
from cloudtrain.cost.throughput import Throughput
from cloudtrain.cost.units import billed_seconds, charge, run_seconds

# The rate basis of a spot option priced at on-demand because no spot price is published.
SPOT_UPPER_BOUND = "spot ≤ on-demand, exact price unknown"
# The rate basis of a capacity mode the provider does not offer (catalog/capacity.csv).
NOT_OFFERED = "not offered"


@dataclass(frozen=True)
class CostOption(PlacedShape):
    """One way to run the job, with its time and (when the price is known) its cost."""

    spot: bool
    efficiency: Efficiency
    examples_per_sec: float
    hours: float
    billed_hours: float
    usd_per_hour: float | None
    usd: float | None
    rate_basis: str
    price: Price | None
    marks: tuple[str, ...] = ()
    speed_kind: str = MEASURED
    """``measured`` (the throughput's own accelerator) or ``relative speed`` (``catalog/speeds.csv``)."""

    @property
    def capacity(self) -> str:
        return "spot" if self.spot else "on-demand"

    @property
    def known(self) -> bool:
        """True when the option has a dollar figure (its price is known)."""
        return self.usd is not None

    @property
    def upper_bound(self) -> bool:
        """True when the dollars are an upper bound: spot priced at on-demand, the spot price unknown."""
        return self.rate_basis == SPOT_UPPER_BOUND

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields; unknown prices are null, never a number."""
        return {
            **self.placement(),
            "capacity": self.capacity,
            "scaling_efficiency": self.efficiency.value,
            "scaling_basis": self.efficiency.basis,
            "scaling_kind": self.efficiency.kind,
            "speed_kind": self.speed_kind,
            "examples_per_sec": round(self.examples_per_sec, 3),
            "hours": self.hours,
            "billed_hours": self.billed_hours,
            "usd_per_hour": self.usd_per_hour,
            "usd": self.usd,
            "usd_is_upper_bound": self.upper_bound,
            "rate_basis": self.rate_basis,
            "price": inputs.price_summary(self.price),
            "marks": list(self.marks),
        }

    def __repr__(self) -> str:
        usd = "price unknown" if self.usd is None else f"${self.usd:.2f}"
        return (
            f"CostOption({self.provider} {self.region} {self.label} {self.capacity}, "
            f"{self.hours:.3g} h, {usd})"
        )


@dataclass(frozen=True)
class Workload:
    """What every option of one estimate shares: the examples to process, the speed, the model."""

    work: int
    throughput: Throughput
    settings: CostSettings


def device_speed(accelerator: str, measured: Throughput, speeds: dict[str, float | None]) -> float | None:
    """One device's examples/s on ``accelerator``, scaled from the measured one; None if unknown."""
    if accelerator == measured.accelerator:
        return measured.examples_per_sec
    mine, theirs = speeds.get(accelerator), speeds.get(measured.accelerator)
    if mine is None or theirs is None:
        return None
    return measured.examples_per_sec * mine / theirs


def price_option(shape: Shape, region: str, spot: bool, job: Workload) -> CostOption | None:
    """Time and cost of ``shape`` in ``region``; None when its speed cannot be derived."""
    per_device = device_speed(shape.machine.accelerator, job.throughput, job.settings.speeds)
    if per_device is None:
        return None
    efficiency = efficiency_for(shape, job.throughput)
    speed = per_device * shape.devices * efficiency.value
    seconds = run_seconds(job.work, speed, job.settings.spot_overhead if spot else 0.0)
    price = job.settings.prices.lookup(
        shape.provider, region, shape.machine.machine_type, shape.machine.accelerator
    )
    rate, basis = host_rate(price, spot, job.settings)
    billed = billed_seconds(seconds, price.billing_increment_s if price else 1)
    return CostOption(
        **shape.placed(region),
        spot=spot,
        efficiency=efficiency,
        examples_per_sec=speed,
        hours=seconds / 3600,
        billed_hours=billed / 3600,
        usd_per_hour=None if rate is None else rate * shape.hosts,
        usd=None if rate is None else charge(billed, rate, shape.hosts),
        rate_basis=basis,
        price=price,
        speed_kind=MEASURED if shape.machine.accelerator == job.throughput.accelerator else "relative speed",
    )


def efficiency_for(shape: Shape, measured: Throughput) -> Efficiency:
    """The scaling efficiency of ``shape``: measured where ``bench`` measured this layout, else derived.

    - one device: 1.0, nothing to synchronise;
    - the layout ``bench`` ran (its hosts and devices per host, on its accelerator): the
      measured efficiency;
    - another layout: the catalog's assumption for it, times the measured efficiency over
      the catalog's assumption for the measured layout (on the shape's provider): the
      measurement's gain or loss against the catalog, carried over; at most 1;
    - without a measurement, or where the measured layout has no machine: the assumption.
    """
    assumed = inputs.scaling_efficiency(shape.machine, shape.hosts)
    scaling = measured.scaling
    if scaling is None or shape.devices == 1:
        return assumed
    layout = f"{scaling.replicas} replicas on {scaling.hosts} host(s) of {measured.accelerator}"
    same = (shape.hosts, shape.machine.devices, shape.machine.accelerator)
    if same == (scaling.hosts, scaling.per_host, measured.accelerator):
        return Efficiency(scaling.efficiency, f"measured by bench: {layout}", assumed.label, MEASURED)
    reference = catalog.machine_for(shape.provider, measured.accelerator, scaling.per_host)
    if reference is None:
        return assumed
    base = inputs.scaling_efficiency(reference, scaling.hosts).value
    value = min(1.0, assumed.value * scaling.efficiency / base)
    basis = (
        f"extrapolated: {scaling.efficiency:.2f} measured on {layout} × {assumed.value:.2f} assumed here "
        f"/ {base:.2f} assumed there"
    )
    return Efficiency(value, basis, assumed.label, EXTRAPOLATED)


def mode_rate(price: Price | None, mode: str, settings: CostSettings) -> tuple[float | None, str]:
    """$/h of one host in capacity ``mode`` and where it comes from; (None, why) when unknown.

    On-demand and spot come from the price row (``host_rate``); the other modes from
    ``capacity_rates.csv``, where a mode the provider does not offer is ``NOT_OFFERED``
    (``catalog/capacity.csv``) and an unknown rate says why rather than borrow another.
    """
    if mode in ("on_demand", "spot"):
        return host_rate(price, mode == "spot", settings)
    if price is None:
        return None, "price unknown"
    offer = catalog.capacity_offers(price.provider).get(mode)
    if offer is None or not offer.serves(price.accelerator):
        return None, NOT_OFFERED
    rate = inputs.capacity_rate(price.provider, mode, price)
    if rate is None:
        return None, f"{mode} rate unknown"
    return rate.usd_per_hour, rate.basis


def host_rate(price: Price | None, spot: bool, settings: CostSettings) -> tuple[float | None, str]:
    """$/h of one host and where it comes from; (None, why) when the price is unknown.

    A spot rate missing from a row is bounded or assumed only when none of the provider's
    rows publishes one (elsewhere it is unknown): the on-demand rate as an upper bound, or
    on-demand less ``settings.spot_discount`` when a discount is given.
    """
    if price is None or price.on_demand is None:
        return None, "price unknown"
    flag = "est." if price.is_estimate else "list"
    if not spot:
        return price.on_demand, flag
    if price.spot is not None:
        return price.spot, flag
    if not settings.prices.publishes_spot(price.provider):
        discount = settings.spot_discount
        if discount == 0:
            return price.on_demand, SPOT_UPPER_BOUND
        return price.on_demand * (1 - discount), f"assumed: on-demand × (1 − {discount:.0%})"
    return None, "spot price unknown"
