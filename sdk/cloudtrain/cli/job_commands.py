"""``render``, ``submit``, ``status``, ``logs``, ``cancel`` and ``wait``: the job's life cycle."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NoReturn

import click
from pydantic_core import PydanticCustomError

from cloudtrain import api, runs, tracker
from cloudtrain.cli import failure, tables
from cloudtrain.cli.options import (
    PROVIDER_CHOICE,
    json_option,
    local_options,
    run_id_option,
    spec_options,
    throughput_option,
)
from cloudtrain.cli.options import target as local_target
from cloudtrain.cli.spec_commands import describe_outputs, summary
from cloudtrain.errors import CloudtrainError, SpecError
from cloudtrain.provider import Job, JobStatus, registry
from cloudtrain.provider.base import (
    HasConsole,
    HasSummary,
    ReportsBackup,
    RunsHere,
    attached,
)
from cloudtrain.provider.pending import CODE as PENDING_LIMIT
from cloudtrain.provider.pending import wait_to_start
from cloudtrain.provider.sweeps import TRIAL, HasTrials
from cloudtrain.sections import parse_wait
from cloudtrain.specfile import load_spec
from cloudtrain.submission import Submission

if TYPE_CHECKING:
    from cloudtrain import resume
    from cloudtrain.bundle import Bundle
    from cloudtrain.placement.trail import Attempt
    from cloudtrain.spec import JobSpec

# Seconds between status reads while a submitted job waits to start (a local one: every second).
START_POLL_S = 10.0
# The exit status after Ctrl-C: 128 + SIGINT, what a shell reports for a command it interrupted.
INTERRUPTED = 130
# What else ends a follower: a CI job's timeout (SIGTERM), a closed terminal or ssh session (SIGHUP).
STOPPING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


# A job as ``list`` shows it: the full ID, the job name or a unique part of its short id.
def complete_job_ids(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Recent jobs' short ids for shell completion (``list_command``, loaded only when completing)."""
    from cloudtrain.cli import list_command

    return list_command.complete_job_ids(ctx, param, incomplete)


job_argument = click.argument("job_id", shell_complete=complete_job_ids)

provider_option = click.option(
    "--provider",
    "-p",
    type=PROVIDER_CHOICE,
    default=None,
    help="Provider of the job. Default: inferred from the ID.",
)


@click.command("render")
@spec_options
def render_command(job: str, provider: str | None, overrides: tuple[str, ...], profile: str | None) -> None:
    """Print the provider request for JOB as JSON, exactly as submit would send it.

    Vertex: the JSON body of POST .../customJobs. SageMaker: the keyword arguments of
    boto3's create_training_job. Local: the processes and environments it would start.

    \b
    Example:
      cloudtrain render job.yaml --provider vertex > customjob.json
    """
    spec = load_spec(
        job, overrides, profile=profile, check_code=False, provider=provider
    )  # api.render checks it
    click.echo(json.dumps(api.render(spec, provider), indent=2))


