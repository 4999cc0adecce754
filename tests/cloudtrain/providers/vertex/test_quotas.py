"""Vertex AI's quota preflight: the real CloudQuotasClient against the fake Cloud Quotas API, and the
real JobServiceClient against the fake JobService for what running jobs hold."""

from __future__ import annotations

import grpc
import pytest

from cloudtrain import api
from cloudtrain.provider import registry
from cloudtrain.provider.quotas import BUSY, OK, OVER, UNKNOWN
from cloudtrain.providers import vertex
from tests.cloudtrain.providers.fakes.cloud_quotas import FakeCloudQuotas
from tests.cloudtrain.providers.fakes.vertex_jobservice import FakeJobService
from tests.cloudtrain.providers.vertex.test_job import EXAMPLE

A100 = "aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus"
SPOT_A100 = "aiplatform.googleapis.com/custom_model_training_preemptible_nvidia_a100_gpus"
SHAPE = ("resources.accelerator=a100-40gb", "resources.per_host=8", "resources.hosts=2")


def readings(*overrides: str) -> list:  # type: ignore[type-arg]
    plan = api.plan(api.as_spec(EXAMPLE, (*SHAPE, *overrides)), "vertex")
    provider = registry.get("vertex")
    return provider.read_quotas(
        plan, provider.quota_needs(plan), clients=vertex.VertexClients(sleep=lambda s: None)
    )


def test_a_job_needs_its_gpus_of_the_metric_of_its_gpu_type_in_its_region() -> None:
    plan = api.plan(api.as_spec(EXAMPLE, SHAPE), "vertex")
    [need] = registry.get("vertex").quota_needs(plan)
    assert (need.name, need.amount, need.unit, need.region) == (A100, 16, "GPUs", "us-central1")
    assert need.increase.startswith("https://console.cloud.google.com/iam-admin/quotas?project=my-project")


def test_spot_draws_on_the_preemptible_metric() -> None:
    plan = api.plan(api.as_spec(EXAMPLE, (*SHAPE, "resources.spot=true")), "vertex")
    assert [need.name for need in registry.get("vertex").quota_needs(plan)] == [SPOT_A100]


@pytest.mark.usefixtures("fake_vertex")
@pytest.mark.parametrize(
    ("limit", "verdict"),
    [
        (0, OVER),  # a new project: no A100 at all
        (8, OVER),  # fewer than the job's 16, whatever runs
        (16, OK),
        (-1, OK),  # -1: unlimited
    ],
)
def test_the_limit_is_read_for_the_jobs_region(
    fake_quotas: FakeCloudQuotas, limit: int, verdict: str
) -> None:
    fake_quotas.set_quota(
        "my-project", "aiplatform.googleapis.com/custom_model_training_cpus", {"us-central1": 24}
    )
    fake_quotas.set_quota("my-project", A100, {"us-central1": limit, "europe-west4": 64}, quota_id="A100Gpus")
    fake_quotas.set_quota("my-project", SPOT_A100, {"us-central1": 64})
    [reading] = readings()
    assert (reading.limit, reading.used, reading.verdict) == (
        float("inf") if limit < 0 else limit,
        0,
        verdict,
    )
    assert len(fake_quotas.requests) == 2  # three quotas, two to a page: the pager read both pages
    if verdict == OVER:
        assert (
            "--quota-id=A100Gpus --preferred-value=16 --dimensions=region=us-central1"
            in reading.need.increase
        )


@pytest.mark.usefixtures("fake_gcs")
@pytest.mark.parametrize(
    ("state", "held"),
    [
        ("JOB_STATE_RUNNING", 8),
        ("JOB_STATE_QUEUED", 8),  # a queued job holds its place in the quota too
        ("JOB_STATE_SUCCEEDED", 0),  # an ended one holds nothing
    ],
)
def test_what_other_jobs_hold_counts_against_the_limit(
    fake_quotas: FakeCloudQuotas, fake_vertex: FakeJobService, state: str, held: int
) -> None:
    fake_quotas.set_quota("my-project", A100, {"us-central1": 20})
    other = api.submit(
        api.as_spec(EXAMPLE, (*SHAPE, "resources.hosts=1")),
        "vertex",
        clients=vertex.VertexClients(sleep=lambda s: None),
        force=True,
    )
    fake_vertex.set_state(other.id, state)
    [reading] = readings()
    assert (reading.limit, reading.used) == (20, held)
    assert reading.verdict == (BUSY if held else OK)


@pytest.mark.usefixtures("fake_vertex")
def test_a_read_google_refuses_is_unknown_and_says_why(fake_quotas: FakeCloudQuotas) -> None:
    fake_quotas.fail(
        "ListQuotaInfos",
        grpc.StatusCode.PERMISSION_DENIED,
        times=5,
        message="Permission 'cloudquotas.quotas.get' denied",
    )
    [reading] = readings()
    assert reading.verdict == UNKNOWN
    assert "cloudquotas.quotas.get" in reading.problem


@pytest.mark.usefixtures("fake_vertex")
def test_a_metric_the_project_has_no_value_for_is_unknown(fake_quotas: FakeCloudQuotas) -> None:
    fake_quotas.set_quota("my-project", A100, {"europe-west4": 8})
    [reading] = readings()
    assert (reading.verdict, reading.problem) == (UNKNOWN, "Cloud Quotas has no value of it for us-central1")


def test_busy_is_a_limit_that_fits_beside_nothing_running_but_not_now() -> None:
    from cloudtrain.provider.quotas import QuotaNeed, QuotaReading

    need = QuotaNeed("vertex", "us-central1", A100, 16, "GPUs", "gcloud ...")
    assert QuotaReading(need, 24, 16).verdict == BUSY
