"""Why a job did not start, or stopped: the words every provider maps its own errors onto.

Each provider translates what its cloud says once, where it calls the cloud or reads a
job's state: a gRPC status and message (Vertex AI), a botocore error code or a
``FailureReason`` (SageMaker), an HTTP status, a pod event or a JobSet condition
(Kubernetes), an exit code (this machine). Everything above the providers acts on the
``Reason``, never on a provider's message text.

=============  ==============================================  ===================================
reason         what it means                                   what to do about it
=============  ==============================================  ===================================
capacity       no machines of that shape there, now             another region, shape or provider;
                                                                 or the same later
quota          the account may not use that many now            another candidate; or more quota
permission     the caller or the job's identity may not         fix the roles; no other region helps
configuration  the request or a setting is wrong                fix the spec or the settings
user_code      the training code failed                         fix the code; never run it elsewhere
preempted      the provider took the machines back              resume from the last backup
internal       the provider failed                              try the same again
=============  ==============================================  ===================================

Example:
>>> failure = Failure(Reason.CAPACITY, "Resources are insufficient in region: us-central1.", "RESOURCE_EXHAUSTED")
>>> failure.reason.recoverable, str(failure)
(True, 'capacity: Resources are insufficient in region: us-central1. (RESOURCE_EXHAUSTED)')
>>> failure_of(CallError("no quota left", Failure(Reason.QUOTA, "no quota left", "ResourceLimitExceeded"))).reason
<Reason.QUOTA: 'quota'>
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from cloudtrain.errors import CredentialsError, MissingDependencyError, ProviderError, SpecError

# The runtime's exit status after the provider's notice (SIGTERM): its step was backed up and
# the run resumes from there. EX_TEMPFAIL of BSD's sysexits.h (Python's os.EX_TEMPFAIL), the
# runtime's ``cloudtrain_runtime.errors.Reclaimed``: a provider that reports a container's
# exit status maps it to ``preempted``, never to ``user_code``.
RECLAIMED_EXIT = 75


class Reason(StrEnum):
    """Why a job did not start or stopped, whatever the provider."""

    CAPACITY = "capacity"
    QUOTA = "quota"
    PERMISSION = "permission"
    CONFIGURATION = "configuration"
    USER_CODE = "user_code"
    PREEMPTED = "preempted"
    INTERNAL = "internal"

    @property
    def explained(self) -> str:
        """The reason and what to do about it, in a few words.

        >>> Reason.QUOTA.explained
        'quota: the account may not use that many machines there now; request more, or use another region or shape'
        """
        return f"{self}: {EXPLANATIONS[self]}"

    @property
    def recoverable(self) -> bool:
        """Whether another attempt of the same run, unchanged, may get further.

        Capacity comes back, a preempted run resumes from its backup and a provider's
        own failure passes; a quota, a refusal, a wrong request or a failing trainer
        stay as they are until someone changes them.
        """
        return self in (Reason.CAPACITY, Reason.PREEMPTED, Reason.INTERNAL)


EXPLANATIONS = {
    Reason.CAPACITY: "no machines of that shape there now; try another region or shape, or again later",
    Reason.QUOTA: "the account may not use that many machines there now; request more, or use another region or shape",
    Reason.PERMISSION: "the caller or the job's identity is not allowed; grant the role the message names",
    Reason.CONFIGURATION: "the request or a setting is wrong; fix what the message names",
    Reason.USER_CODE: "the training code failed; see its last lines",
    Reason.PREEMPTED: "the provider took the machines back; the run resumes from its last backup",
    Reason.INTERNAL: "the provider failed; try again",
}


@dataclass(frozen=True)
class Failure:
    """A job that did not start or stopped: the reason, the provider's words and its own code.

    Attributes:
        reason: what kind of failure it is, in every provider's words.
        message: what the provider said, in one line.
        code: the provider's own name for it (``RESOURCE_EXHAUSTED``,
            ``ResourceLimitExceeded``, ``CapacityError``, ``FailedScheduling``, ``exit 2``),
            so a user can search its documentation.
    """

    reason: Reason
    message: str
    code: str = ""

    def __str__(self) -> str:
        code = f" ({self.code})" if self.code else ""
        return f"{self.reason}: {self.message}{code}"


class CallError(ProviderError):
    """A call to a provider's service that failed for good, with the reason it failed.

    Each provider's own error (``GoogleCallError``, ``AwsCallError``,
    ``KubernetesCallError``) is one, so code above the providers catches this class and
    reads ``failure.reason``.
    """

    def __init__(self, message: str, failure: Failure) -> None:
        super().__init__(message)
        self.failure = failure

    @property
    def reason(self) -> Reason:
        return self.failure.reason


def failure_of(error: BaseException) -> Failure | None:
    """The failure an exception raised while starting a job stands for; None when it is none of them.

    A provider's classified call error says it itself; credentials that are missing or
    refused are a permission failure, and a spec or an absent library a configuration
    one, on every provider alike.
    """
    if isinstance(error, CallError):
        return error.failure
    if isinstance(error, CredentialsError):
        return Failure(Reason.PERMISSION, _first_line(error), "credentials")
    if isinstance(error, SpecError | MissingDependencyError):
        return Failure(Reason.CONFIGURATION, _first_line(error), type(error).__name__)
    return None


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