@click.command("submit")
@spec_options
@click.option("--dry-run", is_flag=True, help="Print the request and the plan; send nothing.")
@click.option(
    "--list-files",
    is_flag=True,
    help="Print on stderr every file the code bundle ships, and each file it refused and why.",
)
@click.option(
    "--wait/--no-wait",
    "wait_",
    default=None,
    help="Follow logs until the job ends (default for local).",
)
@local_options
@click.option(
    "--no-quota-check",
    is_flag=True,
    help="Placement: try every candidate without reading its quotas first.",
)
@click.option(
    "--max-pending",
    metavar="DURATION",
    default=None,
    help="Cancel the job if it has not started within this long (reason: capacity), e.g. 30m; 0 waits "
    "for ever. Overrides limits.max_pending (default 10m; for ever with capacity flex, plan or queue). "
    "Given, submit follows the job until it starts.",
)
@click.option(
    "--queue",
    metavar="NAME",
    default=None,
    help="Submit through this queue (capacity: queue): the provider's own, e.g. an AWS Batch job queue "
    "or a Kueue LocalQueue.",
)
@click.option(
    "--tracking",
    metavar="URI",
    default=None,
    help="Log the run to this MLflow tracking URI (a server URL, sqlite:///path.db, databricks, a managed "
    "MLflow ARN): turns tracking: on, overriding tracking.uri. See docs/tracking.md.",
)
@run_id_option
@click.option(
    "--new", is_flag=True, help="A new job even if this spec and code ran before (a fresh --run-id)."
)
@throughput_option(required=False)
@click.option(
    "--force",
    is_flag=True,
    help="Submit even when the estimate (or, without --throughput, the worst case) exceeds limits.max_cost_usd.",
)
@click.option(
    "--strict-budget",
    is_flag=True,
    help="Refuse to submit when limits.max_cost_usd is set but the shape's price is unknown.",
)
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="Local runs: keep TensorFlow's start-up lines in the replicas' logs (hidden by default).",
)
@json_option
def submit_command(
    job: str,
    provider: str | None,
    overrides: tuple[str, ...],
    profile: str | None,
    dry_run: bool,
    list_files: bool,
    wait_: bool | None,
    emulate: str | None,
    faults: tuple[str, ...],
    no_quota_check: bool,
    max_pending: str | None,
    queue: str | None,
    tracking: str | None,
    run_id: str | None,
    new: bool,
    throughput: str | None,
    force: bool,
    strict_budget: bool,
    verbose: bool,
    as_json: bool,
) -> None:
    """Submit JOB to a provider (local by default) and print the job ID.

    stdout holds the result alone: the job ID, or with --json one JSON document
    ({"id", "provider", "attached", "outputs"}). Everything else goes to stderr, and so
    do the followed logs of a local run (or --wait) whenever stdout is not a terminal,
    so `ID=$(cloudtrain submit job.yaml)` and `cloudtrain submit job.yaml --json | jq`
    work. With --dry-run, the request JSON on stdout and the plan summary on stderr.

    A billed job is checked against limits.max_cost_usd: with --throughput its
    estimate, without it the worst case (every host for all of limits.max_runtime).

    \b
    Examples:
      cloudtrain submit job.yaml                           run here on the local provider
      cloudtrain submit job.yaml --provider vertex --dry-run
      cloudtrain submit job.yaml --provider vertex --dry-run --list-files   what the bundle ships
      cloudtrain submit job.yaml --provider sagemaker --set resources.spot=true
      cloudtrain submit job.yaml --emulate vertex --fault worker:0@epoch:1
      cloudtrain submit job.yaml --provider vertex --throughput 1200@a100-40gb   budget-checked
      cloudtrain submit job.yaml --provider vertex --run-id 2026-12-03   one job per run id
      cloudtrain submit job.yaml --provider vertex --set resources.capacity=flex --max-pending 6h
      cloudtrain submit job.yaml --provider sagemaker --queue ml-training   an AWS Batch job queue
      cloudtrain submit job.yaml --provider sagemaker --run-id 2026-12-03   continue it on SageMaker
      cloudtrain submit job.yaml --tracking http://127.0.0.1:5000   one MLflow run per cloudtrain run

    A run that has no backup where it is submitted now, but has one where this machine
    saw it before (another provider or region), continues from its newest verified
    backup: it is copied here first, with its bytes and transfer charge shown
    (--dry-run shows them without copying). See docs/resume.md.

    Submitting the same spec and code again attaches to the job it created (safe to
    retry). A scheduled retrain of unchanged code on new data needs --new or a new --run-id.
    """
    overrides = (
        *overrides,
        *capacity_overrides(max_pending=max_pending, queue=queue),
        *tracker.overrides(tracking),
    )
    # api.prepare checks the code
    spec = load_spec(job, overrides, profile=profile, check_code=False, provider=provider)
    if verbose:  # the detached local launcher inherits this process's environment
        from cloudtrain.providers.local.launcher import VERBOSE_ENV

        os.environ[VERBOSE_ENV] = "1"
    if new and run_id:
        raise SpecError("--new makes a fresh run id; give --new or --run-id ID, not both.")
    run_id = runs.fresh() if new else run_id
    placing = emulate == "placement" or (spec.placement is not None and provider is None and emulate is None)
    if placing and not dry_run:
        budget = {"throughput": throughput, "force": force, "strict_budget": strict_budget}
        placed = _place(
            spec,
            emulated=emulate is not None,
            faults=faults,
            run_id=run_id,
            quotas=not no_quota_check,
            **budget,
        )
        return _submitted(placed, wait_=wait_, as_json=as_json, limit_s=spec.max_pending_s)
    if placing:
        spec = _first_candidate(spec)
    target = local_target(provider or spec.provider, emulate=emulate, faults=faults)
    submission = api.prepare(spec, target, run_id=run_id, throughput=throughput)
    for warning in api.warnings_of(submission.plan):
        click.echo(f"Warning: {warning}", err=True)
    if submission.provider.billed:
        from cloudtrain.cli.cost_commands import budget_guard

        budget_guard(submission.plan, throughput, dry_run=dry_run, force=force, strict=strict_budget)
    if dry_run:
        packed = submission.bundle
        click.echo(json.dumps(submission.request, indent=2))
        click.echo(f"Plan: {summary(submission.plan)}", err=True)
        click.echo(f"Code: {describe_bundle(packed)} -> {submission.plan.bundle}", err=True)
        click.echo(describe_outputs(submission.outputs), err=True)
    from cloudtrain import resume

    moving = resume.movable(submission) if run_id is not None else None
    note = planned_move(moving) if dry_run and moving is not None else None
    if note:
        click.echo(note, err=True)
    _print_bundle(submission.bundle, list_files=list_files)
    if dry_run:
        return
    from cloudtrain.cli.progress import UploadBars

    with UploadBars() as progress:
        moved = resume.before_submit(moving, progress=progress) if moving is not None else None
        if moved is not None:
            click.echo(describe_moved(moved), err=True)
        submitted = submission.submit(progress=progress)
    if moving is not None:
        unrecorded = resume.after_submit(moving, submitted, moved)
        if unrecorded:
            click.echo(f"Warning: {unrecorded}", err=True)
    _submitted(
        submitted,
        wait_=wait_,
        as_json=as_json,
        limit_s=spec.max_pending_s,
        until_started=max_pending is not None,
    )


