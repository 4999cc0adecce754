"""The Google clients of the Vertex backend: how they are built, retried, and how their errors read.

Clients. ``VertexClients`` holds the JobService client, the Cloud Storage client and the
Cloud Logging session one job uses, each built on first use unless injected. Building
them needs Application Default Credentials; without any, the error shows the gcloud
command that sets them up. Test-only endpoints (no cloud account needed):

- ``CLOUDTRAIN_VERTEX_ENDPOINT=host:port``: the JobService client talks gRPC to that
  address over an insecure channel, which carries no credentials (none are looked up).
- ``CLOUDTRAIN_VERTEX_QUOTAS_ENDPOINT=host:port``: the Cloud Quotas client likewise.
- ``CLOUDTRAIN_VERTEX_LOGGING_ENDPOINT=host:port``: Cloud Logging's ``entries:list``
  is called over plain HTTP at that address, without credentials.
- ``STORAGE_EMULATOR_HOST=http://host:port``: google-cloud-storage's own setting for
  a Cloud Storage emulator.

Retries. ``with_retries`` runs a call through ``google.api_core.retry.retry_target``,
at most ``ATTEMPTS`` tries, waiting 1, 2, 4, ... seconds (at most 30) through the
injectable ``sleep``. Retried: UNAVAILABLE, DEADLINE_EXCEEDED and INTERNAL (HTTP 500,
502, 503, 504, 408), a connection that failed or timed out, and RESOURCE_EXHAUSTED when
it is a rate limit. A RESOURCE_EXHAUSTED that names a training quota metric
(``custom_model_training_*``) is not: it lasts until jobs end or the quota is raised.

Errors. What is not retried, or failed every attempt, becomes one ``GoogleCallError``
(a ``ProviderError``) or ``CredentialsError`` line: the call, Google's message, and the
``ADVICE`` for that call, status code and cause. The cause comes from the error's
``ErrorInfo`` reason where Google sends one, else from its message: an API that is not
enabled is PERMISSION_DENIED with reason SERVICE_DISABLED, not a missing role.
"""

from __future__ import annotations

import itertools
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from cloudtrain.errors import CloudtrainError, CredentialsError, require
from cloudtrain.provider.calls import ATTEMPTS, delay, translated
from cloudtrain.provider.failures import CallError
from cloudtrain.providers.vertex import failures

T = TypeVar("T")

ENDPOINT_ENV = "CLOUDTRAIN_VERTEX_ENDPOINT"
QUOTAS_ENDPOINT_ENV = "CLOUDTRAIN_VERTEX_QUOTAS_ENDPOINT"
LOGGING_ENDPOINT_ENV = "CLOUDTRAIN_VERTEX_LOGGING_ENDPOINT"
LOGGING_URL = "https://logging.googleapis.com"
LOGGING_READ_SCOPE = "https://www.googleapis.com/auth/logging.read"

# What the backend imports, all installed by the vertex extra (google-cloud-aiplatform
# brings google-auth, google-api-core and requests; google-cloud-storage is listed itself).
DEPENDENCIES = (
    "google.cloud.aiplatform_v1",
    "google.cloud.storage",
    "google.auth",
    "google.api_core",
    "requests",
)

VERTEX_API = "aiplatform.googleapis.com"
QUOTAS_API = "cloudquotas.googleapis.com"
STORAGE_API = "storage.googleapis.com"
LOGGING_API = "logging.googleapis.com"
TITLES = {
    VERTEX_API: "Vertex AI",
    STORAGE_API: "Cloud Storage",
    LOGGING_API: "Cloud Logging",
    QUOTAS_API: "Cloud Quotas",
}

ADC_FIX = "No usable Google credentials. Run:\n  $ gcloud auth application-default login"

# HTTP status -> google.rpc code, for the JSON APIs' errors, whose api_core class has no
# gRPC code (google/rpc/code.proto gives each code's HTTP status).
HTTP_CODES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    408: "DEADLINE_EXCEEDED",
    429: "RESOURCE_EXHAUSTED",
    502: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
