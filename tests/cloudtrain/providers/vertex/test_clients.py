"""How a failed Google call reads: the advice fits the call and the cause, and only what can clear is retried.

Each row is a (call, status, Google's message, ErrorInfo reason) as the Vertex backend meets
it, built the way api_core builds it from a gRPC status or an HTTP response.
"""

from __future__ import annotations

import grpc
import pytest
import requests
from google.api_core import exceptions

from cloudtrain.errors import CredentialsError, ProviderError
from cloudtrain.providers.vertex.clients import (
    ADC_FIX,
    ATTEMPTS,
    LOGGING_API,
    STORAGE_API,
    ApiCall,
    GoogleCallError,
    is_transient,
    translate,
)

PARENT = "projects/my-project/locations/us-central1"
JOB = f"{PARENT}/customJobs/42"
CREATE = ApiCall(
    f"create a custom job in {PARENT}", "CreateCustomJob", project="my-project", region="us-central1"
)
LIST = ApiCall(f"list custom jobs in {PARENT}", "ListCustomJobs", project="my-project", region="us-central1")
GET = ApiCall(f"get {JOB}", "GetCustomJob", project="my-project", region="us-central1", resource=JOB)
CANCEL = ApiCall(f"cancel {JOB}", "CancelCustomJob", project="my-project", region="us-central1", resource=JOB)
LOGS = ApiCall("read the logs of job 42", "entries.list", LOGGING_API, project="my-project")
UPLOAD = ApiCall("upload the code to gs://b/code/0.tar.gz", "objects.insert", STORAGE_API, resource="gs://b")

RATE_LIMIT = "Quota exceeded for quota metric 'Read requests' and limit 'Read requests per minute'"
T4_QUOTA = "The following quota metrics exceed quota limits: aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"
NOT_USED = "{} API has not been used in project 123456789012 before or it is disabled. Enable it by visiting"
BILLING = "This API method requires billing to be enabled. Please enable billing on project #123456789012."
ACT_AS = "Permission 'iam.serviceAccounts.actAs' denied on service account trainer@my-project.iam.gserviceaccount.com"


def grpc_error(
    code: grpc.StatusCode, message: str = "refused", reason: str = "", service: str = ""
) -> Exception:
    """The api_core exception of a gRPC status, with an ErrorInfo when ``reason`` is given."""
    info = {"reason": reason, "metadata": {"service": service, "consumer": "projects/123456789012"}}
    return exceptions.from_grpc_status(code, message, error_info=info if reason else None)


def http_error(status: int, message: str = "refused", reason: str = "", service: str = "") -> Exception:
    """The api_core exception of an HTTP error of a JSON API, as ``from_http_response`` makes it."""
    info = {"reason": reason, "metadata": {"service": service, "consumer": "projects/123456789012"}}
    return exceptions.from_http_status(status, message, error_info=info if reason else None)


