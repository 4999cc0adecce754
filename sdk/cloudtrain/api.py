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
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cloudtrain import bundle as bundles
from cloudtrain import usercode
from cloudtrain.cost import budget
from cloudtrain.cost.throughput import Throughput
from cloudtrain.planning import Plan
from cloudtrain.providers import Job, Provider, registry
from cloudtrain.spec import JobSpec
from cloudtrain.specfile import load_spec


def as_spec(spec: JobSpec | str | os.PathLike[str], overrides: tuple[str, ...] = ()) -> JobSpec:
    """Accept a JobSpec, or the path of a job.yaml (with optional ``KEY=VALUE`` overrides).

    Either way the code is checked on disk first (``cloudtrain.usercode``); a JobSpec's
    ``code.source_dir`` is taken as it is, relative to the current folder.

    Raises:
        SpecError: the spec is invalid, or its code is missing or lacks a required function.
    """
    if isinstance(spec, JobSpec):
        usercode.require_code(spec.code)
        return spec
    return load_spec(os.fspath(spec), overrides)


def pack_code(plan_: Plan) -> tuple[Plan, bundles.Bundle]:
    """Pack the spec's source directory and return the plan pointing at the bundle's URI.

    Every local folder a run writes to (a local ``storage.root`` such as ``./outputs``
    next to job.yaml, and the plan's storage paths when they are local) is left out, so
    the checkpoints, TensorBoard files and model of a local run never change the bundle.
    """
    spec = plan_.spec
    written = (spec.storage.root, *asdict(plan_.storage).values())
    packed = bundles.pack(
        spec.code.source_dir,
        bundle_cache(),
        include_runtime=plan_.image != "local" and spec.image == "auto",
        exclude=[path for path in written if "://" not in path],
    )
    return plan_.with_bundle(packed.uri_under(plan_.storage.code)), packed


def bundle_cache() -> Path:
    """Where packed bundles are kept on this machine (``$XDG_CACHE_HOME/cloudtrain/bundles``)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "cloudtrain" / "bundles"


@dataclass(frozen=True)
class Submission:
    """A job ready to send: the plan with its bundle URI, the packed code, the provider, the request."""

    plan: Plan
    bundle: bundles.Bundle
    provider: Provider
    request: dict[str, Any]

    def send(self, clients: Any = None) -> Job:
        """Create the job (the only network call); see ``Provider.submit``."""
        return self.provider.submit(self.plan, self.request, self.bundle, clients=clients)


def provider_for(provider: str | Provider | None, spec: JobSpec) -> Provider:
    """A provider object: the one given, the one registered under a name, or the spec's."""
    if provider is None or isinstance(provider, str):
        return registry.get(provider or spec.provider)
    return provider


def prepare(spec: JobSpec | str | os.PathLike[str], provider: str | Provider | None = None) -> Submission:
    """Plan, pack the code and render the request; nothing is contacted.

    ``provider`` is a name, or a configured provider object such as
    ``cloudtrain.providers.local.Local(emulate="vertex")``.
    """
    spec = as_spec(spec)
    target = provider_for(provider, spec)
    planned, packed = pack_code(target.plan(spec))
    return Submission(planned, packed, target, target.render(planned))


# The bundle name a request is checked against before the code is packed.
PLACEHOLDER_BUNDLE = "0" * 16 + ".tar.gz"


def validate(spec: JobSpec | str | os.PathLike[str], provider: str | Provider | None = None) -> Plan:
    """Every check ``submit`` makes before it contacts anything, without packing the code.

    The spec, the provider's rules, and the limits only its request shows (Vertex's 100
    environment variables and 64 labels, SageMaker's tag, hyperparameter and channel
    limits): the request is rendered against a placeholder bundle name and thrown away.

    Raises:
        SpecError: one message per problem.
    """
    spec = as_spec(spec)
    target = provider_for(provider, spec)
    planned = target.plan(spec)
    target.render(planned.with_bundle(f"{planned.storage.code}/{PLACEHOLDER_BUNDLE}"))
    return planned


def render(spec: JobSpec | str | os.PathLike[str], provider: str | Provider | None = None) -> dict[str, Any]:
    """The exact request ``submit`` would send, without contacting anything.

    Example:
    >>> request = render("examples/binary_classifier/job.yaml", "local")  # doctest: +SKIP
    """
    return prepare(spec, provider).request


def submit(
    spec: JobSpec | str | os.PathLike[str],
    provider: str | Provider | None = None,
    *,
    clients: Any = None,
    throughput: str | Throughput | None = None,
    force: bool = False,
    strict_budget: bool = False,
) -> Job:
    """Plan, pack, render and submit the job; returns a handle with status/logs/wait/cancel.

    Args:
        spec: a JobSpec or the path of a job.yaml.
        provider: a provider name (``cloudtrain.providers.names()``; default ``spec.provider``)
            or a configured provider, e.g. ``Local(emulate="vertex", fault="worker:0@epoch:1")``
            to run the Vertex request here and kill that replica once.
        clients: provider clients to use instead of the defaults (tests, custom transports).
        throughput: measured speed (``"1200@a100-40gb"`` or a throughput JSON path). A billed
            submit is checked against ``limits.max_cost_usd``: with it, the estimate; without
            it, the worst case (every host billed for all of ``limits.max_runtime``).
        force: submit even over the budget.
        strict_budget: refuse a job whose ``limits.max_cost_usd`` cannot be checked because
            the shape's price is unknown.

    Raises:
        BudgetError: the estimate (or worst case) exceeds ``limits.max_cost_usd`` and ``force``
            is False; or ``strict_budget`` and the price is unknown.
    """
    submission = prepare(spec, provider)
    if submission.provider.billed:
        check = budget.check_budget(submission.plan, throughput)
        budget.enforce_budget(check, force=force, strict=strict_budget)
    return submission.send(clients)


def attach(job_id: str, provider: str | None = None, *, clients: Any = None) -> Job:
    """Reconnect to a submitted job by the ID ``submit`` printed."""
    owner = registry.get(provider) if provider else registry.for_job(job_id)
    return owner.attach(job_id, clients=clients)
