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
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict, Unpack, overload

from cloudtrain import planning, runs
from cloudtrain.arguments import CALLABLE, COUNT, FLAG, TEXT, TEXTS, expect, instance_of
from cloudtrain.errors import CloudtrainError, SpecError
from cloudtrain.messages import sentence
from cloudtrain.planning import WORST_CASE, ExpectedCost, PicksMachine, Plan
from cloudtrain.progress import OnProgress
from cloudtrain.provider import Job, Provider, registry
from cloudtrain.provider.base import ChecksBeforeSending, FindsRuns, HasSummary, JobSummary, ListsJobs
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
    "Submitting",
    "as_spec",
    "attach",
    "bundle_cache",
    "estimate",
    "in_order",
    "jobs",
    "jobs_of_run",
    "list_jobs",
    "listing_providers",
    "new_run_id",
    "pack_code",
    "place",
    "placeholder_request",
    "plan",
    "prepare",
    "provider_for",
    "quotas",
    "render",
    "stage",
    "submit",
    "validate",
    "warnings_of",
]

if TYPE_CHECKING:  # the cost package loads its price catalogs' code: only the calls that price import it
    from cloudtrain.cost import compare
    from cloudtrain.cost.option import CostOption
    from cloudtrain.cost.throughput import Throughput
    from cloudtrain.placement.preflight import Check
    from cloudtrain.placement.resolve import Resolved
    from cloudtrain.placement.trail import Attempt
    from cloudtrain.run_progress import TrainingProgress


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
    spec = _spec_of(spec, provider)
    target = provider_for(provider, spec)
    if provider is None or isinstance(provider, str):
        # By name, not through ``provider.plan``: a provider's own plan() may call cloudtrain.plan.
        return planning.plan(spec, target)
    return target.plan(spec)


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
    from cloudtrain.cost.inputs import CostSettings

    _expect_throughput(throughput)
    unknown = sorted(set(scope) - set(compare.Scope.__annotations__))
    if unknown:
        raise SpecError(f"estimate() takes no {unknown[0]!r}. Valid: providers, regions, settings.")
    expect(
        providers=(scope.get("providers", ()), TEXTS),
        regions=(scope.get("regions", ()), TEXTS),
        settings=(scope.get("settings"), instance_of(CostSettings, "a cloudtrain.cost.CostSettings") | None),
    )
    return compare.estimate(_spec_of(spec), throughput=throughput, **scope)


def _spec_of(spec: JobSpec | str | os.PathLike[str], provider: str | Provider | None = None) -> JobSpec:
    """A JobSpec as given, or the one at a path, loaded by ``as_spec`` for ``provider``.

    Planning and pricing never read the code, so a JobSpec's code is not looked for on
    disk: a job can be planned and priced before its code is written.
    """
    return spec if isinstance(spec, JobSpec) else as_spec(spec, provider=provider)


def _expect_throughput(throughput: object, *, optional: bool = False) -> None:
    """Refuse a ``throughput`` that is neither ``RATE@ACCELERATOR``, a path nor a ``Throughput``.

    Checked up front: a job that is not billed never reads it, and would take any value silently.
    """
    if isinstance(throughput, str) or (optional and throughput is None):
        return
    from cloudtrain.cost.throughput import Throughput

    kind = TEXT | instance_of(Throughput, "a cloudtrain.cost.Throughput")
    expect(throughput=(throughput, kind | None if optional else kind))


# The bundle name and run id a request is checked against before the code is packed.
PLACEHOLDER_BUNDLE = "0" * 16 + ".tar.gz"
PLACEHOLDER_RUN = "0" * runs.DIGEST_CHARS


