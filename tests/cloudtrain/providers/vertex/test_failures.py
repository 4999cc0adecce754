"""Vertex AI's errors in the shared words, read through the real JobServiceClient from the fake JobService.

Each message is Google's as users have met it; the source is beside it.
"""

from __future__ import annotations

import grpc
import pytest

import cloudtrain
from cloudtrain import api
from cloudtrain.provider import Reason
from cloudtrain.providers import vertex
from cloudtrain.providers.vertex.clients import GoogleCallError
from cloudtrain.providers.vertex.failures import job_failure
from tests.cloudtrain.providers.fakes.vertex_jobservice import FakeJobService
from tests.cloudtrain.providers.vertex.test_job import EXAMPLE, RATE_LIMIT, T4_QUOTA

# github.com/openreview/openreview-expertise/issues/401: every zone of the region was tried.
STOCKOUT = "Resources are insufficient in region: us-central1. Please try a different region."
# github.com/googleapis/python-aiplatform/issues/885
BUCKET_REGION = (
    "The Cloud Storage bucket of `gs://model_metadata_prod/aiplatform-custom-job-2021-12-05-10:15:22.264` "
    "is in location `us`. It must be in the same regional location as the service location `us-central1`."
)
# github.com/tensorflow/models/issues/10735
EXITED = "The replica workerpool0-0 exited with a non-zero status of 1. To find out more about why your job exited please check the logs: https://console.cloud.google.com/logs/viewer?project=619829274226"


@pytest.fixture
def clients() -> vertex.VertexClients:
    return vertex.VertexClients(sleep=lambda seconds: None)


def submit(clients: vertex.VertexClients) -> vertex.VertexJob:
    return cloudtrain.submit(api.as_spec(EXAMPLE), provider="vertex", clients=clients)


@pytest.mark.usefixtures("fake_gcs")
@pytest.mark.parametrize(
    ("code", "message", "reason"),
    [
        (grpc.StatusCode.RESOURCE_EXHAUSTED, T4_QUOTA, Reason.QUOTA),  # over a training quota
        (grpc.StatusCode.RESOURCE_EXHAUSTED, RATE_LIMIT, Reason.INTERNAL),  # too many requests: passes
        (grpc.StatusCode.FAILED_PRECONDITION, BUCKET_REGION, Reason.CONFIGURATION),  # bucket elsewhere
        (
            grpc.StatusCode.PERMISSION_DENIED,
            "Permission 'aiplatform.customJobs.create' denied",
            Reason.PERMISSION,
        ),
        (grpc.StatusCode.INVALID_ARGUMENT, "List of found errors: 1.Field: job_spec", Reason.CONFIGURATION),
        (grpc.StatusCode.UNAVAILABLE, "The service is currently unavailable.", Reason.INTERNAL),
    ],
    ids=["quota", "rate-limit", "bucket-region", "permission", "invalid", "unavailable"],
)
def test_a_refused_create_says_why_in_the_shared_words(
    fake_vertex: FakeJobService,
    clients: vertex.VertexClients,
    code: grpc.StatusCode,
    message: str,
    reason: Reason,
) -> None:
    fake_vertex.fail("CreateCustomJob", code, times=10, message=message)
    with pytest.raises(GoogleCallError) as refused:
        submit(clients)
    assert refused.value.failure.reason is reason
    assert refused.value.failure.code == code.name
    assert fake_vertex.jobs == {}


@pytest.mark.usefixtures("fake_gcs")
@pytest.mark.parametrize(
    ("code", "message", "reason", "code_name"),
    [
        (8, STOCKOUT, Reason.CAPACITY, "RESOURCE_EXHAUSTED"),
        (9, EXITED, Reason.USER_CODE, "exit 1"),
        (8, T4_QUOTA, Reason.QUOTA, "RESOURCE_EXHAUSTED"),
        (13, "Internal error occurred for the current attempt.", Reason.INTERNAL, "INTERNAL"),
    ],
    ids=["stockout", "user-code", "quota", "internal"],
)
def test_a_failed_job_says_why_in_the_shared_words(
    fake_vertex: FakeJobService,
    clients: vertex.VertexClients,
    code: int,
    message: str,
    reason: Reason,
    code_name: str,
) -> None:
    job = submit(clients)
    fake_vertex.set_state(job.id, "JOB_STATE_FAILED", error=(code, message))
    status = job.status()
    assert status.state == "failed"
    assert status.failure is not None
    assert (status.failure.reason, status.failure.code) == (reason, code_name)
    assert status.detail == message


@pytest.mark.usefixtures("fake_gcs")
def test_a_job_that_did_not_fail_has_no_failure(
    fake_vertex: FakeJobService, clients: vertex.VertexClients
) -> None:
    job = submit(clients)
    fake_vertex.set_state(job.id, "JOB_STATE_SUCCEEDED")
    assert job.status().failure is None


def test_compute_engines_own_stockout_words_are_capacity_too() -> None:
    # cloud.google.com/compute/docs/troubleshooting/troubleshooting-resource-availability
    zone = "The zone 'projects/p/zones/us-central1-a' does not have enough resources available to fulfill the request."
    assert job_failure(8, zone).reason is Reason.CAPACITY
    assert job_failure(8, "ZONE_RESOURCE_POOL_EXHAUSTED").reason is Reason.CAPACITY
