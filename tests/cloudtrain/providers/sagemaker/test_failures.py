"""SageMaker's errors in the shared words, read through boto3 from the loopback SageMaker.

Each error is in botocore's wire form (an error ``Code`` and ``Message``) or a
``DescribeTrainingJob`` body; the source is beside it.
"""

from __future__ import annotations

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


def test_a_job_that_succeeded_has_no_failure(aws: LoopbackAws) -> None:
    assert submit(aws).wait(poll_s=1.0).failure is None
