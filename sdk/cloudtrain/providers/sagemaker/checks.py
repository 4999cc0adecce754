"""What SageMaker refuses, checked before anything is rendered or sent."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cloudtrain.providers.sagemaker.settings import SageMakerSettings

if TYPE_CHECKING:
    from cloudtrain.spec import JobSpec


def problems(spec: JobSpec) -> list[str]:
    """Every reason ``spec`` cannot run on SageMaker, one message each."""
    if SageMakerSettings.of(spec).role is None:
        return [
            "sagemaker.role is required on SageMaker. Set it to the ARN of the role the job runs as, "
            "e.g. arn:aws:iam::123456789012:role/SageMakerTraining."
        ]
    return []