def _submitted(
    submitted: Job, *, wait_: bool | None, as_json: bool, limit_s: int, until_started: bool = False
) -> None:
    """Print what submit made (its ID, or the JSON document), then follow it as asked.

    ``until_started`` (``--max-pending`` given): even without --wait, follow the job until
    it starts, so the limit is kept.
    """
    earlier = attached(submitted)
    if as_json:
        outputs = submitted.outputs.to_dict()
        document = {
            "id": submitted.id,
            "provider": submitted.provider,
            "attached": earlier,
            "outputs": outputs,
        }
        click.echo(json.dumps(document))
    else:
        click.echo(submitted.id)
        click.echo(describe_outputs(submitted.outputs), err=True)
        click.echo(_hints(submitted), err=True)
    if earlier:
        click.echo(_attached_note(submitted), err=True)
    if wait_ if wait_ is not None else submitted.provider == "local":
        _follow(submitted, limit_s=limit_s, logs_to_stderr=as_json or not _terminal(sys.stdout))
        return
    if until_started:
        started = _until_started(submitted, limit_s)
        if started.done and started.state != "succeeded":
            _exit_for(started)
    click.echo(f"Follow it with: cloudtrain logs {submitted.id} --follow", err=True)


def capacity_overrides(*, max_pending: str | None, queue: str | None) -> tuple[str, ...]:
    """``--max-pending`` and ``--queue`` as the spec fields they set (``--set`` overrides).

    Raises:
        SpecError: naming the option, when its value is not one.
    """
    found: list[str] = []
    if max_pending is not None:
        try:
            parse_wait(max_pending)
        except PydanticCustomError as bad:
            raise SpecError(
                f"--max-pending: {max_pending[:40]!r} {bad.message()}, e.g. 30m; 0 waits for ever."
            ) from None
        found.append(f"limits.max_pending={json.dumps(max_pending)}")
    if queue is not None:
        found.append(f"resources.capacity={{mode: queue, name: {json.dumps(queue)}}}")
    return tuple(found)


def _until_started(job: Job, limit_s: int) -> JobStatus:
    """Wait until ``job`` starts (``wait_to_start``), showing each change; exit non-zero if the limit cancelled it."""
    from cloudtrain.cli.live import StatusLine

    try:
        with _signals_interrupt(), StatusLine() as line:
            started = wait_to_start(job, limit_s=limit_s, poll_s=START_POLL_S, on_status=line)
    except KeyboardInterrupt as interrupt:
        _interrupted(job, interrupt)
    _close_tracked(job, started)
    if started.failure is not None and started.failure.code == PENDING_LIMIT:
        _exit_for(started)
    return started


