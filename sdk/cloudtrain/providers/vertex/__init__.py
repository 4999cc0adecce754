"""Vertex AI custom training: a Plan becomes a CustomJob, submitted with google-cloud-aiplatform.

The rooms: ``checks`` (what Vertex refuses), ``render`` (the CustomJob body, pure),
``outputs`` (where the job's artifacts land), ``clients`` (building the Google clients, retries and error translation), ``job``
(submit, attach, owns, and the job's status, cancel and wait), ``names`` (job IDs and
states), ``listing`` (cloudtrain's jobs, their times and usage), ``logs`` (Cloud
Logging), ``upload`` (the code bundle to Cloud Storage, once), ``emulate`` (the replicas
Vertex would start, run by the local provider).

Example:
>>> provider.name, provider.schemes
('vertex', ('gs://',))
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from cloudtrain.errors import SpecError
from cloudtrain.providers.cloud import CloudProvider, Rooms

# The render room before the function of the same name, which then takes its place here.
from cloudtrain.providers.vertex import checks, discover, outputs
from cloudtrain.providers.vertex import render as rendering
from cloudtrain.providers.vertex.render import fuse_path, render, request_hash

if TYPE_CHECKING:
    from cloudtrain.bundle import Bundle
    from cloudtrain.defaults import Sources
    from cloudtrain.outputs import Outputs
    from cloudtrain.planning import Plan
    from cloudtrain.progress import OnProgress
    from cloudtrain.providers.base import Discovered, Job, JobSummary, Provider
    from cloudtrain.providers.vertex.clients import VertexClients
    from cloudtrain.providers.vertex.job import VertexJob, attach, owns, submit
    from cloudtrain.spec import JobSpec
    from cloudtrain_runtime.diagnosis import Check

# The rooms that talk to Vertex, and what this package exports from them: imported on
# first use, so the spec commands stay fast (DESIGN.md, the import boundary).
LAZY = {
    "VertexClients": "cloudtrain.providers.vertex.clients",
    "VertexJob": "cloudtrain.providers.vertex.job",
    "attach": "cloudtrain.providers.vertex.job",
    "owns": "cloudtrain.providers.vertex.job",
    "submit": "cloudtrain.providers.vertex.job",
}

__all__ = [
    "Vertex",
    "VertexClients",
    "VertexJob",
    "attach",
    "fuse_path",
    "owns",
    "provider",
    "render",
    "request_hash",
    "submit",
]


class Vertex(CloudProvider):
    """Vertex AI custom training."""

    name = "vertex"
    title = "Vertex AI"
    schemes = ("gs://",)
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
        if settings.vertex.project:
            return None
        return (
            "no Google Cloud project: set vertex.project in a profile of ~/.config/cloudtrain/config.yaml, "
            "GOOGLE_CLOUD_PROJECT, or `gcloud config set project PROJECT`"
        )

    def list_jobs(self, settings: JobSpec, *, limit: int | None, clients: Any = None) -> list[JobSummary]:
        """cloudtrain's custom jobs in the settings' project and region (``listing``)."""
        from cloudtrain.providers.vertex import listing, sweep_job
        from cloudtrain.providers.vertex.clients import VertexClients

        vertex = settings.vertex
        if not vertex.project:
            raise SpecError(f"vertex.project is required to list jobs: {self.configured(settings)}.")
        clients = clients or VertexClients()
        found = listing.list_jobs(vertex.project, vertex.region, limit=limit, clients=clients)
        found += sweep_job.list_sweeps(vertex.project, vertex.region, limit=limit, clients=clients)
        return sorted(found, key=lambda job: job.created, reverse=True)[:limit]


provider: Provider = Vertex()


def __getattr__(name: str) -> Any:
    """The exports that live in the rooms that talk to Vertex (``LAZY``), imported when first asked for."""
    if name in LAZY:
        return getattr(importlib.import_module(LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
