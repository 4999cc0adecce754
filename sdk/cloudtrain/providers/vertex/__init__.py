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

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from cloudtrain.errors import SpecError
from cloudtrain.providers.cloud import CloudProvider, Rooms

# The render room before the function of the same name, which then takes its place here.
from cloudtrain.providers.vertex import (
    checks,
    discover,
    download,
    emulate,
    job,
    listing,
    outputs,
    setup_checks,
)
from cloudtrain.providers.vertex import render as rendering
from cloudtrain.providers.vertex.clients import VertexClients
from cloudtrain.providers.vertex.job import VertexJob, attach, owns, submit
from cloudtrain.providers.vertex.render import fuse_path, render, request_hash

if TYPE_CHECKING:
    from cloudtrain.defaults import Sources
    from cloudtrain.planning import Plan
    from cloudtrain.providers.base import Discovered, JobSummary, Provider
    from cloudtrain.spec import JobSpec
    from cloudtrain_runtime.diagnosis import Check

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

    rooms = Rooms(checks=checks, render=rendering, outputs=outputs, job=job)

    def discover_settings(self, environ: Mapping[str, str]) -> dict[str, Discovered]:
        return discover.discover(environ)

    def check_setup(self, spec: JobSpec, sources: Sources) -> list[Check]:
        return setup_checks.check_setup(spec, sources)

    def emulate(self, plan: Plan, request: dict[str, Any]) -> dict[str, Any]:
        return emulate.replicas(request)

    def job_names(self, first: str) -> Iterator[str]:
        return emulate.job_names(first)

    def read_output(self, plan: Plan, uri: str, *, clients: Any = None) -> bytes:
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
        vertex = settings.vertex
        if not vertex.project:
            raise SpecError(f"vertex.project is required to list jobs: {self.configured(settings)}.")
        return listing.list_jobs(vertex.project, vertex.region, limit=limit, clients=clients)


provider: Provider = Vertex()
