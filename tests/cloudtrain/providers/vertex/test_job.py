"""Submitting and controlling Vertex jobs: the real JobServiceClient against a fake JobService on
loopback, and real uploads to gcp-storage-emulator."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
from google.cloud import aiplatform_v1, storage
from google.protobuf import json_format

import cloudtrain
from cloudtrain import api
from cloudtrain.api import plan
from cloudtrain.errors import CredentialsError, ProviderError
from cloudtrain.provider import JobStatus
from cloudtrain.providers import vertex
from cloudtrain.providers.vertex import clients as vertex_clients
from cloudtrain.providers.vertex.clients import ATTEMPTS
from tests.cloudtrain.providers.fakes.vertex_jobservice import FakeJobService
from tests.cloudtrain.providers.fakes.vertex_storage import BUCKET
from tests.cloudtrain.providers.vertex.racing import race

REPO = Path(__file__).resolve().parents[4]
EXAMPLE = REPO / "examples" / "binary_classifier" / "job.yaml"
PARENT = "projects/my-project/locations/us-central1"
# Google's words for a rate limit, and for a training quota
# (GoogleCloudPlatform/vertex-ai-samples#1000, GoogleCloudPlatform/stable-diffusion-on-gcp#12).
RATE_LIMIT = (
    "Quota exceeded for quota metric 'Resource management requests' and limit 'Resource management "
    "requests per minute per region' of service 'aiplatform.googleapis.com'."
)
T4_QUOTA = "The following quota metrics exceed quota limits: aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def clients(sleeps: list[float]) -> vertex.VertexClients:
    """Default clients (built from the endpoint variables), with a sleep that only records."""
    return vertex.VertexClients(sleep=sleeps.append)


def submit(clients: vertex.VertexClients, *overrides: str) -> vertex.VertexJob:
    spec = api.as_spec(EXAMPLE, overrides)
    return cloudtrain.submit(spec, provider="vertex", clients=clients)


@pytest.mark.usefixtures("fake_gcs")
def test_submit_sends_the_rendered_request_and_uploads_the_code(
    fake_vertex: FakeJobService, clients: vertex.VertexClients
) -> None:
    job = submit(clients)
    (create,) = fake_vertex.calls("CreateCustomJob")
    assert create.parent == PARENT
    sent = json_format.MessageToDict(aiplatform_v1.CustomJob.pb(create.custom_job))
    expected = json_format.MessageToDict(aiplatform_v1.CustomJob.pb(api_custom_job(job.request)))
    assert sent == expected
    assert job.id == f"{PARENT}/customJobs/{fake_vertex.jobs[job.id].name.rsplit('/', 1)[1]}"
    assert vertex.owns(job.id)
    bundle_uri = job.request["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"][0]["value"]
    blob = storage.Client().bucket(BUCKET).get_blob(bundle_uri.removeprefix(f"/gcs/{BUCKET}/"))
    assert blob is not None and blob.size > 0


@pytest.mark.usefixtures("fake_gcs")
def test_the_public_submit_passes_upload_progress_to_the_callback(
    fake_vertex: FakeJobService, clients: vertex.VertexClients, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[cloudtrain.Progress] = []
    cloudtrain.submit(EXAMPLE, provider="vertex", clients=clients, progress=seen.append)
    first, last = seen[0], seen[-1]
    assert (first.step, first.done, last.done) == ("upload", 0, first.total)
    [sent] = [blob for blob in storage.Client().bucket(BUCKET).list_blobs() if blob.name.endswith(first.name)]
    assert sent.size == first.total
    assert capsys.readouterr() == ("", "")  # the library draws nothing


def api_custom_job(request: dict) -> aiplatform_v1.CustomJob:
    message = aiplatform_v1.CustomJob.pb(aiplatform_v1.CustomJob())
    json_format.ParseDict(request, message, ignore_unknown_fields=False)
    return aiplatform_v1.CustomJob.wrap(message)


@pytest.mark.usefixtures("fake_gcs")
def test_submitting_the_same_spec_twice_returns_the_first_job(
    fake_vertex: FakeJobService, clients: vertex.VertexClients
) -> None:
    first = submit(clients)
    generation = storage.Client().bucket(BUCKET).get_blob(bundle_name(first)).generation
    second = submit(clients)
    assert second.id == first.id
    assert len(fake_vertex.calls("CreateCustomJob")) == 1
    label = f'labels.cloudtrain_request="{first.request["labels"]["cloudtrain_request"]}"'
    assert [call.filter for call in fake_vertex.calls("ListCustomJobs")] == [
        label
    ] * 3  # look, reconcile, look
    assert storage.Client().bucket(BUCKET).get_blob(bundle_name(first)).generation == generation


def bundle_name(job: vertex.VertexJob) -> str:
    env = job.request["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"]
    return next(item["value"] for item in env if item["name"] == "CLOUDTRAIN_BUNDLE").removeprefix(
        f"/gcs/{BUCKET}/"
    )


@pytest.mark.usefixtures("fake_gcs")
def test_two_identical_submits_at_the_same_moment_make_one_job_and_both_return_it(
    fake_vertex: FakeJobService,
) -> None:
    # regression: both looked, found nothing, and both created a CustomJob
    jobs = race(fake_vertex, api.as_spec(EXAMPLE))
    assert len(fake_vertex.calls("CreateCustomJob")) == 2  # the race happened
    assert len(jobs) == 2 and jobs[0].id == jobs[1].id
    earliest = min(fake_vertex.jobs.values(), key=lambda job: (job.create_time, job.name))
    assert jobs[0].id == earliest.name
    (duplicate,) = [job for name, job in fake_vertex.jobs.items() if name != earliest.name]
    assert [call.name for call in fake_vertex.calls("CancelCustomJob")] == [duplicate.name]
    assert duplicate.state.name == "JOB_STATE_CANCELLING"
    assert earliest.state.name == "JOB_STATE_QUEUED"


@pytest.mark.usefixtures("fake_gcs")
def test_a_changed_spec_creates_a_new_job(fake_vertex: FakeJobService, clients: vertex.VertexClients) -> None:
    first = submit(clients)
    second = submit(clients, "training.epochs=4")
    assert second.id != first.id
    assert len(fake_vertex.calls("CreateCustomJob")) == 2


@pytest.mark.usefixtures("fake_gcs")
def test_resubmitting_after_a_failure_creates_a_new_job(
    fake_vertex: FakeJobService, clients: vertex.VertexClients
) -> None:
    first = submit(clients)
    fake_vertex.set_state(first.id, "JOB_STATE_FAILED")
    second = submit(clients)
    assert second.id != first.id


@pytest.mark.usefixtures("fake_gcs")
def test_create_retries_unavailable_with_exponential_backoff(
    fake_vertex: FakeJobService, clients: vertex.VertexClients, sleeps: list[float]
) -> None:
    fake_vertex.fail("CreateCustomJob", grpc.StatusCode.UNAVAILABLE, times=2)
    fake_vertex.fail("CreateCustomJob", grpc.StatusCode.RESOURCE_EXHAUSTED, times=1)
    job = submit(clients)
    assert len(fake_vertex.calls("CreateCustomJob")) == 4
    assert len(fake_vertex.jobs) == 1 and job.id in fake_vertex.jobs
    assert sleeps == [1.0, 2.0, 4.0]


@pytest.mark.usefixtures("fake_gcs")
@pytest.mark.parametrize(
    ("message", "creates", "advice"),
    [
        (  # a rate limit clears within seconds: retried
            "",
            ATTEMPTS,
            f"Too many requests to Vertex AI; retried {ATTEMPTS - 1} times. Try again later.",
        ),
        (  # a training quota lasts until jobs end: not retried
            T4_QUOTA,
            1,
            "Project my-project has no custom_model_training_nvidia_t4_gpus quota left in us-central1: ",
        ),
    ],
    ids=["rate-limit", "quota"],
)
def test_create_gives_up_after_bounded_attempts_with_one_clear_line(
    fake_vertex: FakeJobService,
    clients: vertex.VertexClients,
    sleeps: list[float],
    message: str,
    creates: int,
    advice: str,
) -> None:
    fake_vertex.fail("CreateCustomJob", grpc.StatusCode.RESOURCE_EXHAUSTED, times=ATTEMPTS, message=message)
    with pytest.raises(ProviderError) as error:
        submit(clients)
    assert str(error.value).startswith(f"Could not create a custom job in {PARENT}: ")
    assert advice in str(error.value)
    assert len(fake_vertex.calls("CreateCustomJob")) == creates
    assert len(sleeps) == creates - 1
    assert fake_vertex.jobs == {}


@pytest.mark.usefixtures("fake_gcs")
def test_a_rate_limited_lookup_is_retried_then_submits(
    fake_vertex: FakeJobService, clients: vertex.VertexClients, sleeps: list[float]
) -> None:
    fake_vertex.fail("ListCustomJobs", grpc.StatusCode.RESOURCE_EXHAUSTED, times=2, message=RATE_LIMIT)
    job = submit(clients)
    assert list(fake_vertex.jobs) == [job.id]
    assert sleeps == [1.0, 2.0]


@pytest.mark.usefixtures("fake_gcs")
def test_a_lookup_rate_limited_every_time_says_so_not_quota(
    fake_vertex: FakeJobService, clients: vertex.VertexClients, sleeps: list[float]
) -> None:
    # regression: a 429 on ListCustomJobs advised "out of quota for this machine"
    fake_vertex.fail("ListCustomJobs", grpc.StatusCode.RESOURCE_EXHAUSTED, times=ATTEMPTS, message=RATE_LIMIT)
    with pytest.raises(ProviderError) as error:
        submit(clients)
    assert str(error.value) == (
        f"Could not list custom jobs in {PARENT}: {RATE_LIMIT.rstrip('.')} (ResourceExhausted). "
        f"Too many requests to Vertex AI; retried {ATTEMPTS - 1} times. Try again later."
    )
    assert len(sleeps) == ATTEMPTS - 1
    assert fake_vertex.calls("CreateCustomJob") == []


@pytest.mark.usefixtures("fake_gcs")
def test_a_create_whose_response_was_lost_is_found_not_sent_again(
    fake_vertex: FakeJobService, clients: vertex.VertexClients, sleeps: list[float]
) -> None:
    # regression: a create that timed out after Vertex had made the job was sent again
    fake_vertex.lose_response("CreateCustomJob", grpc.StatusCode.DEADLINE_EXCEEDED)
    job = submit(clients)
    assert len(fake_vertex.calls("CreateCustomJob")) == 1
    assert list(fake_vertex.jobs) == [job.id]
    assert sleeps == [1.0]


@pytest.mark.usefixtures("fake_gcs")
@pytest.mark.parametrize(
    ("code", "reason", "error", "fix"),
    [
        (grpc.StatusCode.PERMISSION_DENIED, "", ProviderError, "roles/aiplatform.user on project my-project"),
        (  # a disabled API is PERMISSION_DENIED with reason SERVICE_DISABLED, not a missing role
            grpc.StatusCode.PERMISSION_DENIED,
            "SERVICE_DISABLED",
            ProviderError,
            "gcloud services enable aiplatform.googleapis.com --project my-project",
        ),
        (grpc.StatusCode.INVALID_ARGUMENT, "", ProviderError, "cloudtrain render JOB --provider vertex"),
        (grpc.StatusCode.UNAUTHENTICATED, "", CredentialsError, "gcloud auth application-default login"),
        (grpc.StatusCode.FAILED_PRECONDITION, "", ProviderError, "The project is not ready for this job"),
    ],
)
def test_permanent_errors_fail_at_once_and_say_what_to_do(
    fake_vertex: FakeJobService,
    clients: vertex.VertexClients,
    sleeps: list[float],
    code: grpc.StatusCode,
    reason: str,
    error: type[Exception],
    fix: str,
) -> None:
    fake_vertex.fail("CreateCustomJob", code, reason=reason)
    with pytest.raises(error, match=re.escape(fix)):
        submit(clients)
    assert sleeps == []
    assert len(fake_vertex.calls("CreateCustomJob")) == 1


@pytest.mark.usefixtures("fake_gcs")
def test_status_moves_through_neutral_states_and_wait_reports_each_change(
    fake_vertex: FakeJobService, clients: vertex.VertexClients, sleeps: list[float]
) -> None:
    job = submit(clients)
    seen: list[JobStatus] = []
    final = job.wait(poll_s=7.0, on_status=seen.append)
    assert [s.state for s in seen] == ["queued", "running", "succeeded"]
    assert [s.provider_state for s in seen] == [
        "JOB_STATE_PENDING",
        "JOB_STATE_RUNNING",
        "JOB_STATE_SUCCEEDED",
    ]
    assert final.done and sleeps == [7.0, 7.0]


@pytest.mark.usefixtures("fake_gcs")
def test_attach_by_id_then_cancel(fake_vertex: FakeJobService, clients: vertex.VertexClients) -> None:
    job_id = submit(clients).id
    attached = cloudtrain.attach(job_id, clients=vertex.VertexClients())
    assert attached.region == "us-central1" and attached.request is None
    attached.cancel()
    assert fake_vertex.calls("CancelCustomJob")[0].name == job_id
    assert attached.status().state == "cancelled"


@pytest.mark.usefixtures("fake_gcs")
def test_a_request_with_a_field_vertex_lacks_is_refused_before_sending(
    fake_vertex: FakeJobService, clients: vertex.VertexClients
) -> None:
    planned, packed = api.pack_code(plan(api.as_spec(EXAMPLE), "vertex").with_run("r1"))
    request = vertex.provider.render(planned)
    request["jobSpec"]["scheduling"]["maxRetries"] = 3  # a SageMaker idea, not a Scheduling field
    with pytest.raises(ProviderError, match=r"not a valid Vertex AI CustomJob: .*maxRetries"):
        vertex.submit(planned, request, packed, clients)
    assert fake_vertex.calls("CreateCustomJob") == []


def test_failed_job_status_carries_the_error_message(
    fake_vertex: FakeJobService, clients: vertex.VertexClients
) -> None:
    fake_vertex.states = ("JOB_STATE_RUNNING", "JOB_STATE_FAILED")
    job = vertex.attach(create_directly(clients), clients)
    assert job.status().state == "failed"
    assert "exited with a non-zero status" in job.status().detail


def rendered_request() -> dict:
    planned = plan(api.as_spec(EXAMPLE), "vertex").with_bundle(f"gs://{BUCKET}/code/0.tar.gz").with_run("r1")
    return vertex.provider.render(planned)


def create_directly(clients: vertex.VertexClients) -> str:
    """A job made in the fake service through the client, without an upload; its name."""
    created = clients.job_service("us-central1").create_custom_job(
        parent=PARENT, custom_job=api_custom_job(rendered_request())
    )
    return str(created.name)


@pytest.mark.parametrize(
    ("code", "message", "retried"),
    [
        (grpc.StatusCode.UNAVAILABLE, "", True),  # transient everywhere
        (grpc.StatusCode.DEADLINE_EXCEEDED, "", True),  # transient everywhere
        (grpc.StatusCode.INTERNAL, "", True),  # a server error; get is safe to repeat
        (grpc.StatusCode.RESOURCE_EXHAUSTED, RATE_LIMIT, True),  # a rate limit, on any call
        (grpc.StatusCode.PERMISSION_DENIED, "", False),  # permanent
    ],
)
def test_status_retries_only_transient_errors(
    fake_vertex: FakeJobService,
    clients: vertex.VertexClients,
    sleeps: list[float],
    code: grpc.StatusCode,
    message: str,
    retried: bool,
) -> None:
    job = vertex.attach(create_directly(clients), clients)
    fake_vertex.fail("GetCustomJob", code, message=message)
    if retried:
        assert job.status().state == "queued"
        assert sleeps == [1.0]
    else:
        with pytest.raises(ProviderError, match=r"\(PermissionDenied\)"):
            job.status()
        assert sleeps == []


@pytest.mark.parametrize(
    "state",
    [
        "JOB_STATE_SUCCEEDED",
        "JOB_STATE_FAILED",
        "JOB_STATE_CANCELLED",
        "JOB_STATE_EXPIRED",  # a job that waited past max_wait_duration
    ],
)
def test_cancelling_an_ended_job_says_it_ended_and_in_which_state(
    fake_vertex: FakeJobService, clients: vertex.VertexClients, state: str
) -> None:
    # regression: FAILED_PRECONDITION on cancel advised enabling the Vertex AI API
    job_id = create_directly(clients)
    fake_vertex.set_state(job_id, state)
    with pytest.raises(ProviderError) as error:
        vertex.attach(job_id, clients).cancel()
    neutral = vertex.names.STATES[state]
    assert str(error.value) == (
        f"Could not cancel {job_id}: it already ended, {neutral} ({state}). There is nothing to cancel."
    )


def test_a_refused_cancel_of_a_job_still_running_keeps_vertexs_reason(
    fake_vertex: FakeJobService, clients: vertex.VertexClients
) -> None:
    job = vertex.attach(create_directly(clients), clients)
    fake_vertex.fail("CancelCustomJob", grpc.StatusCode.FAILED_PRECONDITION, message="Job is being updated.")
    with pytest.raises(
        ProviderError, match=r"Job is being updated \(FailedPrecondition\)\. .*cloudtrain status"
    ):
        job.cancel()


def test_status_of_an_unknown_job_names_it(
    fake_vertex: FakeJobService, clients: vertex.VertexClients
) -> None:
    job_id = f"{PARENT}/customJobs/42"
    with pytest.raises(ProviderError, match=rf"Could not get {job_id}: CustomJob .* not found \(NotFound\)"):
        vertex.attach(job_id, clients).status()


@pytest.mark.parametrize(
    ("job_id", "owned"),
    [
        ("projects/p/locations/us-central1/customJobs/123", True),  # the resource name Vertex returns
        ("projects/p/locations/us-central1/customJobs/abc", False),  # IDs are numbers
        ("projects/p/locations/us-central1/customJobs/1\n", False),  # regression: $ let a newline in
        ("projects/p/locations/us-central1/customJobs/\u0661\u0662", False),  # \d: Arabic-Indic digits
        ("projects/p q/locations/us-central1/customJobs/1", False),  # no spaces in a project ID
        ("projects/p/locations/us-central1/customJobs/1/operations/2", False),  # a sub-resource
        ("projects/p/locations/us-central1/trainingPipelines/1", False),  # another resource
        ("arn:aws:sagemaker:us-east-1:123456789012:training-job/x", False),  # SageMaker
        ("binary-classifier-20261202", False),  # a local run
    ],
)
def test_owns_recognises_custom_job_resource_names(job_id: str, owned: bool) -> None:
    assert vertex.owns(job_id) is owned


@pytest.mark.parametrize("job_id", ["123", f"{PARENT}/customJobs/1\n"])
def test_attach_refuses_an_id_that_is_not_a_custom_job(job_id: str) -> None:
    with pytest.raises(ProviderError, match="projects/PROJECT/locations/REGION/customJobs/NUMBER") as error:
        vertex.attach(job_id)
    assert "\n" not in str(error.value)


@pytest.mark.usefixtures("no_google_credentials")
@pytest.mark.parametrize(
    "connect",
    [
        lambda: vertex.VertexClients().job_service("us-central1"),  # JobService
        lambda: vertex_clients.cloud_storage_client("my-project"),  # the code upload
        vertex_clients.logging_session,  # Cloud Logging
    ],
    ids=["jobs", "storage", "logging"],
)
def test_missing_credentials_show_the_gcloud_command(connect: Callable[[], object]) -> None:
    with pytest.raises(CredentialsError, match=r"\$ gcloud auth application-default login"):
        connect()
