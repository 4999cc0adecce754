"""SageMaker training: a Plan becomes a CreateTrainingJob request, submitted with boto3.

The rooms: ``checks`` (what SageMaker refuses), ``render`` (the request, pure, validated
by botocore's own model), ``outputs`` (where the job's artifacts land), ``clients`` (building the boto3 clients, retries and error
translation), ``job`` (submit, attach, owns, and the job's status, stop and wait),
``states`` (status words and job ARNs), ``listing`` (cloudtrain's jobs, their billed
time), ``logs`` (CloudWatch Logs), ``upload`` (the code bundle to S3, once), ``emulate`` (the
hosts SageMaker would start, run by the local provider).

Example:
>>> provider.name, provider.schemes
('sagemaker', ('s3://',))
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from cloudtrain.providers.cloud import CloudProvider, Rooms

# The render room before the function of the same name, which then takes its place here.
from cloudtrain.providers.sagemaker import (
    checks,
    discover,
    download,
    emulate,
    job,
    listing,
    outputs,
    setup_checks,
)
from cloudtrain.providers.sagemaker import render as rendering
from cloudtrain.providers.sagemaker.clients import AwsClients
from cloudtrain.providers.sagemaker.job import SageMakerJob, attach, owns, submit
from cloudtrain.providers.sagemaker.render import render

if TYPE_CHECKING:
    from cloudtrain.defaults import Sources
    from cloudtrain.planning import Plan
    from cloudtrain.providers.base import Discovered, JobSummary, Provider
    from cloudtrain.spec import JobSpec
    from cloudtrain_runtime.diagnosis import Check

__all__ = ["AwsClients", "SageMaker", "SageMakerJob", "attach", "owns", "provider", "render", "submit"]


class SageMaker(CloudProvider):
    """SageMaker training jobs."""

    name = "sagemaker"
    title = "SageMaker"
    schemes = ("s3://",)
    # MaxRuntimeInSeconds: "The maximum value is 28 days" (CreateTrainingJob API reference).
    max_runtime_s = 28 * 86400
    max_runtime_field = "StoppingCondition.MaxRuntimeInSeconds"
    unsupported: Mapping[str, str] = MappingProxyType({"tpu": "SageMaker has no TPUs; use --provider vertex"})
    color = "#ff9900"

    rooms = Rooms(checks=checks, render=rendering, outputs=outputs, job=job)

    def discover_settings(self, environ: Mapping[str, str]) -> dict[str, Discovered]:
        return discover.discover(environ)

    def check_setup(self, spec: JobSpec, sources: Sources) -> list[Check]:
        return setup_checks.check_setup(spec, sources)

    def emulate(self, plan: Plan, request: dict[str, Any]) -> dict[str, Any]:
        return emulate.replicas(request, plan.region)

    def job_names(self, first: str) -> Iterator[str]:
        return emulate.job_names(first)

    def read_output(self, plan: Plan, uri: str, *, clients: Any = None) -> bytes:
        return download.read_output(plan, uri, clients)

    def configured(self, settings: JobSpec) -> str | None:
        if settings.sagemaker.role or discover.credentials_source(os.environ):
            return None
        return (
            "no AWS credentials found in the environment or ~/.aws: run `aws configure`, or set "
            "AWS_PROFILE (an instance role is not looked for: --provider sagemaker asks anyway)"
        )

    def list_jobs(self, settings: JobSpec, *, limit: int | None, clients: Any = None) -> list[JobSummary]:
        """cloudtrain's training jobs in the settings' region (``listing``)."""
        return listing.list_jobs(clients or AwsClients(region=settings.sagemaker.region), limit=limit)


provider: Provider = SageMaker()
