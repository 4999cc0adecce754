"""The price catalog and the cost model's stated assumptions, read from CSV files.

Prices are managed-training prices per host-hour (Vertex AI custom training,
SageMaker ``ml.*`` training), one row per provider, region and machine shape, each with
its source, as-of date and whether it is an estimate (with the formula). An empty price
means unknown: it is never replaced by a guess. Relative speeds, scaling efficiencies
and the spot assumptions are data files too, so a user can see and override every number.

Example:
>>> price = prices().lookup("sagemaker", "us-east-1", "ml.p4d.24xlarge", "a100-40gb")
>>> price.on_demand, price.as_of
(25.2512883, '2026-09-07')
"""

from __future__ import annotations

import csv
import functools
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cloudtrain import catalog
from cloudtrain.errors import SpecError

CATALOG_DIR = Path(catalog.__file__).parent
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
        return {field: row[field] for field in PRICE_FIELDS}


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

    def lookup(self, provider: str, region: str, machine_type: str, accelerator: str) -> Price | None:
        """The row for this shape, or None when the catalog has no row at all."""
        return self._rows.get((provider, region, machine_type, accelerator))

    def regions(self, provider: str | None = None) -> list[str]:
        """Regions with at least one row, for ``provider`` or every provider."""
        return sorted({p.region for p in self._rows.values() if provider in (None, p.provider)})

    def rows(self) -> list[Price]:
        return list(self._rows.values())

    def __repr__(self) -> str:
        return f"PriceCatalog(rows={len(self._rows)}, regions={self.regions()})"


def read_prices(path: str | Path) -> PriceCatalog:
    """Read a price CSV (the shipped catalog, or one ``cloudtrain prices refresh`` wrote)."""
    rows = _read_csv(Path(path), PRICE_FIELDS)
    return PriceCatalog(_price(row) for row in rows)


@functools.cache
def prices() -> PriceCatalog:
    """The shipped price catalog, ``catalog/prices.csv``."""
    return read_prices(CATALOG_DIR / "prices.csv")


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
    the shipped ones (``catalog/speeds.csv``), so a measured ratio beats a cited one.
    """
    speeds = {row["accelerator"]: _number(row["relative_speed"]) for row in _shipped_speeds()}
    if path is not None:
        for row in _read_csv(Path(path), ("accelerator", "relative_speed")):
            _check_accelerator(row["accelerator"], path)
            speeds[row["accelerator"]] = _positive(row["relative_speed"], path)
    return speeds


@functools.cache
def _shipped_speeds() -> tuple[dict[str, str], ...]:
    return tuple(_read_csv(CATALOG_DIR / "speeds.csv", ("accelerator", "relative_speed")))


def _check_accelerator(name: str, path: str | Path) -> None:
    from cloudtrain.errors import did_you_mean

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


@dataclass(frozen=True)
class Efficiency:
    """Fraction of linear speed-up kept on a layout, and the assumption behind it."""

    value: float
    basis: str


@functools.cache
def _scaling() -> dict[tuple[str, str], Efficiency]:
    rows = _read_csv(CATALOG_DIR / "scaling.csv", ("scope", "link", "efficiency", "basis"))
    return {(r["scope"], r["link"]): Efficiency(float(r["efficiency"]), r["basis"]) for r in rows}


def scaling_efficiency(machine: catalog.Machine, hosts: int) -> Efficiency:
    """The scaling-efficiency assumption for ``hosts`` × ``machine``.

    One device keeps 1.0. Several devices on a host keep the intra-host link's value
    (NVLink, PCIe, ICI). Across hosts the slower of that and the network's value (EFA,
    GPUDirect, plain Ethernet) applies: a ring all-reduce runs at its slowest link. Point
    values and their basis are in ``catalog/scaling.csv``.
    """
    table = _scaling()
    intra = table["intra", machine.intra_host if machine.devices > 1 else "none"]
    if hosts == 1:
        return intra
    inter = table["inter", machine.rdma]
    return inter if inter.value <= intra.value else intra


@dataclass(frozen=True)
class Assumption:
    """A number the estimate relies on that no price source gives; always shown with its basis."""

    value: float
    basis: str


@functools.cache
def assumptions() -> dict[str, Assumption]:
    """``spot_interruption_overhead`` and ``sagemaker_spot_discount`` from ``cost_assumptions.csv``."""
    rows = _read_csv(CATALOG_DIR / "cost_assumptions.csv", ("name", "value", "basis"))
    return {r["name"]: Assumption(float(r["value"]), r["basis"]) for r in rows}


def _read_csv(path: Path, required: tuple[str, ...]) -> list[dict[str, str]]:
    try:
        with path.open(newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in required if c not in (reader.fieldnames or [])]
            rows = list(reader)
    except FileNotFoundError:
        raise SpecError(f"{path}: no such file.") from None
    if missing:
        raise SpecError(f"{path}: missing column(s) {', '.join(missing)}. Expected: {', '.join(required)}.")
    return rows


def price_summary(price: Price) -> dict[str, Any]:
    """The fields of a price that a table or JSON shows beside an estimate."""
    return {
        "as_of": price.as_of,
        "is_estimate": price.is_estimate,
        "formula": price.formula,
        "source": price.source,
    }
