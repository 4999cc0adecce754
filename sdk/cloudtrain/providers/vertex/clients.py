"""The Google clients of the Vertex backend: how they are built, retried, and how their errors read.

Clients. ``VertexClients`` holds the JobService client, the Cloud Storage client and the
Cloud Logging session one job uses, each built on first use unless injected. Building
them needs Application Default Credentials; without any, the error shows the gcloud
command that sets them up. Test-only endpoints (no cloud account needed):

- ``CLOUDTRAIN_VERTEX_ENDPOINT=host:port``: the JobService client talks gRPC to that
  address over an insecure channel, which carries no credentials (none are looked up).
- ``CLOUDTRAIN_VERTEX_LOGGING_ENDPOINT=host:port``: Cloud Logging's ``entries:list``
  is called over plain HTTP at that address, without credentials.
- ``STORAGE_EMULATOR_HOST=http://host:port``: google-cloud-storage's own setting for
  a Cloud Storage emulator.

Retries. ``with_retries`` runs a call through ``google.api_core.retry.retry_target``:
UNAVAILABLE and DEADLINE_EXCEEDED are retried (and RESOURCE_EXHAUSTED when creating a
job), at most ``ATTEMPTS`` tries, waiting 1, 2, 4, ... seconds (at most 30) through the
injectable ``sleep``. Everything else becomes one ``ProviderError`` or
``CredentialsError`` line naming the call, Google's message and the fix.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from cloudtrain.errors import CloudtrainError, CredentialsError, ProviderError, require

T = TypeVar("T")

ATTEMPTS = 5
FIRST_DELAY_S = 1.0
MAX_DELAY_S = 30.0

ENDPOINT_ENV = "CLOUDTRAIN_VERTEX_ENDPOINT"
LOGGING_ENDPOINT_ENV = "CLOUDTRAIN_VERTEX_LOGGING_ENDPOINT"
LOGGING_URL = "https://logging.googleapis.com"
LOGGING_READ_SCOPE = "https://www.googleapis.com/auth/logging.read"

ADC_FIX = "No usable Google credentials. Run:\n  $ gcloud auth application-default login"

# google.api_core exception class name -> what the user can do about it.
FIXES = {
    "PermissionDenied": (
        "Grant the caller roles/aiplatform.user on the project (and roles/iam.serviceAccountUser "
        "on vertex.service_account), or check vertex.project."
    ),
    "Forbidden": "Grant the caller roles/storage.objectAdmin on the bucket, or check storage.root.",
    "InvalidArgument": "Check the request with: cloudtrain render JOB --provider vertex",
    "BadRequest": "Check the request with: cloudtrain render JOB --provider vertex",
    "NotFound": "Check the ID, project and region (gcloud ai custom-jobs list --region REGION).",
    "ResourceExhausted": (
        "The project is out of quota for this machine or accelerator in this region. Request more "
        "(aiplatform.googleapis.com/custom_model_training_* in the console's Quotas page) or use "
        "another vertex.region."
    ),
    "FailedPrecondition": "Enable the Vertex AI API: gcloud services enable aiplatform.googleapis.com",
    "ServiceUnavailable": f"Vertex AI did not answer after {ATTEMPTS} attempts; try again later.",
    "DeadlineExceeded": f"Vertex AI did not answer after {ATTEMPTS} attempts; try again later.",
}


@dataclass
class VertexClients:
    """The clients the Vertex backend uses; each is created on first use unless given.

    Args:
        jobs: an ``aiplatform_v1.JobServiceClient`` (any transport).
        storage: a ``google.cloud.storage.Client`` for the code upload.
        logs: a ``requests``-style session for Cloud Logging, with ``logging_url``.
        sleep: how to wait between retries and polls (tests pass a recorder).
    """

    jobs: Any = None
    storage: Any = None
    logs: Any = None
    logging_url: str | None = None
    sleep: Callable[[float], None] = time.sleep

    def job_service(self, region: str) -> Any:
        if self.jobs is None:
            self.jobs = job_service_client(region)
        return self.jobs

    def storage_client(self, project: str | None) -> Any:
        if self.storage is None:
            self.storage = cloud_storage_client(project)
        return self.storage

    def __repr__(self) -> str:
        given = [name for name in ("jobs", "storage", "logs") if getattr(self, name) is not None]
        return f"VertexClients(given={given})"


def job_service_client(region: str) -> Any:
    """A JobServiceClient for ``region``'s endpoint, or for ``$CLOUDTRAIN_VERTEX_ENDPOINT``.

    The test endpoint gets an insecure gRPC channel and no credentials at all.

    Raises:
        CredentialsError: no Application Default Credentials are set up.
    """
    require("google.cloud.aiplatform_v1", "vertex")
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


def cloud_storage_client(project: str | None) -> Any:
    """A ``google.cloud.storage.Client`` with Application Default Credentials.

    google-cloud-storage honours ``STORAGE_EMULATOR_HOST`` (anonymous credentials) itself.

    Raises:
        CredentialsError: no credentials are set up.
    """
    require("google.cloud.storage", "vertex")
    from google.auth import exceptions as auth_exceptions
    from google.cloud import storage  # type: ignore[attr-defined]

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


def with_retries(
    call: Callable[[], T],
    *,
    action: str,
    sleep: Callable[[float], None],
    creating: bool = False,
    fixes: dict[str, str] | None = None,
) -> T:
    """Run ``call``, retrying transient Google API errors with bounded exponential backoff.

    Args:
        call: the API call, without arguments.
        action: what it does, for the error message (``"create a custom job in ..."``).
        sleep: how to wait between attempts (``time.sleep``; tests pass a recorder).
        creating: also retry RESOURCE_EXHAUSTED, which on create is usually a rate limit
            that clears within seconds.
        fixes: advice for this call by error class name, over the general ``FIXES``.

    Raises:
        ProviderError: the call failed permanently or ran out of attempts.
        CredentialsError: Google refused or could not find the caller's credentials.
    """
    from google.api_core import retry

    try:
        # api_core would wait with time.sleep; the waiting is done in on_error through
        # ``sleep`` instead, so api_core's own waits are zero.
        return retry.retry_target(
            call,
            predicate=_transient(creating),
            sleep_generator=itertools.repeat(0.0),
            timeout=None,
            on_error=_Backoff(sleep).wait,
        )
    except Exception as exc:
        error = translate(exc, action, fixes)
        if error is exc:
            raise
        raise error from exc


def _transient(creating: bool) -> Callable[[Exception], bool]:
    """api_core's predicate for the errors worth another attempt."""
    from google.api_core import exceptions, retry

    transient: tuple[type[Exception], ...] = (exceptions.ServiceUnavailable, exceptions.DeadlineExceeded)
    if creating:
        transient += (exceptions.ResourceExhausted,)
    return retry.if_exception_type(*transient)