def validate(spec: JobSpec | str | os.PathLike[str], provider: str | Provider | None = None) -> Plan:
    """Every check ``submit`` makes before it contacts anything, without packing the code.

    The spec, the provider's rules, and the limits only its request shows (Vertex's 100
    environment variables and 64 labels, SageMaker's tag, hyperparameter and channel
    limits, a local ``fault`` that could never fire): the request is rendered against a
    placeholder bundle name and thrown away. Then what the provider's submit refuses
    before sending (``ChecksBeforeSending``: the local code's requirements). What is
    allowed but unchecked is ``warnings_of(plan)``.

    Raises:
        SpecError: one message per problem.

    Example:
    >>> validate("examples/binary_classifier/job.yaml", "sagemaker").machine.machine_type  # doctest: +SKIP
    'ml.g4dn.xlarge'
    """
    spec = as_spec(spec, provider=provider)
    if spec.placement is not None and provider is None:
        from cloudtrain.placement.resolve import resolve

        candidates = resolve(spec)
        for candidate in candidates:
            placeholder_request(candidate.plan, candidate.plan.target)  # type: ignore[arg-type]
        return candidates[0].plan
    target = provider_for(provider, spec)
    planned = target.plan(spec)
    placeholder_request(planned, target)
    problems = target.preflight(spec) if isinstance(target, ChecksBeforeSending) else []
    if problems:
        raise SpecError(problems)
    return planned


def warnings_of(planned: Plan) -> list[str]:
    """What ``validate`` and ``submit`` say about ``planned`` and go on: what they allow but cannot check.

    A machine a provider's section names (a cluster's node type) that the catalog cannot
    price may be the cluster's own, so it is allowed; but nothing then checks the job's
    cost, so the line names the nearest known type or region and says the budget check is off.

    Example:
    >>> spec = JobSpec(name="demo", code={"module": "t"}, resources={"accelerator": "t4"},
    ...                storage={"root": "gs://my-bucket/demo"}, kubernetes={"node_type": "n1-standrd-8"})
    >>> warnings_of(plan(spec, "kubernetes"))[0].split(" Did")[0]
    "kubernetes: kubernetes.node_type 'n1-standrd-8' is not a node type the catalog prices."
    """
    target = planned.target
    why = target.unpriced(planned.spec) if isinstance(target, PicksMachine) and target.billed else None
    if why is None:
        return []
    off = (
        "the budget check (limits.max_cost_usd) is off for this job; submit --strict-budget refuses it"
        if planned.spec.limits.max_cost_usd is not None
        else "its cost cannot be estimated"
    )
    return [f"{planned.provider}: {sentence(why)} Unpriced, so {off}."]


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
        placeholder = placeholder.with_estimate(ExpectedCost(0.0, WORST_CASE, 0.0))
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
    expect(force=(force, FLAG), strict_budget=(strict_budget, FLAG), progress=(progress, CALLABLE | None))
    _expect_throughput(throughput, optional=True)
    submission = prepare(spec, provider, run_id=run_id, throughput=throughput)
    if submission.provider.billed:
        from cloudtrain.cost import budget

        check = budget.check_budget(submission.plan, throughput)
        budget.enforce_budget(check, force=force, strict=strict_budget)
    from cloudtrain import resume

    moving = resume.movable(submission) if run_id is not None else None
    if moving is None:
        return submission.submit(clients, progress)
    moved = resume.before_submit(moving, clients=clients, progress=progress)
    job = moving.submit(clients, progress)
    resume.after_submit(moving, job, moved, clients=clients)  # a lineage not written fails nothing
    return job


class Submitting(TypedDict, total=False):
    """How each job of a placement is submitted, as ``submit`` takes it; each key is optional."""

    clients: Any
    throughput: str | Throughput | None
    force: bool
    strict_budget: bool
    progress: OnProgress | None


def quotas(
    spec: JobSpec | str | os.PathLike[str], *, dry_run: bool = False, clients: Any = None
) -> list[Check]:
    """What each candidate of the spec's placement (else its own provider) needs of its quotas, and what is left.

    Args:
        spec: a JobSpec, or the path of a job.yaml.
        dry_run: name the quotas and amounts only; read nothing (no credentials needed).
        clients: provider clients to read with (tests, custom transports).

    Example:
    >>> [check.lines() for check in quotas(JobSpec(name="demo", code={"module": "trainer.task"}))]
    [['local: no quota to check']]
    """
    from cloudtrain.placement import preflight, resolve

    candidates = resolve.resolve(_spec_of(spec))
    return [preflight.dry_run(c) if dry_run else preflight.check(c, clients=clients) for c in candidates]


