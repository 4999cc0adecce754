"""Vertex AI capacity modes, submitted with the real aiplatform client to the fake JobService:
a job waiting says why, from its JobState and Scheduling.strategy; one that expired waiting
failed for capacity; the pending limit cancels one still waiting."""

from __future__ import annotations

from pathlib import Path

import pytest

import cloudtrain
from cloudtrain import api
from cloudtrain.provider.failures import Reason
from cloudtrain.provider.pending import wait_to_start
from cloudtrain.providers import vertex
from tests.cloudtrain.providers.fakes.vertex_jobservice import FakeJobService

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "binary_classifier" / "job.yaml"
FLEX = ("resources.accelerator=l4", "resources.capacity={mode: flex, max_wait: 6h}")


@pytest.fixture
def clients() -> vertex.VertexClients:
    return vertex.VertexClients(sleep=lambda seconds: None)


def submit(clients: vertex.VertexClients, *overrides: str) -> vertex.VertexJob:
    return cloudtrain.submit(api.as_spec(EXAMPLE, overrides), provider="vertex", clients=clients)


@pytest.mark.usefixtures("fake_gcs")
def test_a_flex_job_says_it_waits_queued_for_quota_then_for_flex_capacity(
    fake_vertex: FakeJobService, clients: vertex.VertexClients
) -> None:
    job = submit(clients, *FLEX)
    [created] = fake_vertex.jobs.values()
    assert created.job_spec.scheduling.strategy.name == "FLEX_START"
    fake_vertex.set_state(job.id, "JOB_STATE_QUEUED")
    queued = job.status()
    fake_vertex.set_state(job.id, "JOB_STATE_PENDING")
    pending = job.status()
    fake_vertex.set_state(job.id, "JOB_STATE_RUNNING")
    running = job.status()
    assert (queued.state, queued.provider_state) == ("queued", "JOB_STATE_QUEUED")
    assert queued.pending_reason == "queued for quota: Vertex AI holds the job until its quota is free"
    assert (pending.provider_state, pending.pending_reason) == (
        "JOB_STATE_PENDING",
        "waiting for flex-start capacity (Dynamic Workload Scheduler)",
    )
    assert pending.pending_since == queued.pending_since is not None  # since the job was created
    assert (running.state, running.pending_since, running.pending_reason) == ("running", None, "")


@pytest.mark.usefixtures("fake_gcs")
def test_a_flex_job_that_expired_waiting_failed_for_capacity(
    fake_vertex: FakeJobService, clients: vertex.VertexClients
) -> None:
    job = submit(clients, *FLEX)
    fake_vertex.set_state(job.id, "JOB_STATE_EXPIRED")
    final = job.status()
    assert final.state == "failed"
    assert final.failure is not None and final.failure.reason == Reason.CAPACITY
    assert final.failure.code == "JOB_STATE_EXPIRED"


@pytest.mark.usefixtures("fake_gcs")
def test_the_pending_limit_cancels_a_job_still_pending(
    fake_vertex: FakeJobService, clients: vertex.VertexClients
) -> None:
    job = submit(clients, *FLEX)
    fake_vertex.set_state(job.id, "JOB_STATE_PENDING")
    ticks = iter(range(0, 10_000, 60))
    final = wait_to_start(job, limit_s=120, poll_s=0, clock=lambda: next(ticks))
    assert (final.state, final.provider_state) == ("cancelled", "JOB_STATE_CANCELLED")
    assert final.failure is not None and final.failure.reason == Reason.CAPACITY
    assert "waiting for flex-start capacity" in final.failure.message
    assert len(fake_vertex.calls("CancelCustomJob")) == 1
