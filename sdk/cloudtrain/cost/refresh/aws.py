"""AWS prices: the Price List API (boto3 ``pricing``), the query awslabs/llmeter uses.

The service code, the product component and the formula written on every row are the
``aws`` rows of ``catalog/price_sources.csv`` (the query of awslabs/llmeter
``llmeter/callbacks/cost/providers/sagemaker.py``, with component ``Training``), as is the
provider they price. The API's endpoint is ``api.pricing.us-east-1.amazonaws.com``;
botocore's standard ``AWS_ENDPOINT_URL_PRICING`` variable points it elsewhere (the tests
use a loopback fake: moto has no pricing backend).

Example:
>>> query("eu-west-1").startswith("AWS Price List API GetProducts ")
True
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from cloudtrain import catalog
from cloudtrain.cost import inputs
from cloudtrain.cost.inputs import Price
from cloudtrain.errors import CredentialsError, ProviderError, require

SOURCE = "aws"


def facts() -> dict[str, str]:
    """This source's rows of ``price_sources.csv``: provider, service code, component, formula."""
    return inputs.price_sources()[SOURCE]


def fetch(regions: Iterable[str], *, client: Any = None, as_of: str) -> list[Price]:
    """Training prices for every catalog shape of the provider this source serves, in ``regions``."""
    client = client or pricing_client()
    rows = []
    for region in regions:
        found = training_prices(client, region)
        for machine in catalog.machines(facts()["provider"]):
            rows.append(_row(machine, region, found.get(machine.machine_type), as_of))
    return rows


def pricing_client() -> Any:
    """boto3's Price List client; the API is served from us-east-1."""
    require("boto3", facts()["extra"])
    import boto3

    # A fresh session: boto3's default one caches credentials for the life of the process.
    return boto3.session.Session().client("pricing", region_name="us-east-1")


def training_prices(client: Any, region: str) -> dict[str, tuple[float, str]]:
    """``{instance: (USD per hour, SKU)}`` of the training component in ``region``, all pages."""
    component = facts()["component"]
    filters = [
        {"Field": "component", "Type": "TERM_MATCH", "Value": component},
        {"Field": "regionCode", "Type": "TERM_MATCH", "Value": region},
    ]
    found: dict[str, tuple[float, str]] = {}
    for product in _products(client, filters):
        instance, price = _hourly(product, component)
        if instance and price and (instance not in found or price[0] < found[instance][0]):
            found[instance] = price
    return found


def _products(client: Any, filters: list[dict[str, str]]) -> Iterator[dict[str, Any]]:
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    paginator = client.get_paginator("get_products")
    pages = paginator.paginate(ServiceCode=facts()["service_code"], Filters=filters)
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


def _hourly(product: dict[str, Any], component: str) -> tuple[str | None, tuple[float, str] | None]:
    """The instance and its on-demand USD per hour; (None, None) for anything else.

    Ignored: other components, products without an instance, non-hourly dimensions
    (the offer file also prices storage in GB-Mo), and zero prices.
    """
    attributes = product.get("product", {}).get("attributes", {})
    if attributes.get("component") != component:
        return None, None
    instance = attributes.get("instanceName") or attributes.get("instanceType")
    for term in product.get("terms", {}).get("OnDemand", {}).values():
        for dimension in term.get("priceDimensions", {}).values():
            usd = float(dimension.get("pricePerUnit", {}).get("USD", 0) or 0)
            if dimension.get("unit") == "Hrs" and usd > 0:
                return instance, (usd, product.get("product", {}).get("sku", "?"))
    return instance, None


def query(region: str) -> str:
    """The query a row's source names, so a reader can repeat it."""
    return (
        f"AWS Price List API GetProducts {facts()['service_code']} "
        f"component={facts()['component']} regionCode={region}"
    )


def _row(machine: catalog.Machine, region: str, found: tuple[float, str] | None, as_of: str) -> Price:
    increment = int(facts()["billing_increment_s"])
    asked = query(region)
    blank = inputs.blank_price(
        machine, region, increment, f"not found: no hourly product in {asked} on {as_of}"
    )
    if found is None:
        return blank
    return replace(
        blank,
        on_demand=found[0],
        as_of=as_of,
        formula=facts()["spot_formula"],
        source=f"{asked}; SKU {found[1]}",
    )
