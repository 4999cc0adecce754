"""What moving a run's backup between buckets costs in data transfer, from the catalog's egress prices.

A provider's storage charges for bytes that leave it: nothing within a region, a small
rate to another region of the same cloud, the internet rate to anywhere else (another
cloud is the internet to it). The rates are rows of ``catalog/egress.csv`` with their
source page and date. Where the catalog places a provider's regions on continents
(``catalog/continents.csv``: Cloud Storage's), a move between regions is priced by
whether the two are on one continent. Bytes on this machine (a
local storage root) move for free. An emulated run is priced as the clouds it stands
in for would charge, so ``plan`` shows what the same move would cost for real.

Example:
>>> rate = egress("vertex", "us-central1", "sagemaker", "us-east-1")
>>> rate.scope, rate.usd_per_gb
('internet', 0.12)
>>> round(rate.usd(2 * 2**30), 2)
0.24
>>> egress("sagemaker", "us-east-1", "sagemaker", "us-east-1").usd(10**12)
0.0
"""

from __future__ import annotations

from dataclasses import dataclass

from cloudtrain import catalog
from cloudtrain.errors import SpecError

_UNITS = {"GB": 10**9, "GiB": 2**30}
FREE_SOURCE = "bytes on this machine move without a transfer charge"


@dataclass(frozen=True)
class Egress:
    """One egress rate: what it covers (``scope``), its price per ``unit``, its source page and date."""

    scope: str
    usd_per_gb: float
    unit: str
    source: str
    as_of: str

    def usd(self, size: int) -> float:
        """The charge for moving ``size`` bytes at this rate."""
        return size / _UNITS[self.unit] * self.usd_per_gb

    def describe(self) -> str:
        """``$0.12/GiB (internet egress; source ..., 2026-12)``, for plan and cost."""
        if not self.usd_per_gb:
            return f"free ({self.scope}: {self.source})"
        return f"${self.usd_per_gb:g}/{self.unit} ({self.scope} egress; {self.source}, {self.as_of})"


FREE = Egress("this machine", 0.0, "GB", FREE_SOURCE, "")


def egress(source: str, source_region: str, destination: str, destination_region: str) -> Egress:
    """The rate for bytes leaving ``source``'s storage in ``source_region`` for ``destination``'s.

    ``source`` and ``destination`` are providers whose storage it is (``vertex``,
    ``sagemaker``; ``local`` for this machine).

    Raises:
        SpecError: the catalog has no egress price for ``source``.
    """
    if source == "local":
        return FREE
    return _rate(source, _scope(source, source_region, destination, destination_region))


def _scope(source: str, source_region: str, destination: str, destination_region: str) -> str:
    if destination != source:
        return "internet"
    if destination_region == source_region:
        return "same-region"
    if any(row["provider"] == source for row in catalog.rows("continents.csv")):  # priced by continent
        same = _continent(source, source_region) == _continent(source, destination_region)
        return "same-continent" if same else "other-continent"
    return "other-region"


def _rate(provider: str, scope: str) -> Egress:
    for row in catalog.rows("egress.csv"):
        if (row["provider"], row["scope"]) == (provider, scope):
            return Egress(scope, float(row["usd_per_gb"]), row["unit"], row["source"], row["as_of"])
    raise SpecError(
        f"The catalog has no {scope} egress price for {provider} storage (catalog/egress.csv), "
        "so moving a backup from there cannot be priced. Add a row with its source."
    )


def _continent(provider: str, region: str) -> str | None:
    for row in catalog.rows("continents.csv"):
        if row["provider"] == provider and region.startswith(row["region_prefix"]):
            return row["continent"]
    return None