# Worth another attempt: Cloud Storage's retry strategy retries 408, 429 and 5xx
# (storage/docs/retry-strategy); gRPC reports a lost connection as UNAVAILABLE.
TRANSIENT_CODES = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED", "INTERNAL"})
# Vertex's training quota error: "The following quota metrics exceed quota limits:
# aiplatform.googleapis.com/custom_model_training_nvidia_l4_gpus"
# (https://github.com/GoogleCloudPlatform/stable-diffusion-on-gcp/issues/12).
QUOTA_METRIC = re.compile(r"custom_model_training_[a-z0-9_]+")
# "This API method requires billing to be enabled" (reason BILLING_DISABLED); Cloud
# Storage: "The billing account for the owning project is disabled in state closed".
BILLING_DISABLED = re.compile(r"billing to be enabled|billing account .*is disabled", re.IGNORECASE)

NO_SUCH_JOB = (
    "There is no such custom job in project {project}, region {region}; check the ID: "
    "gcloud ai custom-jobs list --project {project} --region {region}"
)
BAD_JOB_ID = "Check the job ID: projects/PROJECT/locations/REGION/customJobs/NUMBER."
CLOUDTRAIN_BUG = "{title} refused a query cloudtrain built; this is a cloudtrain bug, please report it."
# (scope, google.rpc code, cause) -> what the user can do. The scope is a method, an API,
# or "*"; the most specific row wins, a row for the cause before one without. Causes per
# code as Google documents them (cloud.google.com/apis/design/errors, google/rpc/code.proto).
ADVICE = {
    ("*", "UNAUTHENTICATED", ""): ADC_FIX,
    ("*", "PERMISSION_DENIED", "api-disabled"): (
        "Enable the API (it takes a few minutes): gcloud services enable {api} --project {project}"
    ),
    ("*", "PERMISSION_DENIED", "billing-disabled"): (
        "Link project {project} to an open billing account: "
        "gcloud billing projects link {project} --billing-account ACCOUNT_ID"
    ),
    ("CreateCustomJob", "PERMISSION_DENIED", "act-as"): (
        "Grant the caller roles/iam.serviceAccountUser on vertex.service_account."
    ),
    (VERTEX_API, "PERMISSION_DENIED", ""): (
        "Grant the caller roles/aiplatform.user on project {project}, or check vertex.project."
    ),
    (STORAGE_API, "PERMISSION_DENIED", ""): (
        "Grant the caller roles/storage.objectAdmin on {resource}, or check storage.root."
    ),
    (LOGGING_API, "PERMISSION_DENIED", ""): "Grant the caller roles/logging.viewer on project {project}.",
    ("CreateCustomJob", "RESOURCE_EXHAUSTED", "quota"): (
        "Project {project} has no {metric} quota left in {region}: request more in the console "
        "(IAM & Admin > Quotas, filter {metric}), wait for running jobs to end, or use another "
        "accelerator or vertex.region."
    ),
    ("*", "RESOURCE_EXHAUSTED", "rate-limit"): (
        "Too many requests to {title}; retried {retries} times. Try again later."
    ),
    ("GetCustomJob", "NOT_FOUND", ""): NO_SUCH_JOB,
    ("CancelCustomJob", "NOT_FOUND", ""): NO_SUCH_JOB,
    (VERTEX_API, "NOT_FOUND", ""): "Check vertex.project ({project}) and vertex.region ({region}).",
    (STORAGE_API, "NOT_FOUND", ""): "Create the bucket first: gcloud storage buckets create {resource}",
    (LOGGING_API, "NOT_FOUND", ""): "Check vertex.project ({project}).",
    ("CreateCustomJob", "FAILED_PRECONDITION", ""): (
        "The project is not ready for this job: fix what the message names (the network peering "
        "of vertex.network, the service account, the encryption key), then submit again."
    ),
    ("CancelCustomJob", "FAILED_PRECONDITION", ""): (
        "The job cannot be cancelled in its state; see: cloudtrain status {resource}"
    ),
    ("*", "FAILED_PRECONDITION", ""): "Fix what the message names, then try again.",
    ("CreateCustomJob", "INVALID_ARGUMENT", ""): (
        "Check the request with: cloudtrain render JOB --provider vertex"
    ),
    ("ListCustomJobs", "INVALID_ARGUMENT", ""): CLOUDTRAIN_BUG,
    ("GetCustomJob", "INVALID_ARGUMENT", ""): BAD_JOB_ID,
    ("CancelCustomJob", "INVALID_ARGUMENT", ""): BAD_JOB_ID,
    ("entries.list", "INVALID_ARGUMENT", ""): CLOUDTRAIN_BUG,
    (STORAGE_API, "INVALID_ARGUMENT", ""): "Check storage.root: {resource} must be a valid bucket.",
    ("*", "UNAVAILABLE", "unreachable"): (
        "Could not reach {title} in {attempts} attempts; check the network, then try again."
    ),
    ("*", "UNAVAILABLE", ""): "{title} was unavailable for {attempts} attempts; try again later.",
    ("CreateCustomJob", "DEADLINE_EXCEEDED", ""): (
        "Vertex AI did not answer in time, {attempts} attempts; submit again later: a job this "
        "call created is found, not created twice."
    ),
    ("*", "DEADLINE_EXCEEDED", ""): "{title} did not answer in time, {attempts} attempts; try again later.",
    ("*", "INTERNAL", ""): "{title} failed with an internal error {attempts} times; try again later.",
}


