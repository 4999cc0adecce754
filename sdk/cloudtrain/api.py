"""The Python API: the same flow as the CLI, for pipelines (KFP, SageMaker Pipelines, Airflow).

spec -> plan -> pack the code -> render the request -> submit. Each step is a plain
function; ``render`` stops before anything is contacted, which is what ``--dry-run`` shows.

Example:
>>> import cloudtrain
>>> spec = cloudtrain.JobSpec(name="demo", code={"module": "trainer.task"})
>>> cloudtrain.plan(spec, "local").strategy
'one-device'
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from cloudtrain import budget
from cloudtrain import bundle as bundles
from cloudtrain.planning import Plan, plan
from cloudtrain.providers import Job, backend, backend_for_job, local
from cloudtrain.spec import JobSpec
from cloudtrain.specfile import load_spec
from cloudtrain.throughput import Throughput


def as_spec(spec: JobSpec | str | os.PathLike[str], overrides: tuple[str, ...] = ()) -> JobSpec:
    """Accept a JobSpec, or the path of a job.yaml (with optional ``KEY=VALUE`` overrides)."""
    if isinstance(spec, JobSpec):
        return spec
    return load_spec(os.fspath(spec), overrides)


def pack_code(plan_: Plan) -> tuple[Plan, bundles.Bundle]:
    """Pack the spec's source directory and return the plan pointing at the bundle's URI."""
    spec = plan_.spec
    packed = bundles.pack(
        spec.code.source_dir,
        bundle_cache(),
        include_runtime=plan_.image != "local" and spec.image == "auto",
    )
    return plan_.with_bundle(packed.uri_under(plan_.storage.code)), packed


def bundle_cache() -> Path:
    """Where packed bundles are kept on this machine (``$XDG_CACHE_HOME/cloudtrain/bundles``)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "cloudtrain" / "bundles"


@dataclass(frozen=True)
class Submission:
    """A job ready to send: the plan with its bundle URI, the packed code, the backend, the request."""

    plan: Plan
    bundle: bundles.Bundle
    backend: ModuleType
    request: dict[str, Any]

    def send(self, clients: Any = None) -> Job:
        """Create the job (the only network call); see the backend's ``submit``."""
        return self.backend.submit(self.plan, self.request, self.bundle, clients=clients)


def prepare(
    spec: JobSpec | str | os.PathLike[str],
    provider: str | None = None,
    *,
    emulate: str | None = None,
    fault: str | None = None,
) -> Submission:
    """Plan, pack the code and render the request; nothing is contacted.

    With ``emulate`` (local only) the plan is the emulated provider's and the local
    backend runs its request; ``fault`` is added to a local request.
    """
    spec = as_spec(spec)
    target = local.plan_provider(provider or spec.provider, emulate=emulate, fault=fault)
    planned, packed = pack_code(plan(spec, target))
    module = backend("local" if emulate else planned.provider)
    return Submission(planned, packed, module, local.with_fault(module.render(planned), fault))


def render(spec: JobSpec | str | os.PathLike[str], provider: str | None = None) -> dict[str, Any]:
    """The exact request ``submit`` would send, without contacting anything.

    Example:
    >>> request = render("examples/binary_classifier/job.yaml", "local")  # doctest: +SKIP
    """
    return prepare(spec, provider).request


def submit(
    spec: JobSpec | str | os.PathLike[str],
    provider: str | None = None,
    *,
    clients: Any = None,
    emulate: str | None = None,
    fault: str | None = None,
    throughput: str | Throughput | None = None,
    force: bool = False,
) -> Job:
    """Plan, pack, render and submit the job; returns a handle with status/logs/wait/cancel.

    Args:
        spec: a JobSpec or the path of a job.yaml.
        provider: ``local``, ``vertex`` or ``sagemaker``; default ``spec.provider``.
        clients: provider clients to use instead of the defaults (tests, custom transports).
        emulate: local only: ``vertex`` or ``sagemaker`` runs that provider's request here.
        fault: local only: ``worker:0@epoch:1`` makes that replica kill itself once.
        throughput: measured speed (``"1200@a100-40gb"`` or a throughput JSON path); with it a
            cloud submit whose estimate exceeds ``limits.max_cost_usd`` is refused.
        force: submit even over the budget.

    Raises:
        BudgetError: the estimate exceeds ``limits.max_cost_usd`` and ``force`` is False.
    """
    submission = prepare(spec, provider, emulate=emulate, fault=fault)
    if not emulate:
        budget.enforce_budget(budget.check_budget(submission.plan, throughput), force=force)
    return submission.send(clients)


def attach(job_id: str, provider: str | None = None, *, clients: Any = None) -> Job:
    """Reconnect to a submitted job by the ID ``submit`` printed."""
    module = backend(provider) if provider else backend_for_job(job_id)
    return module.attach(job_id, clients=clients)
