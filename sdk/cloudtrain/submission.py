"""A job ready to send: the spec loaded, planned, its code packed, its run named and its request rendered.

``prepare`` does all of it without contacting anything; ``stage`` also puts the code
where the request reads it; ``Submission.submit()`` creates the job. The Python API
(``cloudtrain.api``), ``cloudtrain bench`` and the pipeline adapters build on these, and
the CLI's ``submit`` too.

Example:
>>> submission = prepare("examples/binary_classifier/job.yaml", "local")  # doctest: +SKIP
>>> submission.request["replicas"][0]["env"]["TF_CONFIG"]  # doctest: +SKIP
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudtrain import bundle as bundles
from cloudtrain import runs, usercode
from cloudtrain.arguments import CALLABLE, Kind, expect
from cloudtrain.errors import CloudtrainError, SpecError
from cloudtrain.outputs import Outputs
from cloudtrain.planning import Plan
from cloudtrain.progress import OnProgress
from cloudtrain.provider import Job, Provider, registry
from cloudtrain.provider.base import NamesRuns
from cloudtrain.spec import JobSpec
from cloudtrain.specfile import load_spec

if TYPE_CHECKING:
    from cloudtrain.cost.throughput import Throughput
    from cloudtrain.sweep.submit import SweepSubmission


# What a ``provider`` argument may be: a registered name, a provider object, or None for the spec's.
PROVIDER = Kind(
    lambda value: value is None or isinstance(value, str | Provider),
    "a provider's name (cloudtrain.provider.registry.names()), a provider object, or None",
)


def as_spec(
    spec: JobSpec | str | os.PathLike[str],
    overrides: tuple[str, ...] = (),
    *,
    provider: str | Provider | None = None,
) -> JobSpec:
    """Accept a JobSpec, or the path of a job.yaml (with optional ``KEY=VALUE`` overrides).

    Either way the code is checked on disk first (``cloudtrain.usercode``); a JobSpec's
    ``code.source_dir`` is taken as it is, relative to the current folder. A path gets
    the profile and environment defaults (``cloudtrain.defaults``) for ``provider``, the
    one the job goes to (default: the spec's); a JobSpec is used as written
    (``cloudtrain.with_defaults(spec)`` applies them).

    Raises:
        SpecError: the spec is invalid, or its code is missing or lacks a required function;
            or ``spec`` is neither a JobSpec nor a path.
    """
    if isinstance(spec, JobSpec):
        usercode.require_code(spec.code)
        return spec
    if not isinstance(spec, str | os.PathLike):
        raise SpecError(
            f"Expected a JobSpec or the path of a job spec. Received: {type(spec).__name__}. "
            "Pass cloudtrain.JobSpec(**data), or a path such as 'job.yaml'."
        )
    return load_spec(os.fspath(spec), overrides, provider=provider_name(provider))


def provider_name(provider: str | Provider | None) -> str | None:
    """The name of ``provider``, given by name or as a provider object; None for the spec's own.

    Raises:
        SpecError: ``provider`` is neither.
    """
    expect(provider=(provider, PROVIDER))
    return provider if provider is None or isinstance(provider, str) else provider.name


def pack_code(plan_: Plan) -> tuple[Plan, bundles.Bundle]:
    """Pack the spec's source directory and return the plan pointing at the bundle's URI.

    Every local folder a run writes to (a local ``storage.root`` such as ``./outputs``
    next to job.yaml, and the plan's storage paths when they are local) is left out, so
    the checkpoints, TensorBoard files and model of a local run never change the bundle.
    """
    spec = plan_.spec
    written = (spec.storage.root, *asdict(plan_.storage).values())
    cache = bundle_cache()
    try:
        packed = bundles.pack(
            spec.code.source_dir,
            cache,
            include_runtime=plan_.image != "local" and spec.image == "auto",
            exclude=[path for path in written if "://" not in path],
        )
    except OSError as exc:
        raise _cache_unusable(cache, exc) from exc
    return plan_.with_bundle(packed.uri_under(plan_.storage.code)), packed


def _cache_unusable(cache: Path, exc: OSError) -> CloudtrainError:
    """The one line for a bundle cache that cannot be written: where, why, and the variable that moves it.

    Reading the user's files fails as a ``SpecError`` of its own (``cloudtrain.bundle``), so
    an ``OSError`` out of ``pack`` is the cache's: a folder under ``/proc``, a file where a
    folder should be, no permission, a full disk.
    """
    path = Path(exc.filename or cache)
    blocking = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)
    why = f"{blocking} is a file, not a folder" if blocking else f"{path}: {exc.strerror or exc}"
    return CloudtrainError(
        f"Cannot write the code bundle to {cache} ({why}). Set XDG_CACHE_HOME to a folder this user "
        "can write (cloudtrain keeps bundles in $XDG_CACHE_HOME/cloudtrain/bundles), or unset it."
    )


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

    @property
    def outputs(self) -> Outputs:
        """Where the job's artifacts will be, with whatever the request already names filled in."""
        return self.provider.outputs(self.plan, self.request)

    def submit(self, clients: Any = None, progress: OnProgress | None = None) -> Job:
        """Create the job (the only network call, with MLflow's when tracked); see ``Provider.submit``.

        A tracked job is recorded on this machine, so the command that sees it end closes its
        MLflow run (``cloudtrain.tracking.closing``).
        """
        plan, request = self.tracked()
        job = self.provider.submit(plan, request, self.bundle, clients=clients, progress=progress)
        if plan.spec.tracking is not None:
            from cloudtrain.tracking import record

            record.remember(plan, job.id)
        return job

    def tracked(self) -> tuple[Plan, dict[str, Any]]:
        """The plan and request that hand the replicas this run's MLflow run (``tracking:``).

        The MLflow run is found by its tag or made now (``cloudtrain.tracking.submitting``),
        and the request rendered again with its id. The id is the same for every attempt of
        the run, so the request is too; a store out of reach leaves both as they are.
        """
        if self.plan.spec.tracking is None:
            return self.plan, self.request
        from cloudtrain.tracking import submitting

        return submitting.tracked(self.plan, self.request, submitting.run_env, self.provider.render)


def provider_for(provider: str | Provider | None, spec: JobSpec) -> Provider:
    """A provider object: the one given, the one registered under a name, or the spec's.

    Raises:
        SpecError: ``provider`` is neither a name nor a provider, or names none.
    """
    expect(provider=(provider, PROVIDER))
    if provider is None or isinstance(provider, str):
        return registry.get(provider or spec.provider)
    return provider


def prepare(
    spec: JobSpec | str | os.PathLike[str],
    provider: str | Provider | None = None,
    *,
    run_id: str | None = None,
    throughput: str | Throughput | None = None,
) -> Submission | SweepSubmission:
    """Plan, pack the code, name the run and render the request; nothing is contacted.

    A spec with ``tuning:`` is a sweep: the request is the provider's tuning job (or the
    local search's), ``.submit()`` returns a handle with ``trials()`` and ``best()``.

    ``provider`` is a name, or a configured provider object such as
    ``cloudtrain.providers.local.Local(emulate="vertex")``; ``run_id`` as in ``stage``.
    A billed job's request carries the cost expected now (``budget.expected_cost``: from
    ``throughput`` if given, else the worst case), for ``status`` to set beside the actual.
    """
    spec = as_spec(spec, provider=provider)
    target = provider_for(provider, spec)
    planned = target.plan(spec).with_run(run_id)
    if target.billed:
        from cloudtrain.cost import budget

        planned = planned.with_estimate(budget.expected_cost(planned, throughput))
    planned, packed = pack_code(planned)
    if planned.run_id is None:
        planned = planned.with_run(new_run_id(target, planned))
    if spec.tuning is not None:
        from cloudtrain.sweep.submit import SweepSubmission, tuner

        return SweepSubmission(planned, packed, target, tuner(target).render_sweep(planned))
    return Submission(planned, packed, target, target.render(planned))


def new_run_id(provider: Provider, plan_: Plan) -> str:
    """The run of a submit that names none: the provider's choice, else a digest of the job.

    By default the same spec and code are the same run (``cloudtrain.runs.derived``), so
    submitting again attaches to the job or resumes it; a provider that starts a new run
    on every submit (``NamesRuns``, the local provider) names it itself.
    """
    return provider.new_run_id(plan_) if isinstance(provider, NamesRuns) else runs.derived(plan_)


def stage(
    spec: JobSpec | str | os.PathLike[str],
    provider: str | Provider | None = None,
    *,
    run_id: str | None = None,
    clients: Any = None,
    progress: OnProgress | None = None,
) -> Submission | SweepSubmission:
    """Plan, pack, upload the code once and render: a job ready for any orchestrator.

    Nothing is created on the provider. ``.request`` is the exact provider request (a
    CustomJob, CreateTrainingJob arguments) whose code is already in place, ``.outputs``
    where the artifacts will be, ``.plan`` the resolved plan, and ``.submit()`` creates it.

    ``run_id`` names the run: every artifact lives under ``ROOT/runs/<run_id>/``, and the
    same spec, code and run id attach to the job they created or resume it (a retried
    pipeline step), while a new run id makes a new job with artifacts of its own (next
    week's retrain of unchanged code). Without one, the run is a digest of the spec and
    code (``cloudtrain.runs``), except on the local provider, where every submit is a new run.

    Example:
    >>> staged = stage("job.yaml", "vertex", run_id="2026-12-03")  # doctest: +SKIP
    >>> staged.request["jobSpec"]["workerPoolSpecs"]  # doctest: +SKIP
    """
    expect(progress=(progress, CALLABLE | None))
    staged = prepare(spec, provider, run_id=run_id)
    staged.provider.upload(staged.plan, staged.bundle, clients=clients, progress=progress)
    return staged
