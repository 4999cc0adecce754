"""SageMaker's errors in the shared words (``cloudtrain.provider.failures``).

Two places say why a training job did not start or stopped:

- a call that failed: botocore's error ``Code``. ``CreateTrainingJob`` over an account
  limit fails at once with ``ResourceLimitExceeded`` ("The account-level service limit
  'ml.p4d.24xlarge for training job usage' is 0 Instances, ..."; the operation's errors
  in botocore's ``sagemaker/2017-07-24/service-2.json``: ResourceInUse,
  ResourceLimitExceeded, ResourceNotFound); a refusal of IAM is ``AccessDeniedException``
  and a malformed request ``ValidationException`` (the errors every AWS API shares,
  docs.aws.amazon.com/sagemaker/latest/APIReference/CommonErrors.html).
- a job that failed: ``DescribeTrainingJob.FailureReason``, whose first word names the
  kind. "CapacityError: Unable to provision requested ML compute capacity." is a
  stockout (the SageMaker Python SDK raises ``exceptions.CapacityError`` for it:
  sagemaker-python-sdk v2, ``sagemaker/session.py`` ``_check_job_status``); an
  ``AlgorithmError:`` is the training code's, with the failure file it wrote
  (docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-training-algo-output.html);
  a ``ClientError:`` the request's (an image or an S3 URI it cannot read).
- a Stopped job's ``SecondaryStatus``: ``MaxWaitTimeExceeded`` means spot capacity did
  not come in time (docs.aws.amazon.com/sagemaker/latest/APIReference/API_DescribeTrainingJob.html,
  SecondaryStatus).

Example:
>>> job_failure("CapacityError: Unable to provision requested ML compute capacity.").reason
<Reason.CAPACITY: 'capacity'>
>>> call_failure("ResourceLimitExceeded", "The account-level service limit ...").reason
<Reason.QUOTA: 'quota'>
"""

from __future__ import annotations

from cloudtrain.provider.failures import Failure, Reason

# botocore error Code -> reason. A code not here is the service's or the network's own failure.
CALL_REASONS = {
    "ResourceLimitExceeded": Reason.QUOTA,
    "AccessDenied": Reason.PERMISSION,
    "AccessDeniedException": Reason.PERMISSION,
    "UnauthorizedOperation": Reason.PERMISSION,
    "ValidationException": Reason.CONFIGURATION,
    "ValidationError": Reason.CONFIGURATION,
    "ResourceNotFound": Reason.CONFIGURATION,
    "ResourceInUse": Reason.CONFIGURATION,
    "ConflictException": Reason.CONFIGURATION,
    "InvalidParameterValue": Reason.CONFIGURATION,
    "NoSuchBucket": Reason.CONFIGURATION,
}
# The first word of a FailureReason -> reason.
FAILURE_KINDS = {
    "CapacityError": Reason.CAPACITY,
    "InsufficientCapacityError": Reason.CAPACITY,
    "ResourceLimitExceeded": Reason.QUOTA,
    "AlgorithmError": Reason.USER_CODE,
    "ClientError": Reason.CONFIGURATION,
    "InternalServerError": Reason.INTERNAL,
}
# A Stopped job nobody asked to stop, by its SecondaryStatus.
STOPPED_REASONS = {
    "MaxWaitTimeExceeded": Reason.CAPACITY,
    "MaxRuntimeExceeded": Reason.CONFIGURATION,
}


def call_failure(code: str, message: str) -> Failure:
    """The failure of a call that botocore reported with error ``code``."""
    return Failure(CALL_REASONS.get(code, Reason.INTERNAL), _one_line(message), code)


def job_failure(reason: str) -> Failure:
    """The failure of a job whose ``FailureReason`` is ``reason``."""
    kind = reason.split(":", 1)[0].strip()
    return Failure(
        FAILURE_KINDS.get(kind, Reason.INTERNAL), _one_line(reason), kind if kind in FAILURE_KINDS else ""
    )


def stopped_failure(secondary: str, detail: str) -> Failure:
    """The failure of a Stopped job nobody asked to stop, by its ``SecondaryStatus``."""
    return Failure(STOPPED_REASONS.get(secondary, Reason.INTERNAL), _one_line(detail), secondary)


def _one_line(message: str) -> str:
    return " ".join(message.split()) or "no detail"
