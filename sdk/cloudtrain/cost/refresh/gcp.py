"""Vertex AI training prices from Google's Cloud Billing Catalog API (public catalog, v1).

``GET {endpoint}/v1/services/{service}/skus?currencyCode=USD``, paged with
``nextPageToken`` (reference/prices.md §3.2). Two services are read:

- Vertex AI ``C7E2-9256-1C43``: training SKUs, used as Vertex prices when every
  component of a machine (cores, RAM, GPUs) has one. Google does not document their
  descriptions and no recorded response exists yet, so the matcher accepts
  ``"<…Training…>: <Compute Engine component description> running in <place>"``.
- Compute Engine ``6F81-5844-456A``: the list price of the same components. Where Vertex
  SKUs are missing, the row is an estimate: Compute Engine × the assumed Vertex premium,
  with the formula in the row.

A machine's price = vCPUs × core + GiB × RAM + accelerators × GPU, from ``machines.csv``
and the component descriptions in ``catalog/gcp_skus.csv``. Ignored: commitments,
other regions, non-hourly units, SKUs of other components. TPU v5e SKU descriptions are
not known, so TPU rows stay unknown after a refresh.

Credentials: ``GOOGLE_API_KEY`` (an API key, sent as ``key=``), else application-default
credentials (``gcloud auth application-default login``). ``CLOUDTRAIN_CLOUDBILLING_ENDPOINT``
replaces ``https://cloudbilling.googleapis.com``; it exists for tests on loopback.
"""

from __future__ import annotations

import csv
import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from cloudtrain import catalog, pricing
from cloudtrain.errors import CredentialsError, ProviderError

DEFAULT_ENDPOINT = "https://cloudbilling.googleapis.com"
ENDPOINT_ENV = "CLOUDTRAIN_CLOUDBILLING_ENDPOINT"
VERTEX_SERVICE = "C7E2-9256-1C43"
COMPUTE_SERVICE = "6F81-5844-456A"
SCOPE = "https://www.googleapis.com/auth/cloud-billing.readonly"
_SKU = re.compile(
    r"^(?:(?P<vertex>[^:]*Training[^:]*):\s*)?(?P<spot>Spot Preemptible )?(?P<name>.+?)"
    r"(?P<spot_gpu> attached to Spot Preemptible VMs)? running in (?P<place>.+)$"
)
_HOURLY_UNITS = ("h", "GiBy.h")
SOURCE = f"Cloud Billing Catalog services/{VERTEX_SERVICE} and {COMPUTE_SERVICE}/skus"