class _Backoff:
    """api_core's ``on_error``: wait before the next attempt, or give up after ``ATTEMPTS``."""

    def __init__(self, sleep: Callable[[float], None]) -> None:
        self._sleep = sleep
        self._failures = 0

    def wait(self, error: Exception) -> None:
        self._failures += 1
        if self._failures == ATTEMPTS:
            raise error
        self._sleep(min(FIRST_DELAY_S * 2 ** (self._failures - 1), MAX_DELAY_S))


def translate(exc: Exception, action: str, fixes: dict[str, str] | None = None) -> Exception:
    """The cloudtrain error for a failed Google call, or ``exc`` itself if it is not one."""
    from google.api_core import exceptions
    from google.auth import exceptions as auth_exceptions

    if isinstance(exc, CloudtrainError):
        return exc
    if isinstance(exc, auth_exceptions.GoogleAuthError | exceptions.Unauthenticated):
        return CredentialsError(f"Could not {action}: {_first_line(exc)}. {ADC_FIX}")
    if not isinstance(exc, exceptions.GoogleAPICallError):
        return exc
    name = type(exc).__name__
    fix = {**FIXES, **(fixes or {})}.get(name, "")
    return ProviderError(f"Could not {action}: {_first_line(exc.message)} ({name}). {fix}".rstrip())


def _first_line(message: object) -> str:
    return str(message).strip().splitlines()[0].rstrip(".") if str(message).strip() else "no detail"
