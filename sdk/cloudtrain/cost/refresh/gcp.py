"""Google prices: the Cloud Billing Catalog API (public catalog, v1).

``GET {endpoint}/v1/services/{service}/skus?currencyCode=USD``, paged with
``nextPageToken`` (https://cloud.google.com/billing/docs/reference/rest/v1/services.skus/list).
Two services are read, both named by the
``gcp`` rows of ``catalog/price_sources.csv`` with the provider they price:

- the training service: its SKUs are used when every component of a machine (cores,
  RAM, GPUs) has one. Google does not document their descriptions and no recorded
  response exists yet, so the matcher accepts
  ``"<…Training…>: <Compute Engine component description> running in <place>"``.
- Compute Engine: the list price of the same components. Where training SKUs are
  missing, the row is an estimate: Compute Engine × the assumed premium
  (``cost_assumptions.csv``), with the formula in the row.

A machine's price = vCPUs × core + GiB × RAM + accelerators × GPU, from ``machines.csv``
and the component descriptions in ``catalog/gcp_skus.csv``. Ignored: commitments,
other regions, non-hourly units, SKUs of other components. TPU v5e SKU descriptions are
not known, so TPU rows stay unknown after a refresh.

Credentials: ``GOOGLE_API_KEY`` (an API key, sent as ``key=``), else application-default
credentials (``gcloud auth application-default login``). ``CLOUDTRAIN_CLOUDBILLING_ENDPOINT``
replaces ``https://cloudbilling.googleapis.com``; it exists for tests on loopback.

Example:
>>> sku = {"description": "Custom Training: Nvidia Tesla T4 GPU running in Americas",
...        "category": {"usageType": "OnDemand"},
...        "pricingInfo": [{"pricingExpression": {"usageUnit": "h"}}]}
>>> match(sku, training=True)
('Nvidia Tesla T4 GPU', False)
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from cloudtrain import catalog
from cloudtrain.cost import inputs
from cloudtrain.cost.inputs import Price
from cloudtrain.errors import CredentialsError, ProviderError

SOURCE = "gcp"
DEFAULT_ENDPOINT = "https://cloudbilling.googleapis.com"
ENDPOINT_ENV = "CLOUDTRAIN_CLOUDBILLING_ENDPOINT"
SCOPE = "https://www.googleapis.com/auth/cloud-billing.readonly"
_HOURLY_UNITS = ("h", "GiBy.h")


def facts() -> dict[str, str]:
    """This source's rows of ``price_sources.csv``: provider, services and their names."""
    return inputs.price_sources()[SOURCE]


def _sku_pattern() -> re.Pattern[str]:
    word = re.escape(facts()["training_sku_word"])
    return re.compile(
        rf"^(?:(?P<training>[^:]*{word}[^:]*):\s*)?(?P<spot>Spot Preemptible )?(?P<name>.+?)"
        r"(?P<spot_gpu> attached to Spot Preemptible VMs)? running in (?P<place>.+)$"
    )


def _source() -> str:
    return (
        f"Cloud Billing Catalog services/{facts()['training_service']} and {facts()['compute_service']}/skus"
    )


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

    require("google.auth", facts()["extra"])
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


def component_prices(skus: Iterable[dict[str, Any]], regions: Iterable[str], *, training: bool) -> Components:
    """Hourly component prices in ``regions`` from SKUs; everything else is ignored."""
    wanted = set(regions)
    pattern = _sku_pattern()
    found: Components = {}
    for sku in skus:
        matched = match(sku, training=training, pattern=pattern)
        if matched is None:
            continue
        for region in wanted.intersection(sku.get("serviceRegions", [])):
            found[matched[0], region, matched[1]] = Component(_unit_price(sku), sku.get("skuId", "?"))
    return found