def _place(
    spec: JobSpec, *, emulated: bool, faults: tuple[str, ...], run_id: str | None, quotas: bool, **budget: Any
) -> Job:
    """Start the run on the first candidate of its placement that takes it, printing each attempt.

    Ctrl-C, SIGTERM and SIGHUP while a candidate's job waits to start cancel that job (the
    placement confirms it ended) before the command stops.
    """
    from cloudtrain.cli.progress import UploadBars

    count = len(spec.placement.candidates) if spec.placement else 1
    click.echo(f"Placing the run on the first of {count} candidate(s) that takes it:", err=True)
    with _signals_interrupt(), UploadBars() as progress:
        return api.place(
            spec,
            run_id=run_id,
            emulate=emulated,
            faults=faults,
            check_quotas=quotas,
            on_attempt=lambda attempt: click.echo(f"  {attempt.line()}", err=True),
            progress=progress,
            **budget,
        )


def _first_candidate(spec: JobSpec) -> JobSpec:
    """The spec of the first candidate of its placement: what a dry run shows (the others: ``plan``)."""
    from cloudtrain.placement import resolve

    first = resolve.resolve(spec)[0]
    click.echo(
        f"Placement: the request of {first.where} ({first.label}); every candidate: cloudtrain plan JOB",
        err=True,
    )
    return first.spec


def planned_move(submission: Submission) -> str | None:
    """What a submit of this run would copy here first, and its charge (``resume.move_note``)."""
    from cloudtrain import resume

    assert submission.plan.run_id is not None  # prepare names every run
    return resume.move_note(submission.plan.run_id, resume.Location.of(submission.plan, submission.provider))


def describe_moved(moved: resume.Moved) -> str:
    """What a submit copied before the job started: the backup, the bytes, the time, the charge."""
    copied = moved.copied
    passed = f" (passed over {'; '.join(copied.passed)})" if copied.passed else ""
    resumed = f", {copied.size - copied.sent:,} of them already there" if copied.sent < copied.size else ""
    return (
        f"Copied the run's backup {copied.manifest.slot} (epoch {copied.manifest.epoch}, step "
        f"{copied.manifest.step}){passed}: {copied.size:,} bytes{resumed} from {moved.source.describe()} to "
        f"{moved.destination.describe()} in {copied.seconds:.1f} s; estimated transfer charge ${moved.usd:.2f} "
        f"at {moved.egress.describe()}. The job continues after epoch {copied.manifest.epoch}."
    )


