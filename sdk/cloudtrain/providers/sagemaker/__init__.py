"""SageMaker training: a Plan becomes a CreateTrainingJob request, submitted with boto3.

The provider object is ``backend.provider``. The rooms: ``checks`` (what SageMaker refuses), ``render`` (the request, pure, validated
by botocore's own model), ``outputs`` (where the job's artifacts land), ``clients`` (building the boto3 clients, retries and error
translation), ``job`` (submit, attach, owns, and the job's status, stop and wait),
``states`` (status words and job ARNs), ``listing`` (cloudtrain's jobs, their billed
time), ``logs`` (CloudWatch Logs), ``upload`` (the code bundle to S3, once), ``emulate`` (the
hosts SageMaker would start, run by the local provider).
"""

from __future__ import annotations

from typing import Any

from cloudtrain import lazy

# public name -> the module that defines it, imported on first use: importing one room
# (``sagemaker.settings``, read whenever a spec is built) loads no other.
_EXPORTS = {
    "AwsClients": "cloudtrain.providers.sagemaker.clients",
    "SageMaker": "cloudtrain.providers.sagemaker.backend",
    "SageMakerJob": "cloudtrain.providers.sagemaker.job",
    "attach": "cloudtrain.providers.sagemaker.job",
    "owns": "cloudtrain.providers.sagemaker.job",
    "provider": "cloudtrain.providers.sagemaker.backend",
    "submit": "cloudtrain.providers.sagemaker.job",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    return lazy.attribute(__name__, _EXPORTS, name)
