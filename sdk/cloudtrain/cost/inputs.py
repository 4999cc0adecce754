"""The cost model's inputs besides the job: prices, relative speeds, scaling and assumptions.

All of them are catalog rows (``cloudtrain.catalog.rows``), so a provider's own
``catalog_dir`` rows are priced like the shipped ones. Prices are managed-training prices
per host-hour, one row per provider, region and machine shape, each with its source,
as-of date, billing increment and whether it is an estimate (with the formula). An empty
price means unknown: it is never replaced by a guess. Relative speeds, scaling
efficiencies and the spot assumptions are rows too, so a user can see and override
every number.

Example:
>>> prices().regions()
['eu-west-1', 'europe-west4', 'us-central1', 'us-east-1']
>>> nvlink = scaling()["intra", "nvlink"]
>>> nvlink.value, nvlink.label
(0.9, 'NVLink')
>>> assumptions()["spot_interruption_overhead"].value
0.1
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cloudtrain import catalog
from cloudtrain.errors import SpecError, did_you_mean

PRICE_FIELDS = (
    "provider",
    "region",
    "machine_type",
    "accelerator",
    "on_demand_usd_per_hour",
    "spot_usd_per_hour",
    "billing_increment_s",
    "as_of",
    "is_estimate",
    "formula",
    "source",
)


@dataclass(frozen=True)
class Price:
    """Managed-training price of one host of one shape in one region; None means unknown."""

    provider: str
    region: str
    machine_type: str
    accelerator: str
    on_demand: float | None
    spot: float | None
    billing_increment_s: int
    as_of: str
    is_estimate: bool
    formula: str
    source: str

    @property
    def known(self) -> bool:
        return self.on_demand is not None

    def to_row(self) -> dict[str, str]:
        """The CSV row of this price (empty cells for unknown values)."""
        row = {key: "" if value is None else str(value) for key, value in asdict(self).items()}
        row["is_estimate"] = ("true" if self.is_estimate else "false") if self.known else ""
        row["on_demand_usd_per_hour"] = row.pop("on_demand")
        row["spot_usd_per_hour"] = row.pop("spot")
        return {name: row[name] for name in PRICE_FIELDS}


def blank_price(machine: catalog.Machine, region: str, billing_increment_s: int, source: str) -> Price:
    """An unknown price for ``machine`` in ``region``; a fetcher fills it with ``dataclasses.replace``."""
    return Price(
        provider=machine.provider,
        region=region,
        machine_type=machine.machine_type,
        accelerator=machine.accelerator,
        on_demand=None,
        spot=None,
        billing_increment_s=billing_increment_s,
        as_of="",
        is_estimate=False,
        formula="",
        source=source,
    )


def _price(row: dict[str, str]) -> Price:
    return Price(
        provider=row["provider"],
        region=row["region"],
        machine_type=row["machine_type"],
        accelerator=row["accelerator"],
        on_demand=_number(row["on_demand_usd_per_hour"]),
        spot=_number(row["spot_usd_per_hour"]),
        billing_increment_s=int(row["billing_increment_s"] or 1),
        as_of=row["as_of"],
        is_estimate=row["is_estimate"] == "true",
        formula=row["formula"],
        source=row["source"],
    )


def _number(text: str) -> float | None:
    return float(text) if text.strip() else None


class PriceCatalog:
    """Prices keyed by (provider, region, machine type, accelerator)."""

    def __init__(self, rows: Iterable[Price]) -> None:
        self._rows = {(p.provider, p.region, p.machine_type, p.accelerator): p for p in rows}
        self._spot = {p.provider for p in self._rows.values() if p.spot is not None}

    def lookup(self, provider: str, region: str, machine_type: str, accelerator: str) -> Price | None:
        """The row for this shape, or None when the catalog has no row at all."""
        return self._rows.get((provider, region, machine_type, accelerator))

    def regions(self, provider: str | None = None) -> list[str]:
        """Regions with at least one row, for ``provider`` or every provider."""
        return sorted({p.region for p in self._rows.values() if provider in (None, p.provider)})

    def publishes_spot(self, provider: str) -> bool:
        """Whether any row of ``provider`` has a spot price (else spot is an assumed discount)."""
        return provider in self._spot

    def rows(self) -> list[Price]:
        return list(self._rows.values())

    def __repr__(self) -> str:
        return f"PriceCatalog(rows={len(self._rows)}, regions={self.regions()})"


def read_prices(path: str | Path) -> PriceCatalog:
    """Read a price CSV (one ``cloudtrain prices refresh`` wrote, or any file of that shape)."""
    return PriceCatalog(_price(row) for row in catalog.read(path, PRICE_FIELDS))


@catalog.cached
def prices() -> PriceCatalog:
    """The catalog's prices: ``catalog/prices.csv`` and every provider's own ``prices.csv``."""
    return PriceCatalog(_price(row) for row in catalog.rows("prices.csv"))


def write_prices(rows: Iterable[Price], path: str | Path) -> Path:
    """Write ``rows`` as a price CSV, sorted by provider, region and machine."""
    ordered = sorted(rows, key=lambda p: (p.provider, p.region, p.machine_type, p.accelerator))
    path = Path(path)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=PRICE_FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(p.to_row() for p in ordered)
    return path


def read_speeds(path: str | Path | None = None) -> dict[str, float | None]:
    """Relative single-device training speed per accelerator (A100 40GB = 1.0).

    ``path`` is a user CSV with ``accelerator,relative_speed`` columns; its rows replace
    the catalog's (``catalog/speeds.csv``), so a measured ratio beats a cited one.
    """
    speeds = {row["accelerator"]: _number(row["relative_speed"]) for row in catalog.rows("speeds.csv")}
    if path is not None:
        for row in catalog.read(path, ("accelerator", "relative_speed")):
            _check_accelerator(row["accelerator"], path)
            speeds[row["accelerator"]] = _positive(row["relative_speed"], path)
    return speeds


def _check_accelerator(name: str, path: str | Path) -> None:
    names = catalog.accelerator_names()
    if name not in names:
        raise SpecError(f"{path}: unknown accelerator {name!r}.{did_you_mean(name, names)}")


def _positive(text: str, path: str | Path) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if value <= 0:
        raise SpecError(f"{path}: relative_speed must be a number > 0. Received: {text!r}.")
    return value


# Where a scaling efficiency comes from (``Efficiency.kind``).
ASSUMED = "assumed"
MEASURED = "measured"
EXTRAPOLATED = "extrapolated"


@dataclass(frozen=True)
class Efficiency:
    """Fraction of linear speed-up kept on a link, the assumption behind it, and the link's name.

    ``kind``: ``assumed`` (a ``scaling.csv`` row), ``measured`` (by ``bench``, on this very
    layout) or ``extrapolated`` (a measurement carried to another layout).
    """

    value: float
    basis: str
    label: str = ""
    kind: str = ASSUMED


@catalog.cached
def scaling() -> dict[tuple[str, str], Efficiency]:
    """``catalog/scaling.csv`` by (scope, link): scope ``intra`` within a host, ``inter`` across hosts."""
    return {
        (r["scope"], r["link"]): Efficiency(float(r["efficiency"]), r["basis"], r["label"])
        for r in catalog.rows("scaling.csv")
    }


def scaling_efficiency(machine: catalog.Machine, hosts: int) -> Efficiency:
    """The scaling-efficiency assumption for ``hosts`` × ``machine``.

    One device keeps 1.0. Several devices on a host keep the intra-host link's value
    (NVLink, PCIe, ICI). Across hosts the slower of that and the network's value (EFA,
    GPUDirect, plain Ethernet) applies: a ring all-reduce runs at its slowest link. Point
    values and their basis are in ``catalog/scaling.csv``.
    """
    table = scaling()
    intra = table["intra", machine.intra_host if machine.devices > 1 else "none"]
    if hosts == 1:
        return intra
    inter = table["inter", machine.rdma]
    return inter if inter.value <= intra.value else intra


@dataclass(frozen=True)
class CapacityRate:
    """What one host costs per hour in a capacity mode that is neither on-demand nor spot: a row of
    ``capacity_rates.csv`` (``*`` matches any region, machine or accelerator).

    ``usd_per_hour`` None means unknown (``basis`` says why); 0 means already paid for
    (a reservation, a training plan's upfront fee).
    """

    provider: str
    mode: str
    region: str
    machine_type: str
    accelerator: str
    usd_per_hour: float | None
    as_of: str
    basis: str
    source: str

    def matches(self, region: str, machine_type: str, accelerator: str) -> bool:
        wanted = (self.region, self.machine_type, self.accelerator)
        return all(
            mine in ("*", theirs)
            for mine, theirs in zip(wanted, (region, machine_type, accelerator), strict=True)
        )


@catalog.cached
def capacity_rates() -> tuple[CapacityRate, ...]:
    """``capacity_rates.csv`` (and every provider's own), in file order: the first match wins."""
    return tuple(
        CapacityRate(**{**row, "usd_per_hour": _number(row["usd_per_hour"])})  # type: ignore[arg-type]
        for row in catalog.rows("capacity_rates.csv")
    )


def capacity_rate(provider: str, mode: str, price: Price) -> CapacityRate | None:
    """The rate row of ``mode`` for ``price``'s shape and region; None when the catalog has none."""
    return next(
        (
            rate
            for rate in capacity_rates()
            if (rate.provider, rate.mode) == (provider, mode)
            and rate.matches(price.region, price.machine_type, price.accelerator)
        ),
        None,
    )


@dataclass(frozen=True)
class Assumption:
    """A number the estimate relies on that no price source gives; always shown with its basis."""

    value: float
    basis: str


@catalog.cached
def assumptions() -> dict[str, Assumption]:
    """``cost_assumptions.csv`` by name: the spot overhead and discount, and the refresh's premiums."""
    return {
        r["name"]: Assumption(float(r["value"]), r["basis"]) for r in catalog.rows("cost_assumptions.csv")
    }


@catalog.cached
def price_sources() -> dict[str, dict[str, str]]:
    """``price_sources.csv`` as {source: {key: value}}: which provider each price API serves, and how."""
    found: dict[str, dict[str, str]] = {}
    for row in catalog.rows("price_sources.csv"):
        found.setdefault(row["source"], {})[row["key"]] = row["value"]
    return found


def source_of(provider: str) -> str | None:
    """The price source (``cloudtrain prices refresh --provider``) that serves ``provider``, if any."""
    return next((name for name, facts in price_sources().items() if facts.get("provider") == provider), None)


@dataclass(frozen=True)
class CostSettings:
    """The model's inputs besides the job: prices, speeds and the spot assumptions.

    Defaults come from the catalog files; pass values to override them (the CLI's
    ``--prices``, ``--speeds``, ``--spot-overhead`` and ``--spot-discount``).
    ``spot_discount`` is assumed for a provider whose catalog rows publish no spot price.
    """

    prices: PriceCatalog = field(default_factory=prices)
    speeds: dict[str, float | None] = field(default_factory=read_speeds)
    spot_overhead: float = field(default_factory=lambda: assumptions()["spot_interruption_overhead"].value)
    spot_discount: float = field(default_factory=lambda: assumptions()["spot_discount"].value)

    def __post_init__(self) -> None:
        if not 0 <= self.spot_overhead <= 10:
            raise SpecError(
                f"spot overhead must be between 0 and 10 (0.1 = 10%). Received: {self.spot_overhead}."
            )
        if not 0 <= self.spot_discount < 1:
            raise SpecError(
                f"spot discount must be at least 0 and below 1 (0.6 = 60% off). Received: {self.spot_discount}."
            )

    def __repr__(self) -> str:
        return (
            f"CostSettings(prices={self.prices!r}, spot_overhead={self.spot_overhead}, "
            f"spot_discount={self.spot_discount})"
        )


def price_summary(price: Price | None) -> dict[str, Any] | None:
    """The fields of a known price that a table or JSON shows beside an estimate; None for an unknown one."""
    if price is None or not price.known:
        return None
    return {
        "as_of": price.as_of,
        "is_estimate": price.is_estimate,
        "formula": price.formula,
        "source": price.source,
    }
