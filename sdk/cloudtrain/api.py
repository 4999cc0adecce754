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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Unpack, overload

from cloudtrain import planning, resume, runs
from cloudtrain.errors import CloudtrainError
from cloudtrain.planning import WORST_CASE, ExpectedCost, Plan
from cloudtrain.progress import OnProgress
from cloudtrain.provider import Job, Provider, registry
from cloudtrain.provider.base import JobSummary, ListsJobs
from cloudtrain.spec import JobSpec
from cloudtrain.specfile import load_settings
from cloudtrain.submission import (
    Submission,
    as_spec,
    bundle_cache,
    new_run_id,
    pack_code,
    prepare,
    provider_for,
    stage,
)

# ``prepare``, ``stage`` and what they build on are ``cloudtrain.submission``'s, part of this API too.
__all__ = [
    "JobListing",
    "Submission",
    "as_spec",
    "attach",
    "bundle_cache",
    "estimate",
    "jobs",
    "list_jobs",
    "listing_providers",
    "new_run_id",
    "pack_code",
    "placeholder_request",
    "plan",
    "prepare",
    "provider_for",
    "render",
    "stage",
    "submit",
    "validate",
]

if TYPE_CHECKING:  # the cost package loads its price catalogs' code: only the calls that price import it
    from cloudtrain.cost import compare
    from cloudtrain.cost.option import CostOption
    from cloudtrain.cost.throughput import Throughput


def plan(spec: JobSpec | str | os.PathLike[str], provider: str | Provider | None = None) -> Plan:
    """Resolve the job for a provider: machine, replicas, batch, learning rate, strategy, paths.

    Args:
        spec: a JobSpec, or the path of a job.yaml (its code is checked, as ``cloudtrain plan`` does).
        provider: a provider name (default ``spec.provider``) or a configured provider.

    Raises:
        SpecError: one message per problem that stops the job from running on the provider.

    Example:
    >>> spec = JobSpec(name="demo", code={"module": "trainer.task"}, resources={"per_host": 2})
    >>> plan(spec, "local").replicas
    2
    """
    spec = _spec_of(spec)
    if provider is None or isinstance(provider, str):
        # By name, not through ``provider.plan``: a provider's own plan() may call cloudtrain.plan.
        return planning.plan(spec, registry.get(provider or spec.provider))
    return provider.plan(spec)


def estimate(
    spec: JobSpec | str | os.PathLike[str], *, throughput: str | Throughput, **scope: Unpack[compare.Scope]
) -> list[CostOption]:
    """Every provider and shape the job fits, priced, cheapest first (``cloudtrain.cost.estimate``).

    Args:
        spec: a JobSpec, or the path of a job.yaml (its code is checked, as ``cloudtrain cost`` does).
        throughput: ``"RATE@ACCELERATOR"``, a throughput JSON path, or a ``Throughput``.
        **scope: ``providers``, ``regions`` and ``settings`` (``cloudtrain.cost.compare.Scope``).

    Raises:
        SpecError: the work cannot be derived, or an input is malformed.

    Example:
    >>> spec = JobSpec(name="demo", code={"module": "trainer.task"}, training={"examples_per_epoch": 36_000})
    >>> estimate(spec, throughput="10@t4")[0].marks
    ('cheapest', 'pareto')
    """
    from cloudtrain.cost import compare

    return compare.estimate(_spec_of(spec), throughput=throughput, **scope)


def _spec_of(spec: JobSpec | str | os.PathLike[str]) -> JobSpec:
    """A JobSpec as given, or the one at a path, loaded by ``as_spec``.

    Planning and pricing never read the code, so a JobSpec's code is not looked for on
    disk: a job can be planned and priced before its code is written.
    """
    return spec if isinstance(spec, JobSpec) else as_spec(spec)


# The bundle name and run id a request is checked against before the code is packed.
PLACEHOLDER_BUNDLE = "0" * 16 + ".tar.gz"
PLACEHOLDER_RUN = "0" * runs.DIGEST_CHARS


def validate(spec: JobSpec | str | os.PathLike[str], provider: str | Provider | None = None) -> Plan:
    """Every check ``submit`` makes before it contacts anything, without packing the code.

    The spec, the provider's rules, and the limits only its request shows (Vertex's 100
    environment variables and 64 labels, SageMaker's tag, hyperparameter and channel
    limits): the request is rendered against a placeholder bundle name and thrown away.

    Raises:
        SpecError: one message per problem.

    Example:
    >>> validate("examples/binary_classifier/job.yaml", "sagemaker").machine.machine_type  # doctest: +SKIP
    'ml.g4dn.xlarge'
    """
    spec = as_spec(spec)
    target = provider_for(provider, spec)
    planned = target.plan(spec)
    placeholder_request(planned, target)
    return planned