def match(
    sku: dict[str, Any], *, training: bool, pattern: re.Pattern[str] | None = None
) -> tuple[str, bool] | None:
    """(component description, spot) for an hourly on-demand or spot SKU, else None.

    ``training`` asks for the training service's SKUs (descriptions with the training
    word before a colon), else for plain Compute Engine ones.
    """
    category = sku.get("category", {})
    if category.get("usageType") not in ("OnDemand", "Preemptible"):
        return None  # commitments (Commit1Yr, Commit3Yr) and other usage types
    found = (pattern or _sku_pattern()).match(sku.get("description", ""))
    if not found or bool(found["training"]) != training or _unit(sku) not in _HOURLY_UNITS:
        return None
    spot = bool(found["spot"] or found["spot_gpu"]) or category.get("usageType") == "Preemptible"
    return found["name"], spot


def _unit(sku: dict[str, Any]) -> str:
    info = sku.get("pricingInfo") or [{}]
    return str(info[0].get("pricingExpression", {}).get("usageUnit", ""))


def _unit_price(sku: dict[str, Any]) -> float:
    rate = sku["pricingInfo"][0]["pricingExpression"]["tieredRates"][-1]["unitPrice"]
    return int(rate.get("units") or 0) + int(rate.get("nanos") or 0) / 1e9


def fetch(regions: Iterable[str], *, client: BillingCatalog | None = None, as_of: str) -> list[Price]:
    """Training prices for every catalog shape of the provider this source serves, in ``regions``."""
    regions = tuple(regions)
    client = client or billing_catalog()
    trained = component_prices(client.skus(facts()["training_service"]), regions, training=True)
    compute = component_prices(client.skus(facts()["compute_service"]), regions, training=False)
    return [
        row(machine, region, (trained, compute), as_of)
        for region in regions
        for machine in catalog.machines(facts()["provider"])
    ]


@dataclass(frozen=True)
class Service:
    """A Billing Catalog service as a price source: its name in formulas, the factor on its prices."""

    name: str
    factor: float
    estimate: bool  # True when the result is not the provider's own price


def row(machine: catalog.Machine, region: str, found: tuple[Components, Components], as_of: str) -> Price:
    """The row for one machine: training SKUs if complete, else the labelled Compute Engine estimate."""
    trained, compute = found
    parts = machine_parts(machine)
    premium = inputs.assumptions()[facts()["premium_assumption"]].value
    increment, source = int(facts()["billing_increment_s"]), _source()
    services = (
        (trained, Service(facts()["training_service_name"], 1.0, estimate=False)),
        (compute, Service(facts()["compute_service_name"], premium, estimate=True)),
    )
    for table, service in services:
        on_demand = _total(parts, table, region, False)
        if on_demand is not None:
            totals = (on_demand, _total(parts, table, region, True))
            return _priced(inputs.blank_price(machine, region, increment, source), totals, service, as_of)
    missing = ", ".join(d for d, _ in parts if (d, region, False) not in compute) or "a component"
    why = f"not found: no Billing Catalog SKU for {missing} in {source} on {as_of}"
    return inputs.blank_price(machine, region, increment, why)


def _priced(blank: Price, totals: tuple[Total, Total | None], service: Service, as_of: str) -> Price:
    """``blank`` filled with the totals × the service's factor, an estimate where the service says so."""
    (on_demand, od_formula), spot = totals
    factor = service.factor
    formula = f"on-demand = ({service.name} {od_formula}) × {factor:g}"
    formula += f"; spot = ({spot[1]}) × {factor:g}" if spot else "; spot: no spot SKU found"
    return replace(
        blank,
        on_demand=round(on_demand * factor, 6),
        spot=round(spot[0] * factor, 6) if spot else None,
        as_of=as_of,
        is_estimate=service.estimate,
        formula=formula,
    )


def machine_parts(machine: catalog.Machine) -> list[tuple[str, float]]:
    """(component description, quantity) of one host: vCPUs, GiB of RAM and accelerators."""
    descriptions = {r["component"]: r["description"] for r in catalog.rows("gcp_skus.csv")}
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


def _total(parts: list[tuple[str, float]], table: Components, region: str, spot: bool) -> Total | None:
    prices = [table.get((description, region, spot)) for description, _ in parts]
    if any(p is None for p in prices):
        return None
    total = sum(q * p.usd for (_, q), p in zip(parts, prices, strict=True) if p)
    formula = " + ".join(
        f"{q:g} × {d} {p.usd:g} [{p.sku}]" for (d, q), p in zip(parts, prices, strict=True) if p
    )
    return total, formula
