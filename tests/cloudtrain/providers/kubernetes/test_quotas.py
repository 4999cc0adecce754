"""A namespace's GPU quota: the real ``kubernetes`` client reads the fake API server's ResourceQuotas."""

from __future__ import annotations

import pytest

from cloudtrain.provider import registry
from cloudtrain.provider.quotas import BUSY, OK, OVER, UNKNOWN
from cloudtrain.providers.kubernetes.clients import KubernetesClients
from tests.cloudtrain.providers.fakes.kubernetes_api import FakeKubernetes

from .conftest import MakePlan

GPUS = "requests.nvidia.com/gpu"


def readings(make_plan: MakePlan) -> list:  # type: ignore[type-arg]
    plan = make_plan(
        resources={"accelerator": "a10g", "per_host": 4, "hosts": 2}, kubernetes={"namespace": "training"}
    )
    provider = registry.get("kubernetes")
    return provider.read_quotas(
        plan, provider.quota_needs(plan), clients=KubernetesClients(sleep=lambda s: None)
    )


@pytest.mark.parametrize(
    ("quotas", "verdict", "limit", "used"),
    [
        ({"gpus": ({GPUS: "16"}, {GPUS: "0"})}, OK, 16, 0),
        ({"gpus": ({GPUS: "16"}, {GPUS: "12"})}, BUSY, 16, 12),
        ({"gpus": ({GPUS: "4"}, {GPUS: "0"})}, OVER, 4, 0),
        # two quotas name the resource: the tighter one binds
        ({"team": ({GPUS: "32"}, {GPUS: "0"}), "gpus": ({GPUS: "10"}, {GPUS: "4"})}, BUSY, 10, 4),
    ],
)
def test_the_tightest_resource_quota_of_the_namespace_binds(
    fake_cluster: FakeKubernetes,
    make_plan: MakePlan,
    quotas: dict,
    verdict: str,
    limit: int,
    used: int,  # type: ignore[type-arg]
) -> None:
    for name, (hard, in_use) in quotas.items():
        fake_cluster.resource_quotas[("training", name)] = (hard, in_use)
    fake_cluster.resource_quotas[("default", "elsewhere")] = ({GPUS: "0"}, {GPUS: "0"})  # another namespace's
    [reading] = readings(make_plan)
    assert (reading.verdict, reading.limit, reading.used) == (verdict, limit, used)
    assert reading.need.amount == 8


def test_a_namespace_without_a_gpu_quota_is_unknown(
    fake_cluster: FakeKubernetes, make_plan: MakePlan
) -> None:
    fake_cluster.resource_quotas[("training", "pods")] = ({"pods": "100"}, {"pods": "3"})
    [reading] = readings(make_plan)
    assert (reading.verdict, reading.problem) == (
        UNKNOWN,
        f"no ResourceQuota of namespace training limits {GPUS}",
    )


def test_a_read_the_api_server_refuses_is_unknown(fake_cluster: FakeKubernetes, make_plan: MakePlan) -> None:
    fake_cluster.forbidden = {("list", "resourcequotas")}
    [reading] = readings(make_plan)
    assert reading.verdict == UNKNOWN
    assert "forbidden" in reading.problem


def test_a_job_without_gpus_needs_no_gpu_quota(make_plan: MakePlan) -> None:
    plan = make_plan(resources={"accelerator": "cpu"})
    assert registry.get("kubernetes").quota_needs(plan) == []
