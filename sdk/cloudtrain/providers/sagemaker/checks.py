"""What SageMaker refuses, checked before anything is rendered or sent."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cloudtrain import catalog
from cloudtrain.providers.sagemaker.settings import SageMakerSettings

if TYPE_CHECKING:
    from cloudtrain.spec import JobSpec


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
        found.append(
            "sagemaker.role is required on SageMaker. Set it to the ARN of the role the job runs as, "
            "e.g. arn:aws:iam::123456789012:role/SageMakerTraining."
        )
    return found
