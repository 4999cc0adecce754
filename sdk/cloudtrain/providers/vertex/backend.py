"""The Vertex AI provider object: its facts, and its methods, each calling one room of the package.

Example:
>>> provider.name, provider.schemes
('vertex', ('gs://',))
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from cloudtrain.errors import SpecError
from cloudtrain.provider.cloud import CloudProvider
from cloudtrain.providers.vertex import discover
from cloudtrain.providers.vertex.settings import VertexSettings

if TYPE_CHECKING:
    from cloudtrain.bundle import Bundle
    from cloudtrain.outputs import Outputs
    from cloudtrain.planning import Plan
    from cloudtrain.progress import OnProgress
    from cloudtrain.provider.base import Discovered, Job, JobSummary, Provider
    from cloudtrain.provider.failures import CallError
    from cloudtrain.provider.jobs import JobStatus
    from cloudtrain.provider.quotas import QuotaNeed, QuotaReading
    from cloudtrain.providers.vertex.backups import GcsStore
    from cloudtrain.sources import Sources
    from cloudtrain.spec import JobSpec
    from cloudtrain_runtime.diagnosis import Check


class Vertex(CloudProvider):
    """Vertex AI custom training."""

    name = "vertex"
    section = VertexSettings
    # Scheduling.timeout defaults to 7 days (google-cloud-aiplatform 2.7.0,
    # google/cloud/aiplatform_v1/types/custom_job.py), the longest FLEX_START accepts
    # (https://cloud.google.com/vertex-ai/docs/training/schedule-jobs-dws).
    max_runtime_s = 7 * 86400
    max_runtime_field = "Scheduling.timeout"
    unsupported: Mapping[str, str] = MappingProxyType({})
    color = "#1a73e8"

    def check(self, spec: JobSpec) -> list[str]:
        from cloudtrain.providers.vertex import checks

        return checks.problems(spec)

    def render(self, plan: Plan) -> dict[str, Any]:
        from cloudtrain.providers.vertex import render

        return render.render(plan)

    def outputs(self, plan: Plan, request: dict[str, Any] | None = None) -> Outputs:
        from cloudtrain.providers.vertex import outputs

        return outputs.of_plan(plan, request)

    # The job room talks to the cloud: imported on first use, so the spec commands never load it.
    def upload(
        self, plan: Plan, bundle: Bundle, *, clients: Any = None, progress: OnProgress | None = None
    ) -> None:
        from cloudtrain.providers.vertex import job

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
        from cloudtrain.providers.vertex import job

        return job.submit(plan, request, bundle, clients, progress=progress)

    def render_sweep(self, plan: Plan) -> dict[str, Any]:
        """The HyperparameterTuningJob body (``sweep``)."""
        from cloudtrain.providers.vertex import sweep

        return sweep.render(plan)

    def sweep_outputs(self, plan: Plan, request: dict[str, Any] | None = None) -> Outputs:
        from cloudtrain.providers.vertex import sweep

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
        from cloudtrain.providers.vertex import sweep_job

        return sweep_job.submit(plan, request, bundle, clients, progress)

    def attach(self, job_id: str, *, clients: Any = None) -> Job:
        from cloudtrain.providers.vertex import job, sweep_job

        if sweep_job.owns(job_id):
            return sweep_job.attach(job_id, clients)
        return job.attach(job_id, clients)

    def owns(self, job_id: str) -> bool:
        from cloudtrain.providers.vertex import job, sweep_job

        return sweep_job.owns(job_id) or job.owns(job_id)

    def quota_needs(self, plan: Plan) -> list[QuotaNeed]:
        from cloudtrain.providers.vertex import quotas

        return quotas.plan_needs(plan)

    def read_quotas(self, plan: Plan, needs: list[QuotaNeed], *, clients: Any = None) -> list[QuotaReading]:
        from cloudtrain.providers.vertex import quotas
        from cloudtrain.providers.vertex.clients import VertexClients

        return quotas.read(plan, needs, clients or VertexClients())

    def discover_settings(self, environ: Mapping[str, str]) -> dict[str, Discovered]:
        return discover.discover(environ)

    def check_setup(self, spec: JobSpec, sources: Sources) -> list[Check]:
        from cloudtrain.providers.vertex import setup_checks

        return setup_checks.check_setup(spec, sources)

    def emulate(self, plan: Plan, request: dict[str, Any]) -> dict[str, Any]:
        from cloudtrain.providers.vertex import emulate

        return emulate.replicas(request)

    def quota_refusal(self, plan: Plan) -> CallError:
        from cloudtrain.providers.vertex import emulate

        return emulate.quota_refusal(plan)

    def stockout(self, plan: Plan) -> JobStatus:
        from cloudtrain.providers.vertex import emulate

        return emulate.stockout(plan)

    def job_names(self, first: str) -> Iterator[str]:
        from cloudtrain.providers.vertex import emulate

        return emulate.job_names(first)

    def read_output(self, plan: Plan, uri: str, *, clients: Any = None) -> bytes:
        from cloudtrain.providers.vertex import download

        return download.read_output(plan, uri, clients)

    def run_store(self, uri: str, *, region: str, clients: Any = None) -> GcsStore:
        """The run's objects under ``uri`` in Cloud Storage, through google-cloud-storage (``backups.GcsStore``)."""
        from cloudtrain.providers.vertex.backups import GcsStore
        from cloudtrain.providers.vertex.clients import VertexClients

        return GcsStore(clients or VertexClients(), uri)

    def configured(self, settings: JobSpec) -> str | None:
        if VertexSettings.of(settings).project:
            return None
        return (
            "no Google Cloud project: set vertex.project in a profile of ~/.config/cloudtrain/config.yaml, "
            "GOOGLE_CLOUD_PROJECT, or `gcloud config set project PROJECT`"
        )

    def list_jobs(self, settings: JobSpec, *, limit: int | None, clients: Any = None) -> list[JobSummary]:
        """cloudtrain's custom jobs in the settings' project and region (``listing``)."""
        from cloudtrain.providers.vertex import listing, sweep_job
        from cloudtrain.providers.vertex.clients import VertexClients

        vertex = VertexSettings.of(settings)
        if not vertex.project:
            raise SpecError(f"vertex.project is required to list jobs: {self.configured(settings)}.")
        clients = clients or VertexClients()
        found = listing.list_jobs(vertex.project, vertex.region, limit=limit, clients=clients)
        found += sweep_job.list_sweeps(vertex.project, vertex.region, limit=limit, clients=clients)
        return sorted(found, key=lambda job: job.created, reverse=True)[:limit]

    def jobs_of_run(self, run_id: str, settings: JobSpec, *, clients: Any = None) -> list[JobSummary]:
        """The custom jobs labelled ``cloudtrain_run`` = ``run_id`` in the settings' project and region (``listing``)."""
        from cloudtrain.providers.vertex import listing

        vertex = VertexSettings.of(settings)
        if not vertex.project:
            raise SpecError(f"vertex.project is required to find a run's jobs: {self.configured(settings)}.")
        return listing.jobs_of_run(vertex.project, vertex.region, run_id, clients=clients)


provider: Provider = Vertex()
