"""What the cloud providers' ``provider`` objects do alike, written once.

A cloud provider package has the same rooms as every other (``checks``, ``render``,
``outputs``, ``clients``, ``job``, ``logs``, ``upload``, ``emulate``), and its ``provider`` object is
the one entry point to them. ``CloudProvider`` is that entry point: a subclass states
the provider's facts (the ``Provider`` attributes) and its ``rooms``; the methods here
read the provider's section of the spec (``spec.<name>``) and call ``checks.problems``,
``render.render``, ``outputs.of_plan``, ``job.submit``, ``job.attach`` and ``job.owns``, the
``job`` room imported when first needed.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple

from cloudtrain import planning

if TYPE_CHECKING:
    from pathlib import Path

    from cloudtrain.bundle import Bundle
    from cloudtrain.outputs import Outputs
    from cloudtrain.planning import Plan
    from cloudtrain.progress import OnProgress
    from cloudtrain.providers.base import Job
    from cloudtrain.spec import JobSpec


class Rooms(NamedTuple):
    """The modules of a cloud provider package that its ``provider`` object calls.

    ``job`` is named, not imported: it is the room that talks to the cloud, imported on
    first use, so the spec commands (``validate``, ``plan``, ``render``, ``cost``) never load it.
    """

    checks: ModuleType
    render: ModuleType
    outputs: ModuleType
    job: str


class CloudProvider:
    """The ``Provider`` methods of a cloud whose package has the usual rooms.

    Subclasses set the other ``Provider`` attributes and ``rooms``.
    """

    name: str
    rooms: Rooms
    # A cloud rents machines from its catalog rows (shipped with cloudtrain), by the hour.
    machine_catalog = True
    billed = True
    catalog_dir: Path | None = None

    def settings(self, spec: JobSpec) -> Any:
        """The spec's section named after the provider (``spec.vertex``), with ``region`` and ``storage_root``."""
        return getattr(spec, self.name)

    def region(self, spec: JobSpec) -> str:
        return str(self.settings(spec).region)

    def storage_root(self, spec: JobSpec) -> str:
        return str(self.settings(spec).storage_root or spec.storage.root)

    def check(self, spec: JobSpec) -> list[str]:
        problems: list[str] = self.rooms.checks.problems(spec)
        return problems

    def plan(self, spec: JobSpec) -> Plan:
        return planning.plan(spec, self.name)

    def render(self, plan: Plan) -> dict[str, Any]:
        request: dict[str, Any] = self.rooms.render.render(plan)
        return request

    def outputs(self, plan: Plan, request: dict[str, Any] | None = None) -> Outputs:
        outputs: Outputs = self.rooms.outputs.of_plan(plan, request)
        return outputs

    def upload(
        self, plan: Plan, bundle: Bundle, *, clients: Any = None, progress: OnProgress | None = None
    ) -> None:
        self._job().upload_bundle(plan, bundle, clients, progress)

    def submit(
        self,
        plan: Plan,
        request: dict[str, Any],
        bundle: Bundle,
        *,
        clients: Any = None,
        progress: OnProgress | None = None,
    ) -> Job:
        job: Job = self._job().submit(plan, request, bundle, clients, progress=progress)
        return job

    def attach(self, job_id: str, *, clients: Any = None) -> Job:
        job: Job = self._job().attach(job_id, clients)
        return job

    def owns(self, job_id: str) -> bool:
        return bool(self._job().owns(job_id))

    def _job(self) -> ModuleType:
        return importlib.import_module(self.rooms.job)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