class GoogleCallError(CallError):
    """A Google API call that failed for good: ``code`` is the google.rpc code (``NOT_FOUND``).

    ``cause`` narrows it down where Google says more: ``"api-disabled"``,
    ``"billing-disabled"``, ``"act-as"``, ``"quota"``, ``"rate-limit"``,
    ``"unreachable"``, or ``""``. ``failure`` is what it means in every provider's words
    (``failures.call_failure``), from Google's own message ``said``.
    """

    def __init__(self, message: str, *, code: str, cause: str = "", said: str = "") -> None:
        super().__init__(message, failures.call_failure(code, cause, said or message))
        self.code = code
        self.cause = cause


@dataclass(frozen=True)
class ApiCall:
    """One Google API call, as its error message and advice name it.

    Args:
        action: what it does (``"create a custom job in projects/p/locations/r"``).
        method: the API method (``"CreateCustomJob"``, ``"entries.list"``, ``"objects.insert"``).
        api: the service it belongs to (``aiplatform.googleapis.com``).
        project: the project it runs in, where known.
        region: the region it runs in, where known.
        resource: the job or bucket it is about, where there is one.

    Example:
    >>> ApiCall("get projects/p/locations/r/customJobs/1", "GetCustomJob", project="p", region="r").api
    'aiplatform.googleapis.com'
    """

    action: str
    method: str
    api: str = VERTEX_API
    project: str = ""
    region: str = ""
    resource: str = ""


@dataclass
class VertexClients:
    """The clients the Vertex backend uses; each is created on first use unless given.

    Args:
        jobs: an ``aiplatform_v1.JobServiceClient`` (any transport).
        quotas: a ``cloudquotas_v1.CloudQuotasClient`` for the quota preflight.
        storage: a ``google.cloud.storage.Client`` for the code upload.
        logs: a ``requests``-style session for Cloud Logging, with ``logging_url``.
        sleep: how to wait between retries and polls (tests pass a recorder).
    """

    jobs: Any = None
    quotas: Any = None
    storage: Any = None
    logs: Any = None
    logging_url: str | None = None
    sleep: Callable[[float], None] = time.sleep

    def job_service(self, region: str) -> Any:
        if self.jobs is None:
            self.jobs = job_service_client(region)
        return self.jobs

    def quota_service(self) -> Any:
        if self.quotas is None:
            self.quotas = cloud_quotas_client()
        return self.quotas

    def storage_client(self, project: str | None) -> Any:
        if self.storage is None:
            self.storage = cloud_storage_client(project)
        return self.storage

    def __repr__(self) -> str:
        given = [name for name in ("jobs", "quotas", "storage", "logs") if getattr(self, name) is not None]
        return f"VertexClients(given={given})"