@pytest.mark.parametrize(
    ("call", "error", "advice"),
    [
        # RESOURCE_EXHAUSTED: a training quota on create, a rate limit anywhere
        (  # regression: the idempotency lookup's rate limit read as a machine quota
            LIST,
            grpc_error(grpc.StatusCode.RESOURCE_EXHAUSTED, RATE_LIMIT),
            f"Too many requests to Vertex AI; retried {ATTEMPTS - 1} times. Try again later.",
        ),
        (
            CREATE,
            grpc_error(grpc.StatusCode.RESOURCE_EXHAUSTED, RATE_LIMIT),
            f"Too many requests to Vertex AI; retried {ATTEMPTS - 1} times. Try again later.",
        ),
        (
            CREATE,
            grpc_error(grpc.StatusCode.RESOURCE_EXHAUSTED, T4_QUOTA),
            "Project my-project has no custom_model_training_nvidia_t4_gpus quota left in us-central1: "
            "request more in the console (IAM & Admin > Quotas, filter custom_model_training_nvidia_t4_gpus)",
        ),
        (
            LOGS,
            http_error(429, RATE_LIMIT),
            f"Too many requests to Cloud Logging; retried {ATTEMPTS - 1} times. Try again later.",
        ),
        # PERMISSION_DENIED: a missing role, a disabled API, no billing, no actAs
        (
            CREATE,
            grpc_error(grpc.StatusCode.PERMISSION_DENIED, "Permission 'aiplatform.customJobs.create' denied"),
            "Grant the caller roles/aiplatform.user on project my-project, or check vertex.project.",
        ),
        (  # the ErrorInfo names the service
            CREATE,
            grpc_error(
                grpc.StatusCode.PERMISSION_DENIED,
                NOT_USED.format("Vertex AI"),
                "SERVICE_DISABLED",
                "aiplatform.googleapis.com",
            ),
            "gcloud services enable aiplatform.googleapis.com --project my-project",
        ),
        (  # no ErrorInfo: the message alone tells
            GET,
            grpc_error(grpc.StatusCode.PERMISSION_DENIED, NOT_USED.format("Vertex AI")),
            "gcloud services enable aiplatform.googleapis.com --project my-project",
        ),
        (
            LOGS,
            http_error(403, NOT_USED.format("Cloud Logging")),
            "gcloud services enable logging.googleapis.com --project my-project",
        ),
        (  # a call without a project: the ErrorInfo's consumer
            UPLOAD,
            http_error(403, "Cloud Storage is disabled", "SERVICE_DISABLED", "storage.googleapis.com"),
            "gcloud services enable storage.googleapis.com --project 123456789012",
        ),
        (
            CREATE,
            grpc_error(grpc.StatusCode.PERMISSION_DENIED, BILLING, "BILLING_DISABLED"),
            "gcloud billing projects link my-project --billing-account ACCOUNT_ID",
        ),
        (
            UPLOAD,
            http_error(403, "The billing account for the owning project is disabled in state closed"),
            "gcloud billing projects link PROJECT --billing-account ACCOUNT_ID",
        ),
        (
            CREATE,
            grpc_error(grpc.StatusCode.PERMISSION_DENIED, ACT_AS),
            "Grant the caller roles/iam.serviceAccountUser on vertex.service_account.",
        ),
        (
            UPLOAD,
            http_error(403, "caller does not have storage.objects.create access"),
            "Grant the caller roles/storage.objectAdmin on gs://b, or check storage.root.",
        ),
        (
            LOGS,
            http_error(403, "The caller does not have permission"),
            "Grant the caller roles/logging.viewer on project my-project.",
        ),
        # NOT_FOUND: the job, the project or region, the bucket
        (
            GET,
            grpc_error(grpc.StatusCode.NOT_FOUND, f"CustomJob {JOB} not found"),
            "gcloud ai custom-jobs list --project my-project --region us-central1",
        ),
        (
            CANCEL,
            grpc_error(grpc.StatusCode.NOT_FOUND, f"CustomJob {JOB} not found"),
            "gcloud ai custom-jobs list --project my-project --region us-central1",
        ),
        (
            LIST,
            grpc_error(grpc.StatusCode.NOT_FOUND, "Location us-central1 is not found"),
            "Check vertex.project (my-project) and vertex.region (us-central1).",
        ),
        (
            UPLOAD,
            http_error(404, "The specified bucket does not exist."),
            "Create the bucket first: gcloud storage buckets create gs://b",
        ),
        # FAILED_PRECONDITION: the state of the project or of the job
        (
            CREATE,
            grpc_error(grpc.StatusCode.FAILED_PRECONDITION, "Network my-net is not peered with Vertex AI"),
            "The project is not ready for this job: fix what the message names",
        ),
        (
            CANCEL,
            grpc_error(grpc.StatusCode.FAILED_PRECONDITION, "Job is being updated"),
            f"The job cannot be cancelled in its state; see: cloudtrain status {JOB}",
        ),
        # INVALID_ARGUMENT: the user's request, or a query cloudtrain built
        (
            CREATE,
            grpc_error(grpc.StatusCode.INVALID_ARGUMENT, 'Accelerator "NVIDIA_TESLA_K80" is not supported'),
            "Check the request with: cloudtrain render JOB --provider vertex",
        ),
        (
            LIST,
            grpc_error(grpc.StatusCode.INVALID_ARGUMENT, "Unsupported filter"),
            "Vertex AI refused a query cloudtrain built; this is a cloudtrain bug, please report it.",
        ),
        (
            GET,
            grpc_error(grpc.StatusCode.INVALID_ARGUMENT, "Invalid resource name"),
            "Check the job ID: projects/PROJECT/locations/REGION/customJobs/NUMBER.",
        ),
        (
            LOGS,
            http_error(400, "Unparseable filter"),
            "Cloud Logging refused a query cloudtrain built; this is a cloudtrain bug, please report it.",
        ),
        # what was retried ATTEMPTS times
        (
            GET,
            grpc_error(grpc.StatusCode.UNAVAILABLE),
            f"Vertex AI was unavailable for {ATTEMPTS} attempts; try again later.",
        ),
        (
            GET,
            grpc_error(grpc.StatusCode.DEADLINE_EXCEEDED),
            f"Vertex AI did not answer in time, {ATTEMPTS} attempts; try again later.",
        ),
        (  # the lookup before each retry makes a second submit safe
            CREATE,
            grpc_error(grpc.StatusCode.DEADLINE_EXCEEDED),
            "a job this call created is found, not created twice.",
        ),
        (
            LOGS,
            http_error(500),
            f"Cloud Logging failed with an internal error {ATTEMPTS} times; try again later.",
        ),
        (
            LOGS,
            http_error(503),
            f"Cloud Logging was unavailable for {ATTEMPTS} attempts; try again later.",
        ),
        (
            LOGS,
            requests.ConnectionError("Connection refused"),
            f"Could not reach Cloud Logging in {ATTEMPTS} attempts; check the network, then try again.",
        ),
    ],
)
def test_advice_fits_the_call_and_the_cause(call: ApiCall, error: Exception, advice: str) -> None:
    translated = translate(error, call)
    assert isinstance(translated, GoogleCallError)
    assert advice in str(translated)
    assert str(translated).startswith(f"Could not {call.action}: ")
    assert "\n" not in str(translated)