def place(
    spec: JobSpec | str | os.PathLike[str],
    *,
    run_id: str | None = None,
    emulate: bool = False,
    faults: Sequence[str] = (),
    check_quotas: bool = True,
    on_attempt: Callable[[Attempt], None] | None = None,
    **submitting: Unpack[Submitting],
) -> Job:
    """Start the run on the first candidate of the spec's placement that takes it.

    Every candidate is tried as ``submit`` would send it (its budget checked, its code
    uploaded), under one run id; a candidate that fails to start is read in the providers'
    shared words and the next one tried (``cloudtrain.placement.failover``). The run's
    trail of attempts is kept on this machine (``cloudtrain.placement.trail``) and passed to
    ``on_attempt`` as each attempt ends.

    Args:
        spec: a JobSpec with ``placement:``, or the path of one.
        run_id: the run every attempt belongs to; default: a new one. With the run id of a
            placement that was interrupted, the job it left live is attached, not doubled.
        emulate: run each candidate here, as its provider would (``--emulate placement``).
        faults: with ``emulate``, ``capacity@PROVIDER:REGION`` and ``quota@PROVIDER:REGION``
            refusals, and at most one replica fault for whichever candidate runs.
        check_quotas: read each candidate's quotas first and skip one that is short.
        on_attempt: called with each attempt as it is recorded.
        **submitting: ``clients``, ``throughput``, ``force``, ``strict_budget`` and
            ``progress``, as ``submit`` takes them.

    Raises:
        PlacementFailed: no candidate started the run; its ``trail`` says why each did not.
        SpecError: a candidate cannot run the job, or a fault names no candidate.
    """
    from cloudtrain.placement import emulation, preflight, resolve
    from cloudtrain.placement.failover import Failover
    from cloudtrain.placement.trail import Trail

    spec = as_spec(spec)
    candidates = resolve.resolve(spec)
    refusals, replica_faults = emulation.split_faults(faults)
    if (refusals or replica_faults) and not emulate:
        raise SpecError("--fault runs on this machine: give it with --provider local --emulate placement.")
    emulation.check_refusals(refusals, candidates)
    chosen = run_id or runs.fresh()
    order = in_order(spec, candidates)

    def submit_one(candidate: resolve.Resolved) -> Job:
        target: str | Provider = candidate.plan.provider
        if emulate:
            where = (candidate.plan.provider, candidate.plan.region)
            target = _local(candidate.plan.provider, replica_faults, refusals.get(where))
        return submit(candidate.spec, target, run_id=chosen, **submitting)

    def check(candidate: resolve.Resolved) -> preflight.Check:
        if emulate:
            return emulation.emulated_check(candidate, refusals)
        return preflight.check(candidate, clients=submitting.get("clients"))

    return Failover(
        candidates=order,
        submit=submit_one,
        attach=lambda job_id, provider: attach(job_id, "local" if emulate else provider),
        trail=Trail.of_run(chosen),
        preflight=check if check_quotas else None,
        max_pending_s=spec.max_pending_s,
        on_attempt=on_attempt or (lambda attempt: None),
    ).run()


def in_order(spec: JobSpec, candidates: list[Resolved]) -> list[Resolved]:
    """The candidates as listed, or (``order: cheapest``) by their estimated cost, unpriced last."""
    if spec.placement is None or spec.placement.order == "listed":
        return candidates
    from cloudtrain.cost import budget

    def cost(candidate: Resolved) -> float:
        if not candidate.plan.target.billed:
            return 0.0
        worst = budget.worst_case(candidate.plan).usd
        return float("inf") if worst is None else worst

    return sorted(candidates, key=cost)


def _local(emulated: str, faults: tuple[str, ...], refuse: str | None) -> Provider:
    """The local provider emulating ``emulated``, with at most one replica fault and a refusal."""
    from cloudtrain.providers.local import Local

    if len(faults) > 1:
        raise SpecError(f"--fault: one replica fault at a time; got {', '.join(faults)}.")
    return Local(emulate=emulated, fault=faults[0] if faults else None, refuse=refuse)


