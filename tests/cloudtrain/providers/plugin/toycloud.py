"""A provider from outside cloudtrain, in miniature: what a third-party package ships.

It registers through the ``cloudtrain.providers`` entry-point group (the tests install
a tiny distribution that declares it), brings its own catalog rows in
``toycloud_catalog/``, and keeps its "cloud" in a folder (``$TOYCLOUD_HOME``): a job
is queued, then running, then succeeded, one step per status read, unless cancelled.
It imports only cloudtrain's public provider interface, like a real plugin would. Its
spec section (``toycloud_settings``, the ``toycloud:`` section with the ``toy://`` scheme)
and its runtime environment (``toycloud_runtime``) are entry points of their own.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from toycloud_settings import ToyCloudSettings

from cloudtrain import container, planning
from cloudtrain.bundle import Bundle
from cloudtrain.errors import ProviderError
from cloudtrain.outputs import Outputs, standard
from cloudtrain.planning import Plan
from cloudtrain.progress import OnProgress
from cloudtrain.providers import JobStatus, poll_until_done
from cloudtrain.spec import JobSpec

HOME_ENV = "TOYCLOUD_HOME"
ID_PREFIX = "toy:"
PROGRESSION = (
    JobStatus("queued", "QUEUED"),
    JobStatus("running", "RUNNING"),
    JobStatus("succeeded", "DONE"),
)


def home() -> Path:
    return Path(os.environ[HOME_ENV])


class ToyJob:
    """A job kept as one JSON file: its request, how often its status was read, whether it was cancelled."""

    provider = "toycloud"

    def __init__(self, job_id: str, request: dict[str, Any] | None = None) -> None:
        self.id = job_id
        self.request = request
        self.path = home() / f"{job_id.removeprefix(ID_PREFIX)}.json"

    @property
    def outputs(self) -> Outputs:
        root = json.loads(self.path.read_text())["root"]
        return standard(root, logs=str(home() / "{job}.log")).for_job(self.id.removeprefix(ID_PREFIX))

    def status(self) -> JobStatus:
        record = json.loads(self.path.read_text())
        if record["cancelled"]:
            return JobStatus("cancelled", "CANCELLED")
        current = PROGRESSION[min(record["reads"], len(PROGRESSION) - 1)]
        self.path.write_text(json.dumps({**record, "reads": record["reads"] + 1}))
        return current

    def logs(
        self, follow: bool = False, *, since: datetime | None = None, tail: int | None = None
    ) -> Iterator[str]:
        """One line, as new as the job, so ``since`` keeps it; ``tail=0`` drops it."""
        if tail != 0:
            yield f"[chief-0] training {self.id}"

    def cancel(self) -> None:
        record = json.loads(self.path.read_text())
        if record["reads"] >= len(PROGRESSION) - 1 or record["cancelled"]:
            raise ProviderError(f"{self.id} has already ended; there is nothing to cancel.")
        self.path.write_text(json.dumps({**record, "cancelled": True}))

    def wait(
        self,
        poll_s: float = 30.0,
        on_status: Callable[[JobStatus], None] | None = None,
        *,
        until: Callable[[JobStatus], bool] | None = None,
    ) -> JobStatus:
        return poll_until_done(self.status, lambda _: None, poll_s, on_status, until)


class ToyCloud:
    name = "toycloud"
    title = ToyCloudSettings.title
    section = ToyCloudSettings
    schemes = ToyCloudSettings.schemes
    machine_catalog = True
    billed = True
    max_runtime_s = 2 * 86400
    max_runtime_field = "limits.max_runtime"
    unsupported: Mapping[str, str] = MappingProxyType({"tpu": "Toy Cloud has no TPUs"})
    catalog_dir = ToyCloudSettings.catalog_dir
    color = "#2e7d32"

    def region(self, spec: JobSpec) -> str:
        return ToyCloudSettings.of(spec).region

    def storage_root(self, spec: JobSpec) -> str:
        return ToyCloudSettings.of(spec).storage_root or spec.storage.root

    def check(self, spec: JobSpec) -> list[str]:
        return ["resources.hosts: Toy Cloud runs at most 4 hosts."] if spec.resources.hosts > 4 else []

    def plan(self, spec: JobSpec) -> Plan:
        return planning.plan(spec, self)

    def render(self, plan: Plan) -> dict[str, Any]:
        if plan.bundle is None:
            raise ProviderError(
                "The plan has no code bundle URI. Pack it first: cloudtrain.api.pack_code(plan)."
            )
        assert plan.machine is not None
        return {
            "name": plan.name,
            "machine": plan.machine.machine_type,
            "hosts": plan.hosts,
            "image": plan.image,
            "env": container.environment(plan, plan.bundle),
        }

    def outputs(self, plan: Plan, request: dict[str, Any] | None = None) -> Outputs:
        return standard(plan.storage.root, logs=str(home() / "{job}.log"))

    def upload(self, plan: Plan, bundle: Bundle, *, clients: Any = None, progress: Any = None) -> None:
        """Toy Cloud reads the bundle where it was packed."""

    def submit(
        self,
        plan: Plan,
        request: dict[str, Any],
        bundle: Bundle,
        *,
        clients: Any = None,
        progress: OnProgress | None = None,
    ) -> ToyJob:
        digest = hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()[:12]
        job = ToyJob(f"{ID_PREFIX}{digest}", request)
        if not job.path.exists():  # the same request again is the same job
            job.path.parent.mkdir(parents=True, exist_ok=True)
            job.path.write_text(json.dumps({"reads": 0, "cancelled": False, "root": plan.storage.root}))
        return job

    def attach(self, job_id: str, *, clients: Any = None) -> ToyJob:
        job = ToyJob(job_id)
        if not self.owns(job_id) or not job.path.is_file():
            raise ProviderError(f"No Toy Cloud job {job_id!r}.")
        return job

    def owns(self, job_id: str) -> bool:
        return job_id.startswith(ID_PREFIX)


provider = ToyCloud()
