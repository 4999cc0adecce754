"""Vertex AI's errors in the shared words (``cloudtrain.provider.failures``).

Two places say why a job did not start or stopped:

- a call that failed: its google.rpc code (``google/rpc/code.proto``) and message, as
  ``clients.translate`` reads them. A create over a training quota is
  ``429 RESOURCE_EXHAUSTED`` "The following quota metrics exceed quota limits:
  aiplatform.googleapis.com/custom_model_training_nvidia_l4_gpus"
  (github.com/GoogleCloudPlatform/stable-diffusion-on-gcp/issues/12); a bucket in another
  region is ``400 FAILED_PRECONDITION`` "The Cloud Storage bucket of gs://... is in
  location `us`. It must be in the same regional location as the service location"
  (github.com/googleapis/python-aiplatform/issues/885).
- a job that failed: ``CustomJob.error``, a ``google.rpc.Status`` with the code as a
  number. A stockout reads "Resources are insufficient in region: us-central1", once
  every zone of the region was tried (github.com/openreview/openreview-expertise/issues/401);
  a trainer that exits non-zero, "The replica workerpool0-0 exited with a non-zero status
  of 1" (github.com/tensorflow/models/issues/10735), the training code's, except status 75:
  the runtime's exit after the provider's notice (``RECLAIMED_EXIT``), a preemption; Compute Engine's own words for a
  zone out of machines are ``ZONE_RESOURCE_POOL_EXHAUSTED`` and "does not have enough
  resources available to fulfill the request"
  (cloud.google.com/compute/docs/troubleshooting/troubleshooting-resource-availability).

Example:
>>> job_failure(8, "Resources are insufficient in region: us-central1.").reason
<Reason.CAPACITY: 'capacity'>
>>> call_failure("RESOURCE_EXHAUSTED", "quota", "The following quota metrics exceed quota limits: x").reason
<Reason.QUOTA: 'quota'>
"""

from __future__ import annotations

import re

from cloudtrain.provider.failures import RECLAIMED_EXIT, Failure, Reason

# google/rpc/code.proto: the number a google.rpc.Status carries -> its name.
CODE_NAMES = {
    0: "OK",
    1: "CANCELLED",
    2: "UNKNOWN",
    3: "INVALID_ARGUMENT",
    4: "DEADLINE_EXCEEDED",
    5: "NOT_FOUND",
    6: "ALREADY_EXISTS",
    7: "PERMISSION_DENIED",
    8: "RESOURCE_EXHAUSTED",
    9: "FAILED_PRECONDITION",
    10: "ABORTED",
    11: "OUT_OF_RANGE",
    12: "UNIMPLEMENTED",
    13: "INTERNAL",
    14: "UNAVAILABLE",
    15: "DATA_LOSS",
    16: "UNAUTHENTICATED",
}
# What each code means for the caller (cloud.google.com/apis/design/errors): the request
# or the project's state is wrong, the caller may not, or the service failed. Codes not
# here are the service's (UNKNOWN, INTERNAL, UNAVAILABLE, DEADLINE_EXCEEDED, ...).
CODE_REASONS = {
    "INVALID_ARGUMENT": Reason.CONFIGURATION,
    "FAILED_PRECONDITION": Reason.CONFIGURATION,
    "NOT_FOUND": Reason.CONFIGURATION,
    "ALREADY_EXISTS": Reason.CONFIGURATION,
    "OUT_OF_RANGE": Reason.CONFIGURATION,
    "UNIMPLEMENTED": Reason.CONFIGURATION,
    "PERMISSION_DENIED": Reason.PERMISSION,
    "UNAUTHENTICATED": Reason.PERMISSION,
}
CAPACITY = re.compile(
    r"resources are insufficient in region|does not have enough resources available|"
    r"ZONE_RESOURCE_POOL_EXHAUSTED|STOCKOUT",
    re.IGNORECASE,
)
QUOTA = re.compile(r"quota metrics exceed quota limits|custom_model_training_[a-z0-9_]+", re.IGNORECASE)
USER_CODE = re.compile(r"exited with a non-zero status of (-?\d+)")


def call_failure(code: str, cause: str, message: str) -> Failure:
    """The failure of a call that ended with google.rpc ``code`` (its ``clients.cause`` and message)."""
    return Failure(_reason(code, cause, message), _one_line(message), code)


def job_failure(code: int, message: str) -> Failure:
    """The failure of a job whose ``CustomJob.error`` has ``code`` (a number) and ``message``."""
    name = CODE_NAMES.get(code, "UNKNOWN")
    user_code = USER_CODE.search(message)
    if user_code is not None and not CAPACITY.search(message):
        reclaimed = int(user_code[1]) == RECLAIMED_EXIT  # the runtime backed up its step on the notice
        return Failure(
            Reason.PREEMPTED if reclaimed else Reason.USER_CODE, _one_line(message), f"exit {user_code[1]}"
        )
    cause = "quota" if name == "RESOURCE_EXHAUSTED" and QUOTA.search(message) else ""
    return Failure(_reason(name, cause, message), _one_line(message), name)


def expired(message: str) -> Failure:
    """The failure of a job that expired: a flex-start job whose machines did not come within
    ``Scheduling.maxWaitDuration`` (JobState JOB_STATE_EXPIRED, aiplatform_v1 job_state.proto;
    https://cloud.google.com/vertex-ai/docs/training/schedule-jobs-dws)."""
    said = _one_line(message) if message else "no machines within Scheduling.maxWaitDuration"
    return Failure(Reason.CAPACITY, f"The job expired waiting for capacity: {said}", "JOB_STATE_EXPIRED")


def _reason(code: str, cause: str, message: str) -> Reason:
    if CAPACITY.search(message):
        return Reason.CAPACITY
    if code == "RESOURCE_EXHAUSTED":
        # A training quota lasts until jobs end or it is raised; a rate limit passes.
        return Reason.QUOTA if cause == "quota" or QUOTA.search(message) else Reason.INTERNAL
    return CODE_REASONS.get(code, Reason.INTERNAL)


def _one_line(message: str) -> str:
    text = " ".join(message.split())
    return text or "no detail"
