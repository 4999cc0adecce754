"""Calls to Google APIs for the Vertex backend: bounded retries, and errors that say what to do.

Transient failures (UNAVAILABLE, DEADLINE_EXCEEDED, and RESOURCE_EXHAUSTED when
creating a job) are retried with exponential backoff; everything else becomes one
``ProviderError`` or ``CredentialsError`` line naming the call, Google's message and
the fix. ``google.api_core`` is imported only when a call fails.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from cloudtrain.errors import CloudtrainError, CredentialsError, ProviderError

T = TypeVar("T")

ATTEMPTS = 5
FIRST_DELAY_S = 1.0
MAX_DELAY_S = 30.0

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
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return call()
        except Exception as exc:
            if attempt == ATTEMPTS or not _transient(exc, creating):
                error = translate(exc, action, fixes)
                if error is exc:
                    raise
                raise error from exc
        sleep(min(FIRST_DELAY_S * 2 ** (attempt - 1), MAX_DELAY_S))
    raise AssertionError("unreachable: the last attempt returns or raises")


def _transient(exc: Exception, creating: bool) -> bool:
    from google.api_core import exceptions

    transient: tuple[type[Exception], ...] = (exceptions.ServiceUnavailable, exceptions.DeadlineExceeded)
    if creating:
        transient += (exceptions.ResourceExhausted,)
    return isinstance(exc, transient)


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