def require_google() -> None:
    """Raise MissingDependencyError, with the pip command, unless the Google libraries import.

    Raises:
        MissingDependencyError: google-cloud-aiplatform or google-cloud-storage is missing.
    """
    for module in DEPENDENCIES:
        require(module, "vertex")


def job_service_client(region: str) -> Any:
    """A JobServiceClient for ``region``'s endpoint, or for ``$CLOUDTRAIN_VERTEX_ENDPOINT``.

    The test endpoint gets an insecure gRPC channel and no credentials at all.

    Raises:
        CredentialsError: no Application Default Credentials are set up.
    """
    require_google()
    from google.auth import exceptions as auth_exceptions
    from google.cloud import aiplatform_v1

    endpoint = os.environ.get(ENDPOINT_ENV)
    if endpoint:
        import grpc
        from google.cloud.aiplatform_v1.services.job_service.transports import JobServiceGrpcTransport

        transport = JobServiceGrpcTransport(channel=grpc.insecure_channel(endpoint))
        return aiplatform_v1.JobServiceClient(transport=transport)
    try:
        return aiplatform_v1.JobServiceClient(
            client_options={"api_endpoint": f"{region}-aiplatform.googleapis.com"}
        )
    except auth_exceptions.DefaultCredentialsError as exc:
        raise CredentialsError(ADC_FIX) from exc


def cloud_quotas_client() -> Any:
    """A ``CloudQuotasClient`` (google-cloud-quotas), or one for ``$CLOUDTRAIN_VERTEX_QUOTAS_ENDPOINT``.

    The Cloud Quotas API is global (cloudquotas.googleapis.com); the test endpoint gets an
    insecure gRPC channel and no credentials, as the JobService's does.

    Raises:
        CredentialsError: no Application Default Credentials are set up.
        MissingDependencyError: google-cloud-quotas is not installed.
    """
    require_google()
    require("google.cloud.cloudquotas_v1", "vertex")
    from google.auth import exceptions as auth_exceptions
    from google.cloud import cloudquotas_v1

    endpoint = os.environ.get(QUOTAS_ENDPOINT_ENV)
    if endpoint:
        import grpc
        from google.cloud.cloudquotas_v1.services.cloud_quotas.transports import CloudQuotasGrpcTransport

        return cloudquotas_v1.CloudQuotasClient(
            transport=CloudQuotasGrpcTransport(channel=grpc.insecure_channel(endpoint))
        )
    try:
        return cloudquotas_v1.CloudQuotasClient()
    except auth_exceptions.DefaultCredentialsError as exc:
        raise CredentialsError(ADC_FIX) from exc


def cloud_storage_client(project: str | None) -> Any:
    """A ``google.cloud.storage.Client`` with Application Default Credentials.

    google-cloud-storage honours ``STORAGE_EMULATOR_HOST`` (anonymous credentials) itself.

    Raises:
        CredentialsError: no credentials are set up.
    """
    require_google()
    from google.auth import exceptions as auth_exceptions

    # Whether mypy sees `storage` on the `google.cloud` namespace depends on which
    # google-cloud-* releases the resolver picked, so the ignore may go unused.
    from google.cloud import storage  # type: ignore[attr-defined, unused-ignore]

    try:
        return storage.Client(project=project)
    except auth_exceptions.DefaultCredentialsError as exc:
        raise CredentialsError(ADC_FIX) from exc


