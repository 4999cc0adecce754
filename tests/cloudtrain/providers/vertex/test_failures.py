"""Vertex AI's errors in the shared words, read through the real JobServiceClient from the fake JobService.

Each message is Google's as users have met it; the source is beside it.
"""

from __future__ import annotations

import pytest

import cloudtrain
from cloudtrain import api
from cloudtrain.providers import vertex
from tests.cloudtrain.providers.fakes.vertex_jobservice import FakeJobService
from tests.cloudtrain.providers.vertex.test_job import EXAMPLE

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
def test_a_job_that_did_not_fail_has_no_failure(
    fake_vertex: FakeJobService, clients: vertex.VertexClients
) -> None:
    job = submit(clients)
    fake_vertex.set_state(job.id, "JOB_STATE_SUCCEEDED")
    assert job.status().failure is None
