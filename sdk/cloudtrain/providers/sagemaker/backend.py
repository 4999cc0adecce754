"""The SageMaker provider object: its facts, and its methods, each calling one room of the package.

Example:
>>> provider.name, provider.schemes
('sagemaker', ('s3://',))
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from cloudtrain.provider.cloud import CloudProvider
from cloudtrain.providers.sagemaker import discover
from cloudtrain.providers.sagemaker.settings import SageMakerSettings

if TYPE_CHECKING:
    from cloudtrain.bundle import Bundle
    from cloudtrain.outputs import Outputs
    from cloudtrain.planning import Plan
    from cloudtrain.progress import OnProgress
    from cloudtrain.provider.base import Discovered, Job, JobSummary, PlanOffer, Provider
    from cloudtrain.provider.failures import CallError
    from cloudtrain.provider.jobs import JobStatus
    from cloudtrain.provider.quotas import QuotaNeed, QuotaReading
    from cloudtrain.providers.sagemaker.backups import S3Store
    from cloudtrain.sources import Sources
    from cloudtrain.spec import JobSpec
    from cloudtrain_runtime.diagnosis import Check


class SageMaker(CloudProvider):
    """SageMaker training jobs."""

    name = "sagemaker"
    section = SageMakerSettings
    # MaxRuntimeInSeconds: "The maximum value is 28 days" (CreateTrainingJob API reference).
    max_runtime_s = 28 * 86400
    max_runtime_field = "StoppingCondition.MaxRuntimeInSeconds"
    unsupported: Mapping[str, str] = MappingProxyType({"tpu": "SageMaker has no TPUs; use --provider vertex"})
    color = "#ff9900"

    def check(self, spec: JobSpec) -> list[str]:
        from cloudtrain.providers.sagemaker import checks

        return checks.problems(spec)

    def render(self, plan: Plan) -> dict[str, Any]:
        from cloudtrain.providers.sagemaker import render

        return render.render(plan)

    def outputs(self, plan: Plan, request: dict[str, Any] | None = None) -> Outputs:
        from cloudtrain.providers.sagemaker import outputs

        return outputs.of_plan(plan, request)

    # The job room talks to the cloud: imported on first use, so the spec commands never load it.
    def upload(
        self, plan: Plan, bundle: Bundle, *, clients: Any = None, progress: OnProgress | None = None
    ) -> None:
        from cloudtrain.providers.sagemaker import job

        job.upload_bundle(plan, bundle, clients, progress)

    def submit(
        self,
        plan: Plan,
        request: dict[str, Any],
        bundle: Bundle,
        *,
        clients: Any = None,
        progress: OnProgress | None = None,
    ) -> Job:
        from cloudtrain.providers.sagemaker import batch, job
        from cloudtrain.providers.sagemaker.clients import AwsClients

        if "serviceRequestPayload" in request:  # capacity: queue (render.queued)
            aws = clients or AwsClients(region=SageMakerSettings.of(plan.spec).region)
            return batch.submit(plan, request, bundle, aws, progress)
        return job.submit(plan, request, bundle, clients, progress=progress)

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
        from cloudtrain.providers.sagemaker import batch, job, sweep_job

        if sweep_job.owns(job_id):
            return sweep_job.attach(job_id, clients)
        if batch.owns(job_id):
            return batch.attach(job_id, clients)
        return job.attach(job_id, clients)

    def owns(self, job_id: str) -> bool:
        from cloudtrain.providers.sagemaker import batch, job, sweep_job

        return sweep_job.owns(job_id) or job.owns(job_id) or batch.owns(job_id)

    def quota_needs(self, plan: Plan) -> list[QuotaNeed]:
        from cloudtrain.providers.sagemaker import quotas

        return quotas.plan_needs(plan)

    def read_quotas(self, plan: Plan, needs: list[QuotaNeed], *, clients: Any = None) -> list[QuotaReading]:
        from cloudtrain.providers.sagemaker import quotas
        from cloudtrain.providers.sagemaker.clients import AwsClients

        return quotas.read(needs, clients or AwsClients(region=plan.region))

    def discover_settings(self, environ: Mapping[str, str]) -> dict[str, Discovered]:
        return discover.discover(environ)

    def check_setup(self, spec: JobSpec, sources: Sources) -> list[Check]:
        from cloudtrain.providers.sagemaker import setup_checks

        return setup_checks.check_setup(spec, sources)

    def emulate(self, plan: Plan, request: dict[str, Any]) -> dict[str, Any]:
        from cloudtrain.providers.sagemaker import emulate, render

        return emulate.replicas(render.training_of(request), plan.region, queue=request.get("jobQueue"))

    def quota_refusal(self, plan: Plan) -> CallError:
        from cloudtrain.providers.sagemaker import emulate

        return emulate.quota_refusal(plan)

    def stockout(self, plan: Plan) -> JobStatus:
        from cloudtrain.providers.sagemaker import emulate

        return emulate.stockout(plan)

    def job_names(self, first: str) -> Iterator[str]:
        from cloudtrain.providers.sagemaker import emulate

        return emulate.job_names(first)

    def plan_offers(
        self, spec: JobSpec, machine_type: str, hosts: int, *, hours: int, clients: Any = None
    ) -> list[PlanOffer]:
        """Training plan offerings for the shape (``plans``), in ``sagemaker.region``."""
        from cloudtrain.providers.sagemaker import plans
        from cloudtrain.providers.sagemaker.clients import AwsClients

        aws = clients or AwsClients(region=SageMakerSettings.of(spec).region)
        return plans.search(aws, machine_type, hosts, hours=hours)

    def read_output(self, plan: Plan, uri: str, *, clients: Any = None) -> bytes:
        from cloudtrain.providers.sagemaker import download

        return download.read_output(plan, uri, clients)

    def run_store(self, uri: str, *, region: str, clients: Any = None) -> S3Store:
        """The run's objects under ``uri`` in S3, through boto3 (``backups.S3Store``)."""
        from cloudtrain.providers.sagemaker.backups import S3Store
        from cloudtrain.providers.sagemaker.clients import AwsClients

        return S3Store(clients or AwsClients(region=region), uri)

    def configured(self, settings: JobSpec) -> str | None:
        if SageMakerSettings.of(settings).role or discover.credentials_source(os.environ):
            return None
        return (
            "no AWS credentials found in the environment or ~/.aws: run `aws configure`, or set "
            "AWS_PROFILE (an instance role is not looked for: --provider sagemaker asks anyway)"
        )

    def list_jobs(self, settings: JobSpec, *, limit: int | None, clients: Any = None) -> list[JobSummary]:
        """cloudtrain's training jobs in the settings' region (``listing``), and those waiting in ``sagemaker.queue``."""
        from cloudtrain.providers.sagemaker import batch, listing, sweep_job
        from cloudtrain.providers.sagemaker.clients import AwsClients

        section = SageMakerSettings.of(settings)
        aws = clients or AwsClients(region=section.region)
        found = listing.list_jobs(aws, limit=limit) + sweep_job.list_sweeps(aws, limit=limit)
        if section.queue:
            found += batch.list_queued(aws, section.queue, limit=limit)
        return sorted(found, key=lambda job: job.created, reverse=True)[:limit]

    def jobs_of_run(self, run_id: str, settings: JobSpec, *, clients: Any = None) -> list[JobSummary]:
        """The training jobs tagged ``cloudtrain:run`` = ``run_id`` in the settings' region (``listing``)."""
        from cloudtrain.providers.sagemaker import listing
        from cloudtrain.providers.sagemaker.clients import AwsClients

        return listing.jobs_of_run(
            clients or AwsClients(region=SageMakerSettings.of(settings).region), run_id
        )


provider: Provider = SageMaker()
