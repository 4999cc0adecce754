"""What SageMaker refuses, checked before anything is rendered or sent."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cloudtrain import catalog

if TYPE_CHECKING:
    from cloudtrain.spec import JobSpec


def problems(spec: JobSpec) -> list[str]:
    """Every reason ``spec`` cannot run on SageMaker, one message each."""
    found = []
    region = catalog.region_problem("sagemaker", "SageMaker", spec.sagemaker.region)
    if region:
        found.append(region)
    if spec.sagemaker.role is None:
        found.append(
            "sagemaker.role is required on SageMaker. Set it to the ARN of the role the job runs as, "
            "e.g. arn:aws:iam::123456789012:role/SageMakerTraining."
        )
    return found