def logging_session() -> tuple[Any, str]:
    """A session and base URL for Cloud Logging; ``$CLOUDTRAIN_VERTEX_LOGGING_ENDPOINT`` in tests.

    google-auth's ``AuthorizedSession`` comes with google-cloud-aiplatform, so reading
    logs needs no google-cloud-logging.

    Raises:
        CredentialsError: no Application Default Credentials are set up.
    """
    require_google()
    endpoint = os.environ.get(LOGGING_ENDPOINT_ENV)
    if endpoint:
        import requests

        return requests.Session(), f"http://{endpoint}"
    import google.auth
    from google.auth import exceptions as auth_exceptions
    from google.auth.transport.requests import AuthorizedSession

    try:
        credentials, _ = google.auth.default(scopes=[LOGGING_READ_SCOPE])
    except auth_exceptions.DefaultCredentialsError as exc:
        raise CredentialsError(ADC_FIX) from exc
    return AuthorizedSession(credentials), LOGGING_URL


def with_retries(send: Callable[[], T], call: ApiCall, *, sleep: Callable[[float], None]) -> T:
    """Run ``send``, retrying transient failures with bounded exponential backoff.

    Args:
        send: the API call, without arguments.
        call: what it is, for the error message and its advice.
        sleep: how to wait between attempts (``time.sleep``; tests pass a recorder).

    Raises:
        GoogleCallError: the call failed permanently or ran out of attempts.
        CredentialsError: Google refused or could not find the caller's credentials.
        MissingDependencyError: the Google libraries are not installed.
    """
    require_google()
    from google.api_core import retry

    with translated(lambda exc: translate(exc, call)):
        # api_core would wait with time.sleep; the waiting is done in on_error through
        # ``sleep`` instead, so api_core's own waits are zero.
        return retry.retry_target(
            send,
            predicate=is_transient,
            sleep_generator=itertools.repeat(0.0),
            timeout=None,
            on_error=_Backoff(sleep).wait,
        )


def is_transient(exc: Exception) -> bool:
    """Whether another attempt may succeed: a server or network failure, or a rate limit."""
    code = status_code(exc)
    return code in TRANSIENT_CODES or (code == "RESOURCE_EXHAUSTED" and cause(exc, code) == "rate-limit")


class _Backoff:
    """api_core's ``on_error``: wait before the next attempt, or give up after ``ATTEMPTS``."""

    def __init__(self, sleep: Callable[[float], None]) -> None:
        self._sleep = sleep
        self._failures = 0

    def wait(self, error: Exception) -> None:
        self._failures += 1
        if self._failures == ATTEMPTS:
            raise error
        self._sleep(delay(self._failures))


def translate(exc: Exception, call: ApiCall) -> Exception:
    """The cloudtrain error for a failed Google call, or ``exc`` itself if it is not one.

    Example:
    >>> from google.api_core import exceptions
    >>> call = ApiCall("list custom jobs in projects/p/locations/r", "ListCustomJobs", project="p")
    >>> print(translate(exceptions.ResourceExhausted("Quota exceeded for requests per minute"), call))
    Could not list custom jobs in projects/p/locations/r: Quota exceeded for requests per minute (ResourceExhausted). Too many requests to Vertex AI; retried 4 times. Try again later.
    """
    if isinstance(exc, CloudtrainError):
        return exc
    require_google()
    code = status_code(exc)
    if code is None:
        return exc
    why = cause(exc, code)
    said = f"Could not {call.action}: {summary(exc)}"
    if code == "UNAUTHENTICATED":
        return CredentialsError(f"{said}. {ADC_FIX}")
    fix = advice(call, code, why, exc)
    return GoogleCallError(
        f"{said} ({type(exc).__name__}). {fix}".rstrip(), code=code, cause=why, said=summary(exc)
    )


