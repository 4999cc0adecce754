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

import importlib
import os
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from cloudtrain.providers.cloud import CloudProvider, Rooms

# The render room before the function of the same name, which then takes its place here.
from cloudtrain.providers.sagemaker import checks, discover, outputs
from cloudtrain.providers.sagemaker import render as rendering
from cloudtrain.providers.sagemaker.render import render

if TYPE_CHECKING:
    from cloudtrain.bundle import Bundle
    from cloudtrain.defaults import Sources
    from cloudtrain.outputs import Outputs
    from cloudtrain.planning import Plan
    from cloudtrain.progress import OnProgress
    from cloudtrain.providers.base import Discovered, Job, JobSummary, Provider
    from cloudtrain.providers.sagemaker.clients import AwsClients
    from cloudtrain.providers.sagemaker.job import SageMakerJob, attach, owns, submit
    from cloudtrain.spec import JobSpec
    from cloudtrain_runtime.diagnosis import Check

# The rooms that talk to AWS, and what this package exports from them: imported on first
# use, so the spec commands stay fast (DESIGN.md, the import boundary).
LAZY = {
    "AwsClients": "cloudtrain.providers.sagemaker.clients",
    "SageMakerJob": "cloudtrain.providers.sagemaker.job",
    "attach": "cloudtrain.providers.sagemaker.job",
    "owns": "cloudtrain.providers.sagemaker.job",
    "submit": "cloudtrain.providers.sagemaker.job",
}

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

    rooms = Rooms(checks=checks, render=rendering, outputs=outputs, job="cloudtrain.providers.sagemaker.job")

    def render_sweep(self, plan: Plan) -> dict[str, Any]:
        """CreateHyperParameterTuningJob arguments (``sweep``)."""
        from cloudtrain.providers.sagemaker import sweep

        return sweep.render(plan)

    def sweep_outputs(self, plan: Plan, request: dict[str, Any] | None = None) -> Outputs:
        from cloudtrain.providers.sagemaker import sweep

        return sweep.outputs(plan, request)

    def submit_sweep(
        self,
        plan: Plan,
        request: dict[str, Any],
        bundle: Bundle,
        *,
        clients: Any = None,
        progress: OnProgress | None = None,
    ) -> Job:
        from cloudtrain.providers.sagemaker import sweep_job

        return sweep_job.submit(plan, request, bundle, clients, progress)

    def attach(self, job_id: str, *, clients: Any = None) -> Job:
        from cloudtrain.providers.sagemaker import sweep_job

        if sweep_job.owns(job_id):
            return sweep_job.attach(job_id, clients)
        return super().attach(job_id, clients=clients)

    def owns(self, job_id: str) -> bool:
        from cloudtrain.providers.sagemaker import sweep_job

        return sweep_job.owns(job_id) or super().owns(job_id)

    def discover_settings(self, environ: Mapping[str, str]) -> dict[str, Discovered]:
        return discover.discover(environ)

    def check_setup(self, spec: JobSpec, sources: Sources) -> list[Check]:
        from cloudtrain.providers.sagemaker import setup_checks

        return setup_checks.check_setup(spec, sources)

    def emulate(self, plan: Plan, request: dict[str, Any]) -> dict[str, Any]:
        from cloudtrain.providers.sagemaker import emulate

        return emulate.replicas(request, plan.region)

    def job_names(self, first: str) -> Iterator[str]:
        from cloudtrain.providers.sagemaker import emulate

        return emulate.job_names(first)

    def read_output(self, plan: Plan, uri: str, *, clients: Any = None) -> bytes:
        from cloudtrain.providers.sagemaker import download

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
        from cloudtrain.providers.sagemaker import listing, sweep_job
        from cloudtrain.providers.sagemaker.clients import AwsClients

        aws = clients or AwsClients(region=settings.sagemaker.region)
        found = listing.list_jobs(aws, limit=limit) + sweep_job.list_sweeps(aws, limit=limit)
        return sorted(found, key=lambda job: job.created, reverse=True)[:limit]


provider: Provider = SageMaker()


def __getattr__(name: str) -> Any:
    """The exports that live in the rooms that talk to AWS (``LAZY``), imported when first asked for."""
    if name in LAZY:
        return getattr(importlib.import_module(LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
