"""What the cloud providers' ``provider`` objects do alike, written once.

A cloud provider package has the same rooms as every other (``settings``, ``checks``,
``render``, ``outputs``, ``clients``, ``job``, ``logs``, ``upload``, ``emulate``), and
its ``provider`` object is the one entry point to them: each method calls one room, by
name, where readers and the type checker see it. ``CloudProvider`` holds what those
objects share: the provider's section of the spec (``section``) gives the region and
the storage root, and planning is ``cloudtrain.planning.plan`` for this provider. A
subclass states the provider's facts (the ``Provider`` attributes) and its methods.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from cloudtrain import planning

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from cloudtrain.bundle import Bundle
    from cloudtrain.outputs import Outputs
    from cloudtrain.planning import Plan
    from cloudtrain.progress import OnProgress
    from cloudtrain.provider.base import Job
    from cloudtrain.sections import ProviderSection
    from cloudtrain.spec import JobSpec


class CloudProvider(ABC):
    """The ``Provider`` methods every cloud shares; a subclass adds its facts and the rest."""

    name: str
    section: type[ProviderSection]
    max_runtime_s: int | None
    max_runtime_field: str
    unsupported: Mapping[str, str]
    color: str
    # A cloud rents machines from its catalog rows (shipped with cloudtrain), by the hour.
    machine_catalog = True
    billed = True
    catalog_dir: Path | None = None

    @property
    def title(self) -> str:
        """The provider's own name, as its section gives it ("Vertex AI")."""
        return self.section.title

    @property
    def schemes(self) -> tuple[str, ...]:
        """The storage schemes its section's ``storage_root`` takes."""
        return self.section.schemes

    def settings(self, spec: JobSpec) -> Any:
        """The provider's section of ``spec`` (``spec.vertex``), with ``region`` and ``storage_root``."""
        return self.section.of(spec)

    def region(self, spec: JobSpec) -> str:
        return str(self.settings(spec).region)

    def storage_root(self, spec: JobSpec) -> str:
        return str(self.settings(spec).storage_root or spec.storage.root)

    def plan(self, spec: JobSpec) -> Plan:
        return planning.plan(spec, self)

    @abstractmethod
    def check(self, spec: JobSpec) -> list[str]: ...

    @abstractmethod
    def render(self, plan: Plan) -> dict[str, Any]: ...

    @abstractmethod
    def outputs(self, plan: Plan, request: dict[str, Any] | None = None) -> Outputs: ...

    @abstractmethod
    def upload(
        self, plan: Plan, bundle: Bundle, *, clients: Any = None, progress: OnProgress | None = None
    ) -> None: ...

    @abstractmethod
    def submit(
        self,
        plan: Plan,
        request: dict[str, Any],
        bundle: Bundle,
        *,
        clients: Any = None,
        progress: OnProgress | None = None,
    ) -> Job: ...

    @abstractmethod
    def attach(self, job_id: str, *, clients: Any = None) -> Job: ...

    @abstractmethod
    def owns(self, job_id: str) -> bool: ...

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