@dataclass(frozen=True)
class BillingCatalog:
    """A Cloud Billing Catalog reader: endpoint plus an API key or an OAuth token."""

    endpoint: str = DEFAULT_ENDPOINT
    api_key: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)

    def skus(self, service: str) -> Iterator[dict[str, Any]]:
        """Every SKU of ``service``, following ``nextPageToken`` until the last page."""
        token = ""
        while True:
            page = self._get(f"/v1/services/{service}/skus", {"currencyCode": "USD", "pageToken": token})
            yield from page.get("skus", [])
            token = page.get("nextPageToken", "")
            if not token:
                return

    def _get(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        query = {k: v for k, v in params.items() if v}
        if self.api_key:
            query["key"] = self.api_key
        request = urllib.request.Request(f"{self.endpoint.rstrip('/')}{path}?{urllib.parse.urlencode(query)}")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.load(response)
        except urllib.error.HTTPError as exc:
            exc.close()  # the error holds the response's socket
            raise _http_error(exc.code, path) from None
        except urllib.error.URLError as exc:
            raise ProviderError(
                f"Cloud Billing Catalog at {self.endpoint} is unreachable: {exc.reason}"
            ) from None


def _http_error(status: int, path: str) -> ProviderError | CredentialsError:
    if status in (401, 403):
        return CredentialsError(
            f"The Cloud Billing Catalog refused the credentials (HTTP {status}) for {path}. "
            "Check GOOGLE_API_KEY (the Cloud Billing API must be enabled for its project), or run:\n"
            "  $ gcloud auth application-default login"
        )
    return ProviderError(f"Cloud Billing Catalog returned HTTP {status} for {path}.")


def billing_catalog() -> BillingCatalog:
    """A reader configured from the environment: GOOGLE_API_KEY, else application-default credentials."""
    endpoint = os.environ.get(ENDPOINT_ENV) or DEFAULT_ENDPOINT
    key = os.environ.get("GOOGLE_API_KEY")
    if key:
        return BillingCatalog(endpoint, api_key=key)
    return BillingCatalog(endpoint, token=_adc_token())


def _adc_token() -> str:
    from cloudtrain.errors import require

    require("google.auth", "vertex")
    import google.auth
    import google.auth.exceptions
    import google.auth.transport.requests

    try:
        credentials, _ = google.auth.default(scopes=[SCOPE])
        credentials.refresh(google.auth.transport.requests.Request())
    except google.auth.exceptions.GoogleAuthError:
        raise CredentialsError(
            "No Google credentials for the Cloud Billing Catalog. Set GOOGLE_API_KEY to an API key, "
            "or run:\n  $ gcloud auth application-default login"
        ) from None
    return str(credentials.token)


@dataclass(frozen=True)
class Component:
    """One component price: USD per hour (per vCPU, GiB or GPU) and the SKU it came from."""

    usd: float
    sku: str


Components = dict[tuple[str, str, bool], Component]  # (description, region, spot) -> price
Total = tuple[float, str]  # USD per host-hour, and the formula that adds it up


def component_prices(skus: Iterable[dict[str, Any]], regions: Iterable[str], *, vertex: bool) -> Components:
    """Hourly component prices in ``regions`` from SKUs; everything else is ignored."""
    wanted = set(regions)
    found: Components = {}
    for sku in skus:
        match = _match(sku, vertex)
        if match is None:
            continue
        for region in wanted.intersection(sku.get("serviceRegions", [])):
            found[match[0], region, match[1]] = Component(_unit_price(sku), sku.get("skuId", "?"))
    return found


def _match(sku: dict[str, Any], vertex: bool) -> tuple[str, bool] | None:
    """(component description, spot) for an hourly on-demand or spot SKU, else None."""
    category = sku.get("category", {})
    if category.get("usageType") not in ("OnDemand", "Preemptible"):
        return None  # commitments (Commit1Yr, Commit3Yr) and other usage types
    match = _SKU.match(sku.get("description", ""))
    if not match or bool(match["vertex"]) != vertex or _unit(sku) not in _HOURLY_UNITS:
        return None
    spot = bool(match["spot"] or match["spot_gpu"]) or category.get("usageType") == "Preemptible"
    return match["name"], spot


def _unit(sku: dict[str, Any]) -> str:
    info = sku.get("pricingInfo") or [{}]
    return str(info[0].get("pricingExpression", {}).get("usageUnit", ""))


def _unit_price(sku: dict[str, Any]) -> float:
    rate = sku["pricingInfo"][0]["pricingExpression"]["tieredRates"][-1]["unitPrice"]
    return int(rate.get("units") or 0) + int(rate.get("nanos") or 0) / 1e9


def fetch_vertex(
    regions: Iterable[str], *, client: BillingCatalog | None = None, as_of: str
) -> list[pricing.Price]:
    """Vertex training prices for every Vertex shape of the catalog in ``regions``."""
    regions = tuple(regions)
    client = client or billing_catalog()
    vertex = component_prices(client.skus(VERTEX_SERVICE), regions, vertex=True)
    compute = component_prices(client.skus(COMPUTE_SERVICE), regions, vertex=False)
    return [
        vertex_row(machine, region, (vertex, compute), as_of)
        for region in regions
        for machine in catalog.machines("vertex")
    ]


def vertex_row(
    machine: catalog.Machine, region: str, found: tuple[Components, Components], as_of: str
) -> pricing.Price:
    """The row for one machine: Vertex SKUs if complete, else the labelled Compute Engine estimate."""
    vertex, compute = found
    parts = machine_parts(machine)
    premium = pricing.assumptions()["vertex_premium_over_compute_engine"].value
    for table, factor, service in ((vertex, 1.0, "Vertex AI"), (compute, premium, "Compute Engine")):
        on_demand = _total(parts, table, region, False)
        if on_demand is not None:
            totals = (on_demand, _total(parts, table, region, True))
            return _priced(pricing.blank_price(machine, region, 30, SOURCE), totals, factor, service, as_of)
    missing = ", ".join(d for d, _ in parts if (d, region, False) not in compute) or "a component"
    why = f"not found: no Billing Catalog SKU for {missing} in {SOURCE} on {as_of}"
    return pricing.blank_price(machine, region, 30, why)


def _priced(
    blank: pricing.Price, totals: tuple[Total, Total | None], factor: float, service: str, as_of: str
) -> pricing.Price:
    """``blank`` filled with the totals × ``factor``; an estimate unless read from Vertex SKUs."""
    (on_demand, od_formula), spot = totals
    formula = f"on-demand = ({service} {od_formula}) × {factor:g}"
    formula += f"; spot = ({spot[1]}) × {factor:g}" if spot else "; spot: no spot SKU found"
    return replace(
        blank,
        on_demand=round(on_demand * factor, 6),
        spot=round(spot[0] * factor, 6) if spot else None,
        as_of=as_of,
        is_estimate=service != "Vertex AI",
        formula=formula,
    )


def machine_parts(machine: catalog.Machine) -> list[tuple[str, float]]:
    """(component description, quantity) of one host: vCPUs, GiB of RAM and accelerators."""
    descriptions = _descriptions()
    family = machine.machine_type.split("-")[0]
    parts = [
        (descriptions.get(f"core:{family}", f"{family} core (unknown SKU)"), float(machine.vcpus)),
        (descriptions.get(f"ram:{family}", f"{family} RAM (unknown SKU)"), float(machine.memory_gb)),
    ]
    if machine.accelerator_count:
        name = descriptions.get(
            f"gpu:{machine.provider_accelerator}", f"{machine.provider_accelerator} (unknown SKU)"
        )
        parts.append((name, float(machine.accelerator_count)))
    return parts


def _descriptions() -> dict[str, str]:
    with (pricing.CATALOG_DIR / "gcp_skus.csv").open(newline="") as f:
        return {row["component"]: row["description"] for row in csv.DictReader(f)}


def _total(parts: list[tuple[str, float]], table: Components, region: str, spot: bool) -> Total | None:
    prices = [table.get((description, region, spot)) for description, _ in parts]
    if any(p is None for p in prices):
        return None
    total = sum(q * p.usd for (_, q), p in zip(parts, prices, strict=True) if p)
    formula = " + ".join(
        f"{q:g} × {d} {p.usd:g} [{p.sku}]" for (d, q), p in zip(parts, prices, strict=True) if p
    )
    return total, formula
