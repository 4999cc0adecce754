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
from cloudtrain.providers.cloud import CloudProvider, Rooms
from cloudtrain.providers.vertex import checks, discover, outputs
from cloudtrain.providers.vertex import render as rendering
from cloudtrain.providers.vertex.settings import VertexSettings

if TYPE_CHECKING:
    from cloudtrain.bundle import Bundle
    from cloudtrain.defaults import Sources
    from cloudtrain.outputs import Outputs
    from cloudtrain.planning import Plan
    from cloudtrain.progress import OnProgress
    from cloudtrain.providers.base import Discovered, Job, JobSummary, Provider
    from cloudtrain.spec import JobSpec
    from cloudtrain_runtime.diagnosis import Check


class Vertex(CloudProvider):
    """Vertex AI custom training."""

    name = "vertex"
    title = "Vertex AI"
    section = VertexSettings
    schemes = VertexSettings.schemes
    # Scheduling.timeout defaults to 7 days, the longest FLEX_START accepts (vertex.md §1.1, §4.4).
    max_runtime_s = 7 * 86400
    max_runtime_field = "Scheduling.timeout"
    unsupported: Mapping[str, str] = MappingProxyType({})
    color = "#1a73e8"

    rooms = Rooms(checks=checks, render=rendering, outputs=outputs, job="cloudtrain.providers.vertex.job")

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
        from cloudtrain.providers.vertex import sweep_job

        if sweep_job.owns(job_id):
            return sweep_job.attach(job_id, clients)
        return super().attach(job_id, clients=clients)

    def owns(self, job_id: str) -> bool:
        from cloudtrain.providers.vertex import sweep_job

        return sweep_job.owns(job_id) or super().owns(job_id)

    def discover_settings(self, environ: Mapping[str, str]) -> dict[str, Discovered]:
        return discover.discover(environ)

    def check_setup(self, spec: JobSpec, sources: Sources) -> list[Check]:
        from cloudtrain.providers.vertex import setup_checks

        return setup_checks.check_setup(spec, sources)

    def emulate(self, plan: Plan, request: dict[str, Any]) -> dict[str, Any]:
        from cloudtrain.providers.vertex import emulate

        return emulate.replicas(request)

    def job_names(self, first: str) -> Iterator[str]:
        from cloudtrain.providers.vertex import emulate

        return emulate.job_names(first)

    def read_output(self, plan: Plan, uri: str, *, clients: Any = None) -> bytes:
        from cloudtrain.providers.vertex import download

        return download.read_output(plan, uri, clients)

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


provider: Provider = Vertex()
