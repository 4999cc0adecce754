"""What SageMaker refuses, checked before anything is rendered or sent.

Which capacity modes SageMaker offers is ``catalog/capacity.csv``; here are the rules
within the ones it offers.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from cloudtrain import catalog
from cloudtrain.providers.sagemaker.settings import BATCH_QUEUE, SageMakerSettings

if TYPE_CHECKING:
    from cloudtrain.spec import JobSpec

# A training plan's ARN (ResourceConfig.TrainingPlanArn's pattern, botocore 1.44.18 sagemaker 2017-07-24).
PLAN_ARN = re.compile(r"arn:aws[a-z\-]*:sagemaker:(?P<region>[a-z0-9\-]*):[0-9]{12}:training-plan/.+")


def problems(spec: JobSpec) -> list[str]:
    """Every reason ``spec`` cannot run on SageMaker, one message each.

    The region must be one of the SageMaker API's (``catalog/regions.csv``, from botocore's
    endpoints data), whatever the image: a typo is caught here, not by the endpoint's DNS.
    """
    settings = SageMakerSettings.of(spec)
    found = [
        problem for problem in [catalog.region_problem("sagemaker", "SageMaker", settings.region)] if problem
    ]
    if settings.role is None:
        return [
            *found,
            "sagemaker.role is required on SageMaker. Set it to the ARN of the role the job runs as, "
            "e.g. arn:aws:iam::123456789012:role/SageMakerTraining.",
        ]
    return found + _capacity_problems(spec) + _warm_pool_problems(spec)


def queue_of(spec: JobSpec) -> str | None:
    """The AWS Batch job queue a ``capacity: queue`` job goes to: the capacity's, else ``sagemaker.queue``."""
    capacity = spec.resources.capacity
    if capacity.mode != "queue":
        return None
    return capacity.name or SageMakerSettings.of(spec).queue


def _capacity_problems(spec: JobSpec) -> list[str]:
    capacity = spec.resources.capacity
    if capacity.mode == "queue":
        queue = queue_of(spec)
        if queue is None:
            return [
                "resources.capacity: capacity: queue on SageMaker goes through an AWS Batch job queue; name it "
                "with resources.capacity.name, sagemaker.queue, or submit --queue NAME."
            ]
        if not re.fullmatch(BATCH_QUEUE, queue):
            return [
                f"resources.capacity.name: {queue[:80]!r} is not an AWS Batch job queue; use its name (letters, "
                "digits, '-', '_', up to 128) or its ARN."
            ]
    if capacity.mode == "plan":
        return _plan_problems(str(capacity.arn), SageMakerSettings.of(spec).region)
    return []


def _plan_problems(arn: str, region: str) -> list[str]:
    """A training plan's ARN, in the job's region: a plan reserves capacity in its own region."""
    match = PLAN_ARN.fullmatch(arn)
    if match is None:
        return [
            f"resources.capacity.arn: {arn[:80]!r} is not a training plan's ARN; use "
            "arn:aws:sagemaker:REGION:ACCOUNT:training-plan/NAME (aws sagemaker list-training-plans)."
        ]
    if match["region"] != region:
        return [
            f"resources.capacity.arn: the training plan is in {match['region']}, the job in sagemaker.region "
            f"{region}. Set sagemaker.region: {match['region']}."
        ]
    return []


def _warm_pool_problems(spec: JobSpec) -> list[str]:
    """Warm pools and managed spot do not go together: warm pools "cannot be used with spot instances"
    (awsdocs/amazon-sagemaker-developer-guide@a869fa5, doc_source/train-warm-pools.md;
    https://docs.aws.amazon.com/sagemaker/latest/dg/train-warm-pools.html)."""
    if SageMakerSettings.of(spec).keep_alive is not None and spec.resources.capacity.mode == "spot":
        return [
            "sagemaker.keep_alive: SageMaker keeps no warm pool for managed spot training (resources.capacity: "
            "spot). Remove sagemaker.keep_alive, or use capacity: on_demand."
        ]
    return []
