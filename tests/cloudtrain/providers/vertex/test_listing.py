"""Listing and describing cloudtrain's custom jobs, with the real JobServiceClient over gRPC to the fake."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import grpc
import pytest
from google.cloud import aiplatform_v1
from google.protobuf import timestamp_pb2

from cloudtrain.errors import ProviderError
from cloudtrain.planning import WORST_CASE, ExpectedCost
from cloudtrain.provider.base import Usage
from cloudtrain.providers import vertex
from cloudtrain.providers.vertex import listing
from cloudtrain.spec import JobSpec
from tests.cloudtrain.providers.fakes.vertex_jobservice import FakeJobService

PARENT = "projects/my-project/locations/us-central1"
T0 = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def pool(replicas: int, machine: str = "n1-standard-8", accelerator: str = "NVIDIA_TESLA_T4") -> dict:
    spec = {"machine_type": machine}
    if accelerator:
        spec |= {"accelerator_type": accelerator, "accelerator_count": 1}
    return {"replica_count": replicas, "machine_spec": spec, "container_spec": {"image_uri": "gcr.io/x/y"}}


def create(
    service: FakeJobService,
    name: str,
    *,
    labels: dict[str, str] | None = None,
    pools: tuple[dict, ...] = (pool(1), pool(1)),
    spot: bool = False,
) -> str:
    """A job made through the real client; its labels are cloudtrain's unless given."""
    client = vertex.VertexClients().job_service("us-central1")
    scheduling = {"strategy": aiplatform_v1.Scheduling.Strategy.SPOT} if spot else {}
    job = aiplatform_v1.CustomJob(
        display_name=name,
        labels={"cloudtrain_job": name} if labels is None else labels,
        job_spec={"worker_pool_specs": list(pools), "scheduling": scheduling},
    )
    return str(client.create_custom_job(parent=PARENT, custom_job=job).name)


def at(minutes: float) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(T0 + timedelta(minutes=minutes))
    return stamp


def ended(service: FakeJobService, name: str, state: str, *, ran: tuple[float, float] | None) -> None:
    """Put the job in an ended state with the times the service would have set."""
    job = service.jobs[name]
    service.set_state(name, state)
    job.start_time, job.end_time = (at(ran[0]), at(ran[1])) if ran else (None, at(5))
    if ran is None:
        job._pb.ClearField("start_time")


def test_lists_only_cloudtrains_jobs_newest_first_with_the_existence_filter(
    fake_vertex: FakeJobService,
) -> None:
    first = create(fake_vertex, "first")
    create(fake_vertex, "someone-elses", labels={"team": "x"})
    second = create(fake_vertex, "second")
    found = listing.list_jobs("my-project", "us-central1", limit=None)
    assert [job.id for job in found] == [second, first]
    assert [job.name for job in found] == ["second", "first"]
    (request,) = fake_vertex.calls("ListCustomJobs")
    assert (request.parent, request.filter) == (PARENT, "labels.cloudtrain_job:*")
    assert [job.id for job in listing.list_jobs("my-project", "us-central1", limit=1)] == [second]


def test_an_ended_job_has_its_times_shape_estimate_and_usage(fake_vertex: FakeJobService) -> None:
    labels = {"cloudtrain_job": "demo", "cloudtrain_estimate_cents": "126", "cloudtrain_estimate": WORST_CASE}
    name = create(fake_vertex, "demo", labels=labels, pools=(pool(1), pool(3)), spot=True)
    ended(fake_vertex, name, "JOB_STATE_SUCCEEDED", ran=(2, 12.5))
    (job,) = listing.list_jobs("my-project", "us-central1", limit=None)
    assert (job.state, job.shape, job.estimate) == (
        "succeeded",
        "4 × n1-standard-8",
        ExpectedCost(1.26, WORST_CASE),
    )
    assert (job.started, job.ended, job.duration_s) == (
        T0 + timedelta(minutes=2),
        T0 + timedelta(minutes=12.5),
        630,
    )
    assert job.usage == Usage(
        region="us-central1",
        machine_type="n1-standard-8",
        accelerator="t4",
        hosts=4,
        seconds=630.0,
        spot=True,
        measure=listing.MEASURE,
    )


def test_a_running_job_has_no_usage_yet(fake_vertex: FakeJobService) -> None:
    name = create(fake_vertex, "demo")
    fake_vertex.set_state(name, "JOB_STATE_RUNNING")
    (job,) = listing.list_jobs("my-project", "us-central1", limit=None)
    assert job.state == "running" and job.started is not None
    assert job.ended is None and job.usage is None


def test_a_job_cancelled_before_it_ran_was_billed_nothing(fake_vertex: FakeJobService) -> None:
    name = create(fake_vertex, "demo", pools=(pool(1, "n1-standard-8", ""),))
    ended(fake_vertex, name, "JOB_STATE_CANCELLED", ran=None)
    (job,) = listing.list_jobs("my-project", "us-central1", limit=None)
    assert job.usage is not None
    assert (job.usage.seconds, job.usage.accelerator, job.usage.spot) == (0.0, "cpu", False)


def test_the_fake_sets_start_and_end_times_as_the_job_moves(fake_vertex: FakeJobService) -> None:
    name = create(fake_vertex, "demo")
    handle = vertex.attach(name)
    states = [handle.status().state for _ in range(3)]
    assert states == ["queued", "running", "succeeded"]
    described = handle.summary()
    assert described.started is not None and described.ended is not None
    assert (
        described.usage is not None
        and described.usage.seconds == (described.ended - described.started).total_seconds()
    )


def test_summary_through_attach_reads_the_job_once(fake_vertex: FakeJobService) -> None:
    name = create(fake_vertex, "demo")
    described = vertex.attach(name).summary()
    assert (described.id, described.name, described.provider, described.shape) == (
        name,
        "demo",
        "vertex",
        "2 × n1-standard-8",
    )
    assert len(fake_vertex.calls("GetCustomJob")) == 1


def test_a_refused_listing_is_one_provider_error_with_the_fix(fake_vertex: FakeJobService) -> None:
    fake_vertex.fail("ListCustomJobs", grpc.StatusCode.PERMISSION_DENIED)
    with pytest.raises(ProviderError, match=r"roles/aiplatform\.user"):
        listing.list_jobs("my-project", "us-central1", limit=None)


def test_configured_needs_a_project_and_says_where_to_set_it() -> None:
    assert (
        vertex.provider.configured(
            JobSpec(name="demo", code={"module": "t"}, vertex={"project": "my-project"})
        )
        is None
    )
    why = vertex.provider.configured(JobSpec(name="demo", code={"module": "t"}))
    assert why is not None and "GOOGLE_CLOUD_PROJECT" in why and "gcloud config set project" in why