def placeholder_request(planned: Plan, provider: Provider) -> dict[str, Any]:
    """What ``planned`` renders to before its code is packed: the request ``validate`` checks.

    The bundle's name and the run id are placeholders of the same length; a billed job
    carries an estimate, whose labels or tags count towards the provider's limits.

    Raises:
        SpecError: the request would break one of the provider's limits.
    """
    placeholder = planned.with_bundle(f"{planned.storage.code}/{PLACEHOLDER_BUNDLE}").with_run(
        planned.run_id or PLACEHOLDER_RUN
    )
    if provider.billed:
        placeholder = placeholder.with_estimate(ExpectedCost(0.0, WORST_CASE))
    if planned.spec.tuning is not None:
        from cloudtrain.sweep.submit import tuner

        return tuner(provider).render_sweep(placeholder)
    return provider.render(placeholder)


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
    progress: OnProgress | None = None,
    run_id: str | None = None,
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
        progress: called with a ``cloudtrain.Progress`` as the code bundle uploads (from
            several threads, one call at a time); nothing is shown without it.
        run_id: which run of this spec and code (see ``stage``); the same one attaches to
            the job it created, a new one makes a new job. A run that has no backup where
            this job runs, but has one where an earlier attempt ran, continues from it: the
            newest verified backup is copied here first (``cloudtrain.resume``).

    Raises:
        BudgetError: the estimate (or worst case) exceeds ``limits.max_cost_usd`` and ``force``
            is False; or ``strict_budget`` and the price is unknown.
    """
    submission = prepare(spec, provider, run_id=run_id, throughput=throughput)
    if submission.provider.billed:
        from cloudtrain.cost import budget

        check = budget.check_budget(submission.plan, throughput)
        budget.enforce_budget(check, force=force, strict=strict_budget)
    moving = resume.movable(submission) if run_id is not None else None
    if moving is None:
        return submission.submit(clients, progress)
    moved = resume.before_submit(moving, clients=clients, progress=progress)
    job = moving.submit(clients, progress)
    resume.after_submit(moving, job, moved, clients=clients)  # a lineage not written fails nothing
    return job


def attach(job_id: str, provider: str | None = None, *, clients: Any = None) -> Job:
    """Reconnect to a submitted job by the ID ``submit`` printed.

    Raises:
        CloudtrainError: ``job_id`` is empty or blank, or no provider owns it.
    """
    if not job_id.strip():
        raise CloudtrainError(f"No job ID given ({job_id!r}). Pass the ID that submit printed.")
    owner = registry.get(provider) if provider else registry.for_job(job_id)
    return owner.attach(job_id, clients=clients)


def listing_providers(provider: str | None = None) -> tuple[ListsJobs, ...]:
    """The providers that can list cloudtrain's jobs (``ListsJobs``): ``provider`` alone if given."""
    chosen = (registry.get(provider),) if provider else registry.providers()
    return tuple(p for p in chosen if isinstance(p, ListsJobs))


@dataclass(frozen=True)
class JobListing(Sequence[JobSummary]):
    """The jobs found, newest first, and each provider that was not asked or did not answer, with why.

    It is the sequence of its jobs, as the name ``list_jobs`` promises: iterate it, index
    it, take its ``len``; ``.jobs`` is the same as a plain list, ``.skipped`` says who
    was not asked and why.

    Example:
    >>> from datetime import UTC, datetime
    >>> job = JobSummary("local:demo-20260101-120000-0a1b", "demo", "local", "succeeded", datetime.now(UTC))
    >>> listing = JobListing([job], {"vertex": "no project set"})
    >>> [found.name for found in listing], len(listing), listing[0] is job
    (['demo'], 1, True)
    """

    jobs: list[JobSummary]
    skipped: dict[str, str]

    @overload
    def __getitem__(self, index: int) -> JobSummary: ...

    @overload
    def __getitem__(self, index: slice) -> list[JobSummary]: ...

    def __getitem__(self, index: int | slice) -> JobSummary | list[JobSummary]:
        return self.jobs[index]

    def __len__(self) -> int:
        return len(self.jobs)

    def __repr__(self) -> str:
        return f"JobListing({len(self.jobs)} job(s), skipped={sorted(self.skipped)})"


def list_jobs(
    provider: str | None = None, *, limit: int | None = None, settings: JobSpec | None = None
) -> JobListing:
    """The jobs cloudtrain created, on every provider that can list them (or ``provider``), newest first.

    ``settings`` says where to look (project, region; default: the profile and the
    environment, ``specfile.load_settings``). Without ``provider``, one the user has not
    set up (``ListsJobs.configured``) is skipped unasked, and one whose call fails is
    skipped with its error: a missing cloud account never hides the local runs. With
    ``provider``, it is asked whatever, and its errors are raised. ``limit`` caps the
    answer (None: all); each provider is asked for at most as many.

    Raises:
        CloudtrainError: ``provider`` was given and could not list its jobs.
    """
    settings = settings if settings is not None else load_settings(None)[0]
    found: list[JobSummary] = []
    skipped: dict[str, str] = {}
    for owner in listing_providers(provider):
        why = None if provider else owner.configured(settings)
        if why is not None:
            skipped[owner.name] = why
            continue
        try:
            found += owner.list_jobs(settings, limit=limit)
        except CloudtrainError as exc:
            if provider:
                raise
            skipped[owner.name] = str(exc)
    found.sort(key=lambda job: job.created, reverse=True)
    return JobListing(found[:limit], skipped)


def jobs(
    provider: str | None = None, *, limit: int | None = None, settings: JobSpec | None = None
) -> list[JobSummary]:
    """The jobs ``list_jobs`` finds, without the providers it skipped."""
    return list_jobs(provider, limit=limit, settings=settings).jobs