def _terminal(stream: object) -> bool:
    """Whether ``stream`` is a terminal: a pipe or a file gets the result alone."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _attached_note(job: Job) -> str:
    """What a submit that found its job already made says: which job, and how to start anew.

    No status call: on a cloud it would be one more API call for what ``status`` tells.
    """
    return (
        f"Attached to {job.id}, which an earlier submit of this spec, code and run id started; "
        "nothing new was started. A followed log starts from its beginning. "
        "For a new run: --new, or another --run-id."
    )


@click.command()
@job_argument
@provider_option
@json_option
def status(job_id: str, provider: str | None, as_json: bool) -> None:
    """Print the state of JOB_ID (succeeded, failed, running, ...) and the provider's detail.

    A running job whose chief has recorded its progress shows it next: epoch and step,
    examples/s, the last loss, the ETA from the recent rate and, where priced, the cost
    to finish (docs: keep-running.md). Below it: the shape, the times, the cost estimated at submit and, once a billed job
    has ended, what it cost (SageMaker: BillableTimeInSeconds × instances; Vertex AI:
    start to end × replicas, in 30-second increments; both at the catalog's prices).
    A failed job's failing replica's last lines follow: its traceback and error. A run
    submitted with --run-id shows its lineage: every attempt's provider, region and shape,
    and the backup each started from (docs: resume.md). A job submitted here with tracking:
    that has ended closes its MLflow run: its cost and final status, once (docs: tracking.md).
    """
    from cloudtrain import run_progress
    from cloudtrain.cli import trials_table
    from cloudtrain.cli.list_command import DETAIL_COLUMNS, as_dict, details
    from cloudtrain.cli.live import waiting

    job = _attach(job_id, provider)
    current = job.status()
    _close_tracked(job, current)
    described = job.summary() if isinstance(job, HasSummary) else None
    running = current.state == "running"
    training = run_progress.of_job(job, now=time.time(), summary=described) if running else None
    kept = job.kept_backup() if current.done and isinstance(job, ReportsBackup) else None
    found = failure.failure_lines(job) if current.state == "failed" else None
    sweep = job if isinstance(job, HasTrials) else None
    placed = _placement(described.run if described else None)
    from cloudtrain import resume

    lineage = resume.lineage(described.run) if described and described.run else None
    if as_json:
        times = as_dict(described) if described else {}
        backup = {"backup_kept": asdict(kept) if kept else None}
        trials = trials_table.as_json(sweep) if sweep is not None else {}
        progress = {"progress": training.to_dict() if training else None}
        shown = {
            **times,
            "id": job.id,
            **current.to_dict(),
            **progress,
            **backup,
            **trials,
            "lineage": lineage,
        }
        attempts = {"placement": [asdict(attempt) for attempt in placed]} if placed else {}
        click.echo(json.dumps({**shown, **attempts, **_last(found)}))
        return
    click.echo(f"{current.state} ({current.provider_state}){': ' + current.detail if current.detail else ''}")
    if current.waiting and current.pending_reason:
        click.echo(f"pending: {waiting(current)}")
    if training:
        click.echo(f"progress: {run_progress.describe(training)}")
    if current.failure is not None:
        click.echo(f"why: {current.failure.reason.explained} ({current.failure.code or 'no code'})")
    if described:
        tables.echo(DETAIL_COLUMNS, details(described))
    if kept:
        why = (
            "kept: a retry of the run resumes from it"
            if current.state != "succeeded"
            else "kept after success"
        )
        click.echo(
            f"Backup {why}: {kept.megabytes} MB in {kept.files} files at {kept.uri}. Delete: {kept.delete}"
        )
    if lineage:
        click.echo("\n".join(resume.describe_lineage(lineage)))
    if sweep is not None:
        trials_table.echo(sweep)
    if placed:
        click.echo(
            "\n".join(["Placement of the run, attempt by attempt:", *(f"  {a.line()}" for a in placed)])
        )
    if found is not None:
        click.echo("\n".join(["", *failure.describe(found, job.id)]))
    if isinstance(job, HasConsole):
        click.echo(f"Console: {job.console_url}", err=True)


def _placement(run_id: str | None) -> list[Attempt]:
    """The attempts of the placement of run ``run_id``, as recorded on this machine; none for a run not placed."""
    if run_id is None:
        return []
    from cloudtrain.placement.trail import Trail

    return Trail.of_run(run_id).attempts


def _last(found: failure.LastLines | str | None) -> dict[str, object]:
    """A failed job's ``failed_replica`` and ``last_lines`` for ``status --json``; nothing otherwise."""
    if found is None:
        return {}
    if isinstance(found, str):
        return {"failed_replica": None, "last_lines": [], "last_lines_error": found}
    return {"failed_replica": found.replica, "last_lines": found.lines}


def _hints(job: Job) -> str:
    """Where to watch the job: its console page (where the provider has one) and TensorBoard.

    A sweep's TensorBoard is the folder every trial writes its logs under, one run each.
    """
    console = [f"Console: {job.console_url}"] if isinstance(job, HasConsole) else []
    logdir = job.outputs.tensorboard
    if TRIAL in logdir:
        logdir = f"{logdir.split(TRIAL)[0].rstrip('/')}   # every trial's logs, a TensorBoard run each"
    return "\n".join([*console, f"TensorBoard: tensorboard --logdir {logdir}"])


def _attach(job_id: str, provider: str | None) -> Job:
    """The job that ``job_id`` names, as ``list`` shows it (``resolve``)."""
    from cloudtrain.cli.list_command import resolve

    return api.attach(resolve(job_id, provider), provider)


@click.command()
@job_argument
@provider_option
@click.option("--follow", "-f", is_flag=True, help="Keep streaming until the job ends.")
@click.option(
    "--since",
    metavar="DURATION|TIME",
    default=None,
    help="Only lines written since then: a duration back from now (10m, 2h, 1d) or an ISO 8601 time.",
)
@click.option(
    "--tail", metavar="N", default=None, help="Only the last N lines; with --follow, then what is new."
)
def logs(job_id: str, provider: str | None, follow: bool, since: str | None, tail: str | None) -> None:
    """Print the logs of JOB_ID, one line per entry, prefixed by replica ([chief-0], [worker-1], ...).

    \b
    Examples:
      cloudtrain logs ID --since 10m              the last ten minutes
      cloudtrain logs ID --since 2026-12-03T14:00:00Z
      cloudtrain logs ID --tail 20 --follow       the last 20 lines, then each new one
    """
    from cloudtrain.cli.since import parse_since, parse_tail

    start = parse_since(since, now=datetime.now(UTC)) if since is not None else None
    count = parse_tail(tail) if tail is not None else None
    job = _attach(job_id, provider)
    try:
        for line in job.logs(follow=follow, since=start, tail=count):
            click.echo(line)
    except KeyboardInterrupt:
        if not follow:
            raise
        _stopped_following(job)


@click.command()
@job_argument
@provider_option
def cancel(job_id: str, provider: str | None) -> None:
    """Cancel (Vertex) or stop (SageMaker, local) JOB_ID; a job that has ended is left as it ended.

    A job on this machine is stopped before this returns, so the line says how it ended;
    a cloud job moves through its provider's cancelling state, which `cloudtrain status` shows.
    """
    job = _attach(job_id, provider)
    before = _status_if_known(job)
    if before is not None and before.done:
        if isinstance(job, RunsHere):  # a run here may have ended with its launcher killed: tidy its folder
            job.cancel()
        click.echo(f"{job.id} already finished: {_state(before)} Nothing to cancel.", err=True)
        return
    job.cancel()
    after = _status_if_known(job) if isinstance(job, RunsHere) else None
    if after is None or not after.done:
        click.echo(f"Cancellation requested for {job.id}", err=True)
    elif after.state == "cancelled":
        click.echo(f"Cancelled {job.id}.", err=True)
    else:
        click.echo(f"{job.id} ended before the cancel took effect: {_state(after)}", err=True)


def _status_if_known(job: Job) -> JobStatus | None:
    """The job's state, or None when its records cannot be read (a cancel goes ahead without it)."""
    try:
        return job.status()
    except CloudtrainError:
        return None


def _state(status: JobStatus) -> str:
    """``succeeded (SUCCEEDED): detail.``, as ``status`` words it, as one sentence."""
    said = f"{status.state} ({status.provider_state}){': ' + status.detail if status.detail else ''}"
    return said if said.endswith(".") else f"{said}."


@click.command()
@job_argument
@provider_option
@click.option("--poll", default=30.0, show_default=True, help="Seconds between status checks.")
def wait(job_id: str, provider: str | None, poll: float) -> None:
    """Block until JOB_ID ends; exit 0 if it succeeded, 1 otherwise.

    Each change of state is one line on stderr; on a terminal a live line below it
    shows the provider's state and how long the job has been in it. A failed job's
    failing replica's last lines (its traceback and error) follow on stderr. A job
    submitted here with tracking: closes its MLflow run as it ends: its cost and final
    status (docs: tracking.md).
    """
    from cloudtrain.cli.live import StatusLine

    job = _attach(job_id, provider)
    try:
        with StatusLine() as line:
            final = job.wait(poll_s=poll, on_status=line)
    except KeyboardInterrupt:
        _stopped_following(job)
    _close_tracked(job, final)
    if final.state == "failed":
        click.echo("\n".join(failure.describe(failure.failure_lines(job), job.id)), err=True)
    _exit_for(final)


def _close_tracked(job: Job, seen: JobStatus) -> None:
    """A job seen ended closes its run's MLflow run, where the run is tracked (``cloudtrain.tracking.closing``)."""
    if seen.done:
        from cloudtrain.tracking import closing

        closing.close(job, seen, say=_say)


def describe_bundle(packed: Bundle) -> str:
    """``3f2a….tar.gz, 91.1 kB: 3 files of yours (5.2 kB), and cloudtrain's runtime (38 files)``.

    The user's files and cloudtrain's runtime (shipped for ``image: auto``) are counted
    apart, so the size of a two-file project does not read as 41 files of its own.
    """
    from cloudtrain.bundle import is_runtime, size_text

    mine = [size for name, size in packed.contents if not is_runtime(name)]
    runtime = len(packed.contents) - len(mine)
    yours = f"{len(mine)} file{'s' * (len(mine) != 1)} of yours ({size_text(sum(mine))})"
    shipped = f"{yours}, and cloudtrain's runtime ({runtime} files)" if runtime else yours
    return f"{packed.name}, {size_text(packed.size)}: {shipped}"


def _print_bundle(packed: Bundle, *, list_files: bool) -> None:
    """On stderr: the files shipped (with --list-files), those refused and why, and any advice."""
    if list_files:
        click.echo(f"Ships in {packed.name}:", err=True)
        for name, size in packed.contents:
            click.echo(f"  {name} ({size} bytes)", err=True)
    for refused in packed.refused:
        click.echo(f"Refused: {refused.path} ({refused.reason})", err=True)
    for note in packed.notes:
        click.echo(f"Note: {note}", err=True)


def _follow(job: Job, *, limit_s: int, logs_to_stderr: bool) -> None:
    """Show the job's state until it starts (it may queue for minutes), then stream its logs.

    A job that has not started within ``limit_s`` (``limits.max_pending``; 0: no limit)
    is cancelled, and submit fails with the reason ``capacity`` (``wait_to_start``).
    ``logs_to_stderr``: the log is progress, not the result, when stdout is a pipe, a file
    or a JSON document. A sweep's logs are its trial events; once it ends, its trials table
    and best trial follow. Ctrl-C, SIGTERM (a CI timeout) and SIGHUP (a closed terminal)
    stop a job that runs on this machine, as they would a script (``_stop``); a job
    elsewhere keeps running (``_stopped_following``). ``submit --no-wait`` leaves a local
    job running on its own.
    """
    from cloudtrain.cli import trials_table

    _until_started(job, limit_s)
    try:
        with _signals_interrupt():
            for log_line in job.logs(follow=True):
                click.echo(log_line, err=logs_to_stderr)
            final = job.wait(poll_s=1.0)
    except KeyboardInterrupt as interrupt:
        _interrupted(job, interrupt)
    _close_tracked(job, final)
    if isinstance(job, HasTrials):
        trials_table.echo(job, err=logs_to_stderr)
    _exit_for(final)


def _interrupted(job: Job, interrupt: KeyboardInterrupt) -> NoReturn:
    """Ctrl-C, SIGTERM or SIGHUP while following: stop a job on this machine, leave one elsewhere running."""
    code = _exit_status(interrupt)
    with _signals_interrupt():
        if isinstance(job, RunsHere):
            _stop(job, code)
        _stopped_following(job, code)


class Signalled(KeyboardInterrupt):
    """SIGTERM or SIGHUP to a follower, raised where Ctrl-C's KeyboardInterrupt would be."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def _signals_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP interrupt as Ctrl-C does (``Signalled``); then as before."""

    def interrupt(signum: int, frame: object) -> None:
        raise Signalled(signum)

    previous = {signum: signal.signal(signum, interrupt) for signum in STOPPING_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _exit_status(interrupt: KeyboardInterrupt) -> int:
    """128 + the signal, as a shell reports a command it stopped: 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP."""
    return 128 + interrupt.signum if isinstance(interrupt, Signalled) else INTERRUPTED


def _say(line: str) -> None:
    """One line on stderr, if it can still be written: after SIGHUP the terminal may be gone."""
    with contextlib.suppress(OSError):
        click.echo(line, err=True)


def _stop(job: Job, code: int = INTERRUPTED) -> NoReturn:
    """After Ctrl-C (or SIGTERM, SIGHUP): cancel the job, say how it ended, exit ``code``.

    A second interrupt leaves it stopping on its own.
    """
    _say(f"Interrupted: stopping {job.id} (Ctrl-C again to leave it stopping on its own)...")
    try:
        job.cancel()
        final = job.status()
    except KeyboardInterrupt:
        _say(f"{job.id} is stopping on its own. Check it with: cloudtrain status {job.id}")
        raise click.exceptions.Exit(code) from None
    _say(f"Stopped {job.id}: {_state(final)}")
    raise click.exceptions.Exit(code)


def _stopped_following(job: Job, code: int = INTERRUPTED) -> NoReturn:
    """After Ctrl-C on a follower: one line saying the job still runs, and how to stop it; exit ``code``."""
    where = "on this machine" if isinstance(job, RunsHere) else f"on {registry.get(job.provider).title}"
    _say(f"Stopped following {job.id}; it still runs {where}. Stop it with: cloudtrain cancel {job.id}")
    raise click.exceptions.Exit(code)


def _exit_for(final: JobStatus) -> None:
    if final.state != "succeeded":
        why = (
            f" Why: {final.failure}"
            if final.failure is not None and final.failure.code == PENDING_LIMIT
            else ""
        )
        raise CloudtrainError(
            f"Job ended {final.state} ({final.provider_state}). {final.detail}".rstrip() + why
        )
    sys.stdout.flush()
