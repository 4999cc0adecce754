"""actual_cost: what the provider billed, priced from the catalog with the row's billing increment."""

from __future__ import annotations

import pytest

from cloudtrain.cost.actual import actual_cost
from cloudtrain.cost.inputs import CostSettings, Price, PriceCatalog
from cloudtrain.provider.base import Usage


def price(provider: str, increment: int, *, on_demand: float | None, spot: float | None) -> Price:
    return Price(provider, "r1", "m1", "t4", on_demand, spot, increment, "2026-12-01", False, "", "test")


def settings(*rows: Price) -> CostSettings:
    return CostSettings(prices=PriceCatalog(rows), spot_discount=0.0)


def usage(seconds: float, *, hosts: int = 2, spot: bool = False) -> Usage:
    return Usage("r1", "m1", "t4", hosts=hosts, seconds=seconds, spot=spot, measure="start to end × replicas")


@pytest.mark.parametrize(("seconds", "billed"), [(0, 0), (1, 30), (30, 30), (301, 330)])
def test_vertex_time_is_rounded_up_to_30_seconds_per_host(seconds: float, billed: int) -> None:
    spent = actual_cost("vertex", usage(seconds), settings(price("vertex", 30, on_demand=3.6, spot=1.8)))
    assert spent.billed_s == billed
    assert spent.usd == pytest.approx(billed / 3600 * 3.6 * 2)


def test_spot_usage_is_priced_at_the_spot_rate() -> None:
    spent = actual_cost(
        "vertex", usage(3600, spot=True), settings(price("vertex", 30, on_demand=3.6, spot=1.8))
    )
    assert spent.usd == pytest.approx(1.8 * 2)


def test_billable_seconds_are_priced_whole_at_on_demand() -> None:
    """SageMaker: BillableTimeInSeconds × InstanceCount × the hourly rate (the spot saving is in the seconds)."""
    spent = actual_cost(
        "sagemaker", usage(1801, hosts=4), settings(price("sagemaker", 1, on_demand=0.736, spot=None))
    )
    assert (spent.billed_s, spent.hosts) == (1801, 4)
    assert spent.usd == pytest.approx(1801 / 3600 * 0.736 * 4)
    assert spent.describe().startswith("$")
    assert "4 × 1801 s billed" in spent.describe()


def test_an_unpriced_shape_has_no_dollars_but_keeps_the_time() -> None:
    spent = actual_cost("vertex", usage(100), settings())
    assert spent.usd is None and spent.billed_s == 100
    assert spent.describe().startswith("price unknown")
