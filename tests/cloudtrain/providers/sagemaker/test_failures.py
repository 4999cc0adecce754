"""SageMaker's errors in the shared words, read through boto3 from the loopback SageMaker.

Each error is in botocore's wire form (an error ``Code`` and ``Message``) or a
``DescribeTrainingJob`` body; the source is beside it.
"""

from __future__ import annotations

import pytest

from cloudtrain.provider import Reason
from cloudtrain.providers.sagemaker.clients import AwsCallError
from tests.cloudtrain.providers.fakes.sagemaker_aws import LoopbackAws
from tests.cloudtrain.providers.sagemaker.test_submit import submit

# The message CreateTrainingJob answers over an account limit (reference/capacity.md quotes it;
# the limit's name is the Service Quotas name "ml.p4d.24xlarge for training job usage").
OVER_LIMIT = (
    "The account-level service limit 'ml.g4dn.xlarge for training job usage' is 0 Instances, with current "
    "utilization of 0 Instances and a request delta of 2 Instances. Please use AWS Service Quotas to request "
    "an increase for this quota."
)
# sagemaker-python-sdk v2, sagemaker/session.py _check_job_status: "CapacityError" in the reason.
STOCKOUT = (
    "CapacityError: Unable to provision requested ML compute capacity. Please retry using a different ML "
    "instance type."
)


@pytest.mark.parametrize(
    ("code", "message", "status", "reason"),
    [
        ("ResourceLimitExceeded", OVER_LIMIT, 400, Reason.QUOTA),
        (
            "AccessDeniedException",
            "User: arn:aws:iam::1:user/u is not authorized to perform: sagemaker:CreateTrainingJob",
            400,
            Reason.PERMISSION,
        ),
        (
            "ValidationException",
            "1 validation error detected: Value 'x' at 'roleArn' failed to satisfy constraint",
            400,
            Reason.CONFIGURATION,
        ),
        ("ThrottlingException", "Rate exceeded", 400, Reason.INTERNAL),
        ("InternalFailure", "An internal error occurred", 500, Reason.INTERNAL),
    ],
    ids=["over-limit", "access-denied", "validation", "throttled", "internal"],
)
def test_a_refused_create_says_why_in_the_shared_words(
    aws: LoopbackAws, code: str, message: str, status: int, reason: Reason
) -> None:
    aws.sagemaker.fail("CreateTrainingJob", code, times=10, status=status, message=message)
    with pytest.raises(AwsCallError) as refused:
        submit(aws, clients=aws.clients(attempts=1))
    assert (refused.value.failure.reason, refused.value.failure.code) == (reason, code)
    assert refused.value.failure.message == message.rstrip(".")


@pytest.mark.parametrize(
    ("failure_reason", "reason", "code"),
    [
        (STOCKOUT, Reason.CAPACITY, "CapacityError"),
        ("AlgorithmError: ExecuteUserScriptError: exit code: 1", Reason.USER_CODE, "AlgorithmError"),
        (
            "ClientError: Unable to download data from S3 location s3://b/k",
            Reason.CONFIGURATION,
            "ClientError",
        ),
        (
            "InternalServerError: We encountered an internal error. Please try again.",
            Reason.INTERNAL,
            "InternalServerError",
        ),
    ],
    ids=["stockout", "algorithm", "client", "internal"],
)
def test_a_failed_job_says_why_in_the_shared_words(
    aws: LoopbackAws, failure_reason: str, reason: Reason, code: str
) -> None:
    aws.sagemaker.script(
        [("InProgress", "Starting", "Starting"), ("Failed", "Failed", "Training job failed")],
        failure_reason=failure_reason,
    )
    final = submit(aws).wait(poll_s=1.0)
    assert final.state == "failed"
    assert final.failure is not None
    assert (final.failure.reason, final.failure.code) == (reason, code)


def test_spot_capacity_that_never_came_is_capacity(aws: LoopbackAws) -> None:
    # DescribeTrainingJob.SecondaryStatus MaxWaitTimeExceeded: spot capacity did not come in time.
    aws.sagemaker.script([("InProgress", "Starting", ""), ("Stopped", "MaxWaitTimeExceeded", "")])
    final = submit(aws).wait(poll_s=1.0)
    assert final.failure is not None
    assert (final.state, final.failure.reason, final.failure.code) == (
        "failed",
        Reason.CAPACITY,
        "MaxWaitTimeExceeded",
    )


def test_a_job_that_succeeded_has_no_failure(aws: LoopbackAws) -> None:
    assert submit(aws).wait(poll_s=1.0).failure is None