@pytest.mark.parametrize(
    "error",
    [
        grpc_error(grpc.StatusCode.UNAUTHENTICATED, "Request had invalid authentication credentials"),
        http_error(401, "Request is missing required authentication credential"),
    ],
)
def test_rejected_credentials_show_the_gcloud_command(error: Exception) -> None:
    translated = translate(error, GET)
    assert isinstance(translated, CredentialsError)
    assert str(translated).endswith(ADC_FIX)


def test_what_is_not_a_google_failure_is_left_alone() -> None:
    error = ValueError("a bug")
    assert translate(error, GET) is error
    already = ProviderError("said")
    assert translate(already, GET) is already


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (grpc_error(grpc.StatusCode.UNAVAILABLE), True),  # gRPC's word for a lost connection
        (grpc_error(grpc.StatusCode.DEADLINE_EXCEEDED), True),  # no answer in time
        (grpc_error(grpc.StatusCode.INTERNAL), True),  # a server error
        (grpc_error(grpc.StatusCode.RESOURCE_EXHAUSTED, RATE_LIMIT), True),  # clears within seconds
        (grpc_error(grpc.StatusCode.RESOURCE_EXHAUSTED, T4_QUOTA), False),  # lasts until jobs end
        (grpc_error(grpc.StatusCode.PERMISSION_DENIED), False),
        (grpc_error(grpc.StatusCode.FAILED_PRECONDITION), False),
        (http_error(429, RATE_LIMIT), True),
        (http_error(500), True),
        (http_error(502), True),
        (http_error(503), True),
        (http_error(504), True),
        (http_error(403), False),
        (http_error(404), False),
        (requests.ConnectionError("refused"), True),  # nothing reached the server
        (requests.ReadTimeout("slow"), True),
        (ValueError("a bug"), False),
    ],
)
def test_only_what_can_clear_is_retried(error: Exception, transient: bool) -> None:
    assert is_transient(error) is transient
