"""prices refresh against loopback fakes of the AWS Price List API and the Cloud Billing Catalog.

The real boto3 ``pricing`` client (SigV4, JSON 1.1 protocol) talks to a loopback server
that applies the request's filters and pages the products like the service; the Google
fetcher talks to a loopback server that pages SKUs with ``nextPageToken``. The responses
are constructed from the documented shapes (fixtures/prices/README.md), not recorded.
"""

from __future__ import annotations

import csv
import datetime
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import boto3
import pytest

from cloudtrain.cost import inputs, refresh
from cloudtrain.cost.refresh import aws, gcp
from cloudtrain.errors import CredentialsError, SpecError
from tests.conftest import Result

FIXTURES = Path(__file__).parents[1] / "fixtures" / "prices"
TODAY = datetime.date(2026, 12, 2)
AWS_PAGE_SIZE = 3
GCP_PAGES = {
    "6F81-5844-456A": {"": "gcp_compute_skus_page1.json", "page-2": "gcp_compute_skus_page2.json"},
    "C7E2-9256-1C43": {"": "gcp_vertex_skus.json"},
}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: Any) -> None:
        """Quiet: the tests assert on what was requested instead."""

    def _reply(self, status: int, body: dict[str, Any], content_type: str = "application/json") -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    requests: list[dict[str, Any]]