def status_code(exc: Exception) -> str | None:
    """The google.rpc code of a failed call (``"NOT_FOUND"``); None if ``exc`` is no such failure.

    A connection that failed or timed out counts as UNAVAILABLE, as gRPC reports it.
    """
    from google.api_core import exceptions
    from google.auth import exceptions as auth_exceptions

    if _unreachable(exc):
        return "UNAVAILABLE"
    if isinstance(exc, auth_exceptions.GoogleAuthError):
        return "UNAUTHENTICATED"
    if not isinstance(exc, exceptions.GoogleAPICallError):
        return None
    if exc.grpc_status_code is not None:
        return str(exc.grpc_status_code.name)
    return HTTP_CODES.get(exc.code or 0, "UNKNOWN")


def cause(exc: Exception, code: str) -> str:
    """What Google says went wrong, beyond ``code``: the ``GoogleCallError.cause`` words."""
    reason = getattr(exc, "reason", None) or ""
    text = _message(exc)
    if _unreachable(exc):
        return "unreachable"
    if reason == "SERVICE_DISABLED" or "has not been used in project" in text:
        return "api-disabled"
    if reason == "BILLING_DISABLED" or BILLING_DISABLED.search(text):
        return "billing-disabled"
    if "iam.serviceAccounts.actAs" in text:
        return "act-as"
    if code == "RESOURCE_EXHAUSTED":
        return "quota" if QUOTA_METRIC.search(text) else "rate-limit"
    return ""


def advice(call: ApiCall, code: str, why: str, exc: Exception) -> str:
    """The ``ADVICE`` row for ``call``, ``code`` and cause ``why``, filled in; empty if none."""
    for reason in dict.fromkeys((why, "")):
        for scope in (call.method, call.api, "*"):
            template = ADVICE.get((scope, code, reason))
            if template is not None:
                return template.format_map(_facts(call, exc))
    return ""


def _facts(call: ApiCall, exc: Exception) -> dict[str, str]:
    """What an advice template may name: the call's own facts, and those in Google's answer."""
    metadata = dict(getattr(exc, "metadata", None) or {})
    consumer = str(metadata.get("consumer", "")).removeprefix("projects/")
    metric = QUOTA_METRIC.search(_message(exc))
    return {
        "project": call.project or consumer or "PROJECT",
        "region": call.region or "REGION",
        "resource": call.resource,
        "api": str(metadata.get("service") or call.api),
        "title": TITLES.get(call.api, call.api),
        "attempts": str(ATTEMPTS),
        "retries": str(ATTEMPTS - 1),
        "metric": metric[0] if metric else "",
    }


def summary(exc: Exception) -> str:
    """Google's message in one line, or where a connection failed and why."""
    if _unreachable(exc):
        url = getattr(getattr(exc, "request", None), "url", None)
        where = f" to {url}" if url else ""
        return f"no connection{where}: {_os_reason(exc)}"
    text = _message(exc).strip()
    return text.splitlines()[0].rstrip(".") if text else "no detail"


def _message(exc: Exception) -> str:
    return str(getattr(exc, "message", None) or exc)


def _unreachable(exc: Exception) -> bool:
    """A connection that failed, was dropped or timed out, before Google answered."""
    import requests
    from google.auth import exceptions as auth_exceptions

    network = (requests.ConnectionError, requests.Timeout, auth_exceptions.TransportError)
    return isinstance(exc, (*network, ConnectionError, TimeoutError))


def _os_reason(exc: BaseException) -> str:
    """Why the connection failed, in the words of the innermost error (``Connection refused``)."""
    root, inner = exc, exc.__cause__ or exc.__context__
    while inner is not None:
        root, inner = inner, inner.__cause__ or inner.__context__
    if isinstance(root, OSError) and root.strerror:
        return str(root.strerror)
    text = str(root).strip()
    return text.splitlines()[0] if text else type(root).__name__