def attach(job_id: str, provider: str | None = None, *, clients: Any = None) -> Job:
    """Reconnect to a submitted job by the ID ``submit`` printed.

    Raises:
        CloudtrainError: ``job_id`` is empty or blank, or no provider owns it.
    """
    expect(job_id=(job_id, TEXT), provider=(provider, TEXT | None))
    if not job_id.strip():
        raise CloudtrainError(f"No job ID given ({job_id!r}). Pass the ID that submit printed.")
    owner = registry.get(provider) if provider else registry.for_job(job_id)
    return owner.attach(job_id, clients=clients)


def training_progress(
    job_id: str, provider: str | None = None, *, clients: Any = None
) -> TrainingProgress | None:
    """Where job ``job_id``'s training is now, its ETA and (where priced) the cost to finish.

    None until the chief has written its first progress record, or where the job's
    provider cannot read it back while the job runs (``cloudtrain.run_progress``). The
    cost to finish is the time left at the hourly price stored with the job at submit;
    a local job is not billed (``billed`` False, no cost).

    Raises:
        CloudtrainError: ``job_id`` is empty or blank, or no provider owns it.
    """
    from cloudtrain import run_progress

    job = attach(job_id, provider, clients=clients)
    summary = job.summary() if isinstance(job, HasSummary) else None
    return run_progress.of_job(job, now=time.time(), summary=summary)


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
    expect(
        provider=(provider, TEXT | None),
        limit=(limit, COUNT | None),
        settings=(settings, instance_of(JobSpec, "a cloudtrain.JobSpec") | None),
    )
    listing = _ask(
        listing_providers(provider),
        settings,
        lambda owner, where: owner.list_jobs(where, limit=limit),
        provider,
    )
    return JobListing(listing.jobs[:limit], listing.skipped)


def jobs_of_run(run_id: str, provider: str | None = None, *, settings: JobSpec | None = None) -> JobListing:
    """The jobs of run ``run_id`` (its attempts), on every provider that can find runs (or ``provider``), newest first.

    The providers are asked as ``list_jobs`` asks them (``FindsRuns``); the newest job is
    the run's current attempt. A ``run_id`` that is not a run id finds nothing, unasked.

    Raises:
        CloudtrainError: ``provider`` was given and could not be asked.

    Example:
    >>> jobs_of_run("not a run id").jobs
    []
    """
    if not runs.RUN_ID.fullmatch(run_id):
        return JobListing([], {})
    chosen = (registry.get(provider),) if provider else registry.providers()
    finders = tuple(p for p in chosen if isinstance(p, FindsRuns))
    return _ask(finders, settings, lambda owner, where: owner.jobs_of_run(run_id, where), provider)


def _ask(
    owners: Sequence[ListsJobs],
    settings: JobSpec | None,
    call: Callable[[Any, JobSpec], list[JobSummary]],
    provider: str | None,
) -> JobListing:
    """``call`` on each of ``owners`` set up here (all of them if ``provider`` names one), newest first.

    One the user has not set up is skipped unasked, and one whose call fails is skipped
    with its error, unless ``provider`` named it: a missing cloud account never hides the
    local runs.
    """
    settings = settings if settings is not None else load_settings(None, provider=provider)[0]
    found: list[JobSummary] = []
    skipped: dict[str, str] = {}
    for owner in owners:
        why = None if provider else owner.configured(settings)
        if why is not None:
            skipped[owner.name] = why
            continue
        try:
            found += call(owner, settings)
        except CloudtrainError as exc:
            if provider:
                raise
            skipped[owner.name] = str(exc)
    found.sort(key=lambda job: job.created, reverse=True)
    return JobListing(found, skipped)


def jobs(
    provider: str | None = None, *, limit: int | None = None, settings: JobSpec | None = None
) -> list[JobSummary]:
    """The jobs ``list_jobs`` finds, without the providers it skipped."""
    return list_jobs(provider, limit=limit, settings=settings).jobs
