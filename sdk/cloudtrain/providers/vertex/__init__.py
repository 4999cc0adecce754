"""Vertex AI custom training: a Plan becomes a CustomJob, submitted with google-cloud-aiplatform.

The rooms: ``checks`` (what Vertex refuses), ``render`` (the CustomJob body, pure),
``clients`` (retries and error translation), ``job`` (submit, status, cancel), ``logs``
(Cloud Logging), ``upload`` (the code bundle to Cloud Storage, once), ``emulate`` (the
replicas Vertex would start, run by the local provider).

Example:
>>> provider.name, provider.schemes
('vertex', ('gs://',))
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from cloudtrain import planning
from cloudtrain.providers.vertex import checks, emulate
from cloudtrain.providers.vertex.job import VertexClients, VertexJob, attach, owns, submit
from cloudtrain.providers.vertex.render import fuse_path, render, request_hash

if TYPE_CHECKING:
    from pathlib import Path

    from cloudtrain.bundle import Bundle
    from cloudtrain.planning import Plan
    from cloudtrain.providers.base import Provider
    from cloudtrain.spec import JobSpec

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


class Vertex:
    """Vertex AI custom training."""

    name = "vertex"
    title = "Vertex AI"
    schemes = ("gs://",)
    machine_catalog = True
    billed = True
    # Scheduling.timeout defaults to 7 days, the longest FLEX_START accepts (vertex.md §1.1, §4.4).
    max_runtime_s = 7 * 86400
    max_runtime_field = "Scheduling.timeout"
    unsupported: Mapping[str, str] = MappingProxyType({})
    catalog_dir: Path | None = None
    color = "#1a73e8"

    def __repr__(self) -> str:
        return "Vertex()"

    def region(self, spec: JobSpec) -> str:
        return spec.vertex.region

    def storage_root(self, spec: JobSpec) -> str:
        return spec.vertex.storage_root or spec.storage.root

    def check(self, spec: JobSpec) -> list[str]:
        return checks.problems(spec)

    def plan(self, spec: JobSpec) -> Plan:
        return planning.plan(spec, self.name)

    def render(self, plan: Plan) -> dict[str, Any]:
        return render(plan)

    def submit(
        self, plan: Plan, request: dict[str, Any], bundle: Bundle, *, clients: Any = None
    ) -> VertexJob:
        return submit(plan, request, bundle, clients)

    def attach(self, job_id: str, *, clients: Any = None) -> VertexJob:
        return attach(job_id, clients)

    def owns(self, job_id: str) -> bool:
        return owns(job_id)

    def emulate(self, plan: Plan, request: dict[str, Any]) -> dict[str, Any]:
        return emulate.replicas(request)


provider: Provider = Vertex()