class PricingHandler(_Handler):
    """AWSPriceListService.GetProducts: TERM_MATCH filters, NextToken paging."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(
            {"target": self.headers["X-Amz-Target"], "auth": self.headers["Authorization"], **body}
        )
        products = [
            p for p in json.loads((FIXTURES / "aws_sagemaker_products.json").read_text()) if _matches(p, body)
        ]
        start = int(body.get("NextToken") or 0)
        page = products[start : start + AWS_PAGE_SIZE]
        reply: dict[str, Any] = {"FormatVersion": "aws_v1", "PriceList": [json.dumps(p) for p in page]}
        if start + AWS_PAGE_SIZE < len(products):
            reply["NextToken"] = str(start + AWS_PAGE_SIZE)
        self._reply(200, reply, "application/x-amz-json-1.1")


def _matches(product: dict[str, Any], body: dict[str, Any]) -> bool:
    attributes = product["product"]["attributes"]
    return product["serviceCode"] == body["ServiceCode"] and all(
        attributes.get(f["Field"]) == f["Value"] for f in body.get("Filters", []) if f["Type"] == "TERM_MATCH"
    )


class BillingHandler(_Handler):
    """GET /v1/services/{id}/skus: an API key is required; pages follow pageToken."""

    def do_GET(self) -> None:
        url = urlparse(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        self.server.requests.append({"path": url.path, **query})
        if query.get("key") != "test-key":
            self._reply(
                403, {"error": {"code": 403, "message": "API key not valid.", "status": "PERMISSION_DENIED"}}
            )
            return
        service = url.path.split("/")[3]
        self._reply(200, json.loads((FIXTURES / GCP_PAGES[service][query.get("pageToken", "")]).read_text()))


def serve(handler: type[_Handler]) -> Iterator[_Server]:
    server = _Server(("127.0.0.1", 0), handler)
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def url(server: _Server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture
def aws_pricing(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Server]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "AKIDLOOPBACK",
        "AWS_SECRET_ACCESS_KEY": "loopback-secret",
        "AWS_CONFIG_FILE": "/nonexistent/config",
        "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/credentials",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    for server in serve(PricingHandler):
        monkeypatch.setenv("AWS_ENDPOINT_URL_PRICING", url(server))
        yield server


@pytest.fixture
def billing(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Server]:
    for server in serve(BillingHandler):
        monkeypatch.setenv(gcp.ENDPOINT_ENV, url(server))
        monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
        yield server


def rows(path: Path) -> dict[tuple[str, str, str, str], dict[str, str]]:
    with path.open(newline="") as f:
        return {
            (r["provider"], r["region"], r["machine_type"], r["accelerator"]): r for r in csv.DictReader(f)
        }


def test_sagemaker_prices_come_from_all_pages_with_the_training_filter(aws_pricing: _Server) -> None:
    client = boto3.session.Session().client("pricing", region_name="us-east-1")
    found = aws.training_prices(client, "us-east-1")
    assert found == {
        "ml.g4dn.xlarge": (0.736, "SKUG4DNXLUSE1"),
        "ml.p4d.24xlarge": (25.2512883, "SKUP4DUSE1"),
        "ml.g5.2xlarge": (1.515, "SKUG52XLUSE1"),
        "ml.c5.xlarge": (0.238, "SKUC5USE1"),  # kept here, dropped when matched to the catalog
    }
    first, second = aws_pricing.requests
    assert first["target"] == "AWSPriceListService.GetProducts"
    assert "/us-east-1/pricing/aws4_request" in first["auth"]  # the real client signed it
    assert first["ServiceCode"] == "AmazonSageMaker"
    assert {f["Field"]: f["Value"] for f in first["Filters"]} == {
        "component": "Training",
        "regionCode": "us-east-1",
    }
    assert second["NextToken"] == "3"


def test_refresh_writes_dated_rows_and_unknowns_for_everything_else(
    aws_pricing: _Server, billing: _Server, tmp_path: Path
) -> None:
    written = refresh.refresh(
        regions=("us-east-1", "eu-west-1", "us-central1", "europe-west4"), out=tmp_path / "p.csv", today=TODAY
    )
    table = rows(written.path)
    g4dn = table["sagemaker", "us-east-1", "ml.g4dn.xlarge", "t4"]
    assert (g4dn["on_demand_usd_per_hour"], g4dn["spot_usd_per_hour"], g4dn["as_of"]) == (
        "0.736",
        "",
        "2026-12-02",
    )
    assert g4dn["is_estimate"] == "false" and "SKU SKUG4DNXLUSE1" in g4dn["source"]
    assert table["sagemaker", "eu-west-1", "ml.g4dn.xlarge", "t4"]["on_demand_usd_per_hour"] == "0.8218"
    for ignored in ("ml.g6.xlarge", "ml.g5.xlarge"):  # a zero price and a GB-Mo dimension
        row = next(r for k, r in table.items() if k[1] == "us-east-1" and k[2] == ignored)
        assert (row["on_demand_usd_per_hour"], row["as_of"]) == ("", "")
        assert row["source"].startswith("not found: no hourly product")
    assert written.rows == len(table) and written.unknown == sum(
        1 for r in table.values() if not r["on_demand_usd_per_hour"]
    )


def test_vertex_uses_training_skus_when_complete_else_a_labelled_estimate(billing: _Server) -> None:
    found = {
        (p.region, p.machine_type, p.accelerator): p
        for p in gcp.fetch(("us-central1", "europe-west4"), client=gcp.billing_catalog(), as_of="2026-12-02")
    }
    t4 = found["us-central1", "n1-standard-8", "t4"]
    # Vertex SKUs: 8 vCPU × 0.036353 + 30 GiB × 0.004873 + 1 × T4 0.4025 (not the 0.22 commitment).
    assert t4.on_demand == pytest.approx(8 * 0.036353 + 30 * 0.004873 + 0.4025)
    assert (t4.is_estimate, t4.spot, t4.billing_increment_s) == (False, None, 30)
    assert "[C701-0001-0003]" in t4.formula and "spot: no spot SKU found" in t4.formula
    a100 = found["us-central1", "a2-highgpu-1g", "a100-40gb"]
    # No Vertex A2 SKU: Compute Engine 12 × 0.031611 + 85 × 0.004237 + 2.933908 = 3.673385, × 1.15.
    assert a100.on_demand == pytest.approx(3.673385 * 1.15, abs=1e-6)
    assert a100.is_estimate and a100.formula.startswith("on-demand = (Compute Engine 12 × A2 Instance Core")
    cpu_eu = found["europe-west4", "n1-standard-8", "cpu"]
    assert cpu_eu.on_demand == pytest.approx((8 * 0.034806 + 30 * 0.004664) * 1.15, abs=1e-6)
    t4_eu = found["europe-west4", "n1-standard-8", "t4"]  # the only T4 outside the US is in asia-east1
    assert t4_eu.on_demand is None and "no Billing Catalog SKU for Nvidia Tesla T4 GPU" in t4_eu.source
    assert found["us-central1", "ct5lp-hightpu-4t", "tpu-v5e"].on_demand is None
    pages = [(r["path"], r.get("pageToken", "")) for r in billing.requests]
    assert pages == [
        ("/v1/services/C7E2-9256-1C43/skus", ""),
        ("/v1/services/6F81-5844-456A/skus", ""),
        ("/v1/services/6F81-5844-456A/skus", "page-2"),
    ]
    assert all(r["currencyCode"] == "USD" for r in billing.requests)


def test_a_refreshed_catalog_prices_an_estimate(billing: _Server, tmp_path: Path) -> None:
    out = refresh.refresh(sources=("gcp",), regions=("us-central1",), out=tmp_path / "p.csv", today=TODAY)
    catalog = inputs.read_prices(out.path)
    row = catalog.lookup("vertex", "us-central1", "n1-standard-8", "t4")
    assert row is not None and row.as_of == "2026-12-02" and not row.is_estimate


@pytest.mark.parametrize(
    ("regions", "sources", "split"),
    [
        (("us-east-1", "europe-west4"), ("aws", "gcp"), {"aws": ("us-east-1",), "gcp": ("europe-west4",)}),
        (
            ("us-central1",),
            ("aws", "gcp"),
            {"aws": (), "gcp": ("us-central1",)},
        ),  # its rows are one provider's
        (("asia-east1",), ("gcp",), {"gcp": ("asia-east1",)}),  # no rows yet: the one source asked for
    ],
)
def test_a_region_goes_to_the_source_of_its_price_rows(
    regions: tuple[str, ...], sources: tuple[str, ...], split: dict[str, tuple[str, ...]]
) -> None:
    assert refresh.split_regions(regions, sources) == split


def test_a_region_without_price_rows_needs_its_source_named() -> None:
    with pytest.raises(SpecError) as error:
        refresh.split_regions(("asia-east1",))
    assert str(error.value) == (
        "--region 'asia-east1' is in no price row, so the source that prices it is unknown. "
        "Name it: cloudtrain prices refresh --provider sagemaker|vertex --region asia-east1"
    )


def test_only_the_sources_of_the_given_regions_are_asked(aws_pricing: _Server, tmp_path: Path) -> None:
    # No Google fake and no Google credentials: asking the Billing Catalog would fail.
    written = refresh.refresh(regions=("us-east-1",), out=tmp_path / "p.csv", today=TODAY)
    assert {(key[0], key[1]) for key in rows(written.path)} == {("sagemaker", "us-east-1")}


def test_cli_refresh_uses_the_documented_environment(
    aws_pricing: _Server, billing: _Server, tmp_path: Path, run_cli: Callable[..., Result]
) -> None:
    out = tmp_path / "prices.csv"
    result = run_cli(
        "prices", "refresh", "--region", "us-east-1", "--region", "us-central1", "--out", str(out)
    )
    assert result.code == 0, result.err
    table = rows(out)
    assert {k[1] for k in table} == {"us-east-1", "us-central1"}
    assert result.err.startswith(f"Wrote {len(table)} prices (")


def test_google_key_refused_is_a_credentials_error(billing: _Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "wrong")
    with pytest.raises(CredentialsError) as error:
        gcp.fetch(("us-central1",), as_of="2026-12-02")
    assert str(error.value).startswith("The Cloud Billing Catalog refused the credentials (HTTP 403)")
    assert "wrong" not in str(error.value)


def test_no_google_credentials_shows_the_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")  # nothing listens: no metadata server
    with pytest.raises(CredentialsError) as error:
        gcp.billing_catalog()
    assert str(error.value) == (
        "No Google credentials for the Cloud Billing Catalog. Set GOOGLE_API_KEY to an API key, "
        "or run:\n  $ gcloud auth application-default login"
    )


def test_no_aws_credentials_shows_the_command(aws_pricing: _Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(
        CredentialsError, match=r"No AWS credentials for the Price List API .*\n  \$ aws configure"
    ):
        aws.fetch(("us-east-1",), as_of="2026-12-02")
    assert aws_pricing.requests == []


@pytest.mark.parametrize(
    ("name", "note"),
    [
        ("sagemaker", ""),  # the provider's name, as every other command says
        ("aws", "Note: --provider aws names the price source; say --provider sagemaker"),  # still works
    ],
)
def test_cli_refresh_takes_the_provider_name_and_the_source_name(
    aws_pricing: _Server, tmp_path: Path, run_cli: Callable[..., Result], name: str, note: str
) -> None:
    out = tmp_path / "prices.csv"
    result = run_cli("prices", "refresh", "--provider", name, "--region", "us-east-1", "--out", str(out))
    assert result.code == 0, result.err
    assert {(key[0], key[1]) for key in rows(out)} == {("sagemaker", "us-east-1")}
    assert result.err.startswith(note) if note else not result.err.startswith("Note:")


def test_source_names_doctest() -> None:
    import doctest

    assert doctest.testmod(refresh).failed == 0
