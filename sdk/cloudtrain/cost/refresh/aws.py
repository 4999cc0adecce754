"""``cloudtrain prices refresh``: rebuild the price catalog from the providers' price APIs.

AWS: the Price List API (boto3 ``pricing``, service code ``AmazonSageMaker``, component
``Training``), the query awslabs/llmeter uses (reference/prices.md §3.1). Its endpoint is
``api.pricing.us-east-1.amazonaws.com``; botocore's standard ``AWS_ENDPOINT_URL_PRICING``
variable points it elsewhere (the tests use a loopback fake: moto has no pricing backend).

Google: the Cloud Billing Catalog, see ``prices_gcp``.

Every machine of the hardware catalog gets a row per region; what the API did not
return stays unknown (empty), with the reason in its source column.

Example:
>>> split_regions(("us-east-1", "europe-west4"))
{'aws': ('us-east-1',), 'gcp': ('europe-west4',)}
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cloudtrain import catalog, pricing
from cloudtrain.errors import CredentialsError, ProviderError, require

SAGEMAKER_SPOT = (
    "spot: no SageMaker spot price exists (managed spot bills BillableTimeInSeconds at a discount "
    "of up to 90%, reference/prices.md §2.1); see cost_assumptions.csv sagemaker_spot_discount"
)
PROVIDER_OF = {"aws": "sagemaker", "gcp": "vertex"}


@dataclass(frozen=True)
class Written:
    """What ``refresh`` wrote: the file, its rows and how many prices stayed unknown."""

    path: Path
    rows: int
    unknown: int


def refresh(
    *,
    providers: Iterable[str] = ("aws", "gcp"),
    regions: Iterable[str] = (),
    out: str | Path,
    clients: dict[str, Any] | None = None,
    today: datetime.date | None = None,
) -> Written:
    """Fetch prices for ``providers`` ("aws", "gcp") in ``regions`` and write them to ``out``.

    Args:
        regions: AWS and Google regions, mixed; default the shipped catalog's regions.
        clients: ``{"aws": boto3 pricing client, "gcp": prices_gcp.BillingCatalog}`` to use
            instead of the defaults (tests, proxies).
        today: the as-of date written on every row; default today.

    Raises:
        CredentialsError: a provider needs credentials that are not configured.
        ProviderError: the price API refused or failed a call.
    """
    clients = clients or {}
    by_cloud = split_regions(tuple(regions))
    date = (today or datetime.date.today()).isoformat()
    rows: list[pricing.Price] = []
    for cloud in providers:
        chosen = by_cloud[cloud] or tuple(pricing.prices().regions(PROVIDER_OF[cloud]))
        fetch = fetch_sagemaker if cloud == "aws" else _fetch_vertex
        rows += fetch(chosen, client=clients.get(cloud), as_of=date)
    path = pricing.write_prices(rows, out)
    return Written(path, len(rows), sum(1 for r in rows if not r.known))


def split_regions(regions: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """AWS regions have two dashes (us-east-1), Google's one (us-central1)."""
    return {
        "aws": tuple(r for r in regions if r.count("-") == 2),
        "gcp": tuple(r for r in regions if r.count("-") == 1),
    }


def _fetch_vertex(regions: tuple[str, ...], *, client: Any, as_of: str) -> list[pricing.Price]:
    from cloudtrain import prices_gcp

    return prices_gcp.fetch_vertex(regions, client=client, as_of=as_of)


def fetch_sagemaker(regions: Iterable[str], *, client: Any = None, as_of: str) -> list[pricing.Price]:
    """SageMaker training prices for every ``ml.*`` shape of the catalog in ``regions``."""
    client = client or pricing_client()
    rows = []
    for region in regions:
        found = sagemaker_training_prices(client, region)
        for machine in catalog.machines("sagemaker"):
            rows.append(_sagemaker_row(machine, region, found.get(machine.machine_type), as_of))
    return rows


def pricing_client() -> Any:
    """boto3's Price List client; the API is served from us-east-1."""
    require("boto3", "sagemaker")
    import boto3

    # A fresh session: boto3's default one caches credentials for the life of the process.
    return boto3.session.Session().client("pricing", region_name="us-east-1")


def sagemaker_training_prices(client: Any, region: str) -> dict[str, tuple[float, str]]:
    """``{instance: (USD per hour, SKU)}`` of the Training component in ``region``, all pages."""
    filters = [
        {"Field": "component", "Type": "TERM_MATCH", "Value": "Training"},
        {"Field": "regionCode", "Type": "TERM_MATCH", "Value": region},
    ]
    found: dict[str, tuple[float, str]] = {}
    for product in _products(client, filters):
        instance, price = _hourly(product)
        if instance and price and (instance not in found or price[0] < found[instance][0]):
            found[instance] = price
    return found


def _products(client: Any, filters: list[dict[str, str]]) -> Iterator[dict[str, Any]]:
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    pages = client.get_paginator("get_products").paginate(ServiceCode="AmazonSageMaker", Filters=filters)
    try:
        for page in pages:
            yield from (json.loads(item) for item in page["PriceList"])
    except NoCredentialsError:
        raise CredentialsError(
            "No AWS credentials for the Price List API (any IAM identity with pricing:GetProducts "
            "works). Run:\n  $ aws configure"
        ) from None
    except (ClientError, BotoCoreError) as exc:
        raise ProviderError(f"AWS Price List API failed: {exc}") from None


def _hourly(product: dict[str, Any]) -> tuple[str | None, tuple[float, str] | None]:
    """The instance and its on-demand USD per hour; (None, None) for anything else.

    Ignored: other components, products without an instance, non-hourly dimensions
    (the offer file also prices storage in GB-Mo), and zero prices.
    """
    attributes = product.get("product", {}).get("attributes", {})
    if attributes.get("component") != "Training":
        return None, None
    instance = attributes.get("instanceName") or attributes.get("instanceType")
    for term in product.get("terms", {}).get("OnDemand", {}).values():
        for dimension in term.get("priceDimensions", {}).values():
            usd = float(dimension.get("pricePerUnit", {}).get("USD", 0) or 0)
            if dimension.get("unit") == "Hrs" and usd > 0:
                return instance, (usd, product.get("product", {}).get("sku", "?"))
    return instance, None


def _sagemaker_row(
    machine: catalog.Machine, region: str, found: tuple[float, str] | None, as_of: str
) -> pricing.Price:
    query = f"AWS Price List API GetProducts AmazonSageMaker component=Training regionCode={region}"
    blank = pricing.blank_price(machine, region, 1, f"not found: no hourly product in {query} on {as_of}")
    if found is None:
        return blank
    return replace(
        blank, on_demand=found[0], as_of=as_of, formula=SAGEMAKER_SPOT, source=f"{query}; SKU {found[1]}"
    )
