"""The API server's and JobSet's errors in the shared words (``cloudtrain.provider.failures``).

Two places say why a JobSet did not start or stopped:

- a call that failed: the HTTP status and the ``Status`` the API server answers with. A
  namespace's ResourceQuota refuses a create with 403 Forbidden and "exceeded quota: NAME,
  requested: ..., used: ..., limited: ..." (kubernetes/kubernetes
  ``plugin/pkg/admission/resourcequota/controller.go``, ``admission.NewForbidden``);
  any other 403 or a 401 is RBAC or credentials; 404 (the JobSet CRD is not installed, no
  such namespace), 409 and 422 (the webhook or the CRD's schema refused the body) are the
  request's; 429, 5xx and no answer are the server's.
- a JobSet that failed: its ``Failed`` condition (kubernetes-sigs/jobset v0.12.0,
  ``pkg/constants/constants.go``). ``FailJobSetFailurePolicyAction`` is cloudtrain's
  ``permanent`` rule: a Job that failed by the pod failure policy (the runtime's exit 2,
  a configuration it cannot run) or by ``activeDeadlineSeconds`` (``limits.max_runtime``);
  ``ReachedMaxRestarts`` is a gang that kept failing (``failurePolicy.maxRestarts``).

Example:
>>> call_failure(403, "Forbidden", 'pods "p" is forbidden: exceeded quota: gpus, requested: ...').reason
<Reason.QUOTA: 'quota'>
>>> jobset_failure("ReachedMaxRestarts", "jobset failed due to reaching max number of restarts").reason
<Reason.USER_CODE: 'user_code'>
"""

from __future__ import annotations

from cloudtrain.provider.failures import Failure, Reason

# HTTP status -> reason, for a call the API server answered (0: it did not answer).
STATUS_REASONS = {
    400: Reason.CONFIGURATION,
    401: Reason.PERMISSION,
    403: Reason.PERMISSION,
    404: Reason.CONFIGURATION,
    409: Reason.CONFIGURATION,
    422: Reason.CONFIGURATION,
}
QUOTA_WORDS = "exceeded quota"
# The reason of a JobSet's Failed condition -> why it failed.
JOBSET_REASONS = {
    "FailJobSetFailurePolicyAction": Reason.CONFIGURATION,
    "ReachedMaxRestarts": Reason.USER_CODE,
}


def call_failure(status: int, reason: str, message: str) -> Failure:
    """The failure of a call the API server answered with ``status`` (0: no answer), ``reason`` and ``message``."""
    found = STATUS_REASONS.get(status, Reason.INTERNAL)
    if status == 403 and QUOTA_WORDS in message:
        found = Reason.QUOTA
    code = f"{status} {reason}".strip() if status else "no answer"
    return Failure(found, _one_line(message), code)


def jobset_failure(reason: str, message: str) -> Failure:
    """The failure of a JobSet whose ``Failed`` condition has ``reason`` and ``message``."""
    return Failure(JOBSET_REASONS.get(reason, Reason.INTERNAL), _one_line(message or reason), reason)


def _one_line(message: str) -> str:
    return " ".join(message.split()) or "no detail"
