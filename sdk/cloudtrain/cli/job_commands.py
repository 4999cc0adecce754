"""``render``, ``submit``, ``status``, ``logs``, ``cancel`` and ``wait``: the job's life cycle."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, NoReturn

import click

from cloudtrain import api, resume, runs
from cloudtrain.cli import failure, tables, trials_table
from cloudtrain.cli.cost_commands import budget_guard, throughput_option
from cloudtrain.cli.list_command import DETAIL_COLUMNS, as_dict, complete_job_ids, details, resolve
from cloudtrain.cli.live import StatusLine
from cloudtrain.cli.options import PROVIDER_CHOICE, RegistryChoice, json_option, run_id_option, spec_options
from cloudtrain.cli.progress import UploadBars
from cloudtrain.cli.since import parse_since, parse_tail
from cloudtrain.cli.spec_commands import describe_outputs, summary
from cloudtrain.errors import CloudtrainError, SpecError
from cloudtrain.provider import Job, JobStatus, Provider, registry
from cloudtrain.provider.base import (
    WAITING_STATES,
    HasConsole,
    HasSummary,
    ReportsBackup,
    RunsHere,
    attached,
)
from cloudtrain.provider.sweeps import HasTrials
from cloudtrain.specfile import load_spec
from cloudtrain.submission import Submission

if TYPE_CHECKING:
    from cloudtrain.bundle import Bundle

# Seconds between status reads while a submitted job waits to start (a local one: every second).
START_POLL_S = 10.0
# The exit status after Ctrl-C: 128 + SIGINT, what a shell reports for a command it interrupted.
INTERRUPTED = 130

# A job as ``list`` shows it: the full ID, the job name or a unique part of its short id.
job_argument = click.argument("job_id", shell_complete=complete_job_ids)

provider_option = click.option(
    "--provider",
    "-p",
    type=PROVIDER_CHOICE,
    default=None,
    help="Provider of the job. Default: inferred from the ID.",
)


def _target(name: str, *, emulate: str | None, fault: str | None) -> str | Provider:
    """The provider to submit to: a name, or the local provider configured with --emulate/--fault."""
    if not (emulate or fault):
        return name
    from cloudtrain.providers import local

    local.check_options(name, emulate=emulate, fault=fault)
    return local.Local(emulate=emulate, fault=fault)


def emulable() -> tuple[str, ...]:
    """The providers ``--emulate`` accepts, asked of the local provider when first needed."""
    from cloudtrain.providers.local.emulate import emulable as names

    return names()


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
    spec = load_spec(job, overrides, profile=profile, check_code=False)  # api.render checks the code
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
@click.option(
    "--emulate",
    type=RegistryChoice(emulable),
    default=None,
    help="With --provider local: render that provider's request and run it here, as it would.",
)
@click.option(
    "--fault",
    metavar="TASK:INDEX@epoch:N",
    default=None,
    help="With --provider local: that replica kills itself once, e.g. worker:0@epoch:1 (tests restarts); "
    "spot@epoch:N reclaims every replica; stop@epoch:N loses the region: no restart, resume elsewhere with --run-id.",
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
    fault: str | None,
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
      cloudtrain submit job.yaml --provider sagemaker --run-id 2026-12-03   continue it on SageMaker

    A run that has no backup where it is submitted now, but has one where this machine
    saw it before (another provider or region), continues from its newest verified
    backup: it is copied here first, with its bytes and transfer charge shown
    (--dry-run shows them without copying). See docs/resume.md.

    Submitting the same spec and code again attaches to the job it created (safe to
    retry). A scheduled retrain of unchanged code on new data needs --new or a new --run-id.
    """
    spec = load_spec(job, overrides, profile=profile, check_code=False)  # api.prepare checks the code
    if verbose:  # the detached local launcher inherits this process's environment
        from cloudtrain.providers.local.launcher import VERBOSE_ENV

        os.environ[VERBOSE_ENV] = "1"
    if new and run_id:
        raise SpecError("--new makes a fresh run id; give --new or --run-id ID, not both.")
    target = _target(provider or spec.provider, emulate=emulate, fault=fault)
    submission = api.prepare(spec, target, run_id=runs.fresh() if new else run_id, throughput=throughput)
    if submission.provider.billed:
        budget_guard(submission.plan, throughput, dry_run=dry_run, force=force, strict=strict_budget)
    if dry_run:
        packed = submission.bundle
        click.echo(json.dumps(submission.request, indent=2))
        click.echo(f"Plan: {summary(submission.plan)}", err=True)
        click.echo(f"Code: {describe_bundle(packed)} -> {submission.plan.bundle}", err=True)
        click.echo(describe_outputs(submission.outputs), err=True)
    moving = resume.movable(submission) if run_id is not None else None
    note = planned_move(moving) if dry_run and moving is not None else None
    if note:
        click.echo(note, err=True)
    _print_bundle(submission.bundle, list_files=list_files)
    if dry_run:
        return
    with UploadBars() as progress:
        moved = resume.before_submit(moving, progress=progress) if moving is not None else None
        if moved is not None:
            click.echo(describe_moved(moved), err=True)
        submitted = submission.submit(progress=progress)
    if moving is not None:
        unrecorded = resume.after_submit(moving, submitted, moved)
        if unrecorded:
            click.echo(f"Warning: {unrecorded}", err=True)
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
        _follow(submitted, logs_to_stderr=as_json or not _terminal(sys.stdout))
    else:
        click.echo(f"Follow it with: cloudtrain logs {submitted.id} --follow", err=True)


def planned_move(submission: Submission) -> str | None:
    """What a submit of this run would copy here first, and its charge (``resume.move_note``)."""
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

    Below it: the shape, the times, the cost estimated at submit and, once a billed job
    has ended, what it cost (SageMaker: BillableTimeInSeconds × instances; Vertex AI:
    start to end × replicas, in 30-second increments; both at the catalog's prices).
    A failed job's failing replica's last lines follow: its traceback and error. A run
    submitted with --run-id shows its lineage: every attempt's provider, region and shape,
    and the backup each started from (docs: resume.md).
    """
    job = _attach(job_id, provider)
    current = job.status()
    described = job.summary() if isinstance(job, HasSummary) else None
    kept = job.kept_backup() if current.done and isinstance(job, ReportsBackup) else None
    found = failure.failure_lines(job) if current.state == "failed" else None
    sweep = job if isinstance(job, HasTrials) else None
    lineage = resume.lineage(described.run) if described and described.run else None
    if as_json:
        times = as_dict(described) if described else {}
        backup = {"backup_kept": asdict(kept) if kept else None}
        trials = trials_table.as_json(sweep) if sweep is not None else {}
        shown = {**times, "id": job.id, **current.to_dict(), **backup, **trials, "lineage": lineage}
        click.echo(json.dumps({**shown, **_last(found)}))
        return
    click.echo(f"{current.state} ({current.provider_state}){': ' + current.detail if current.detail else ''}")
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
    if found is not None:
        click.echo("\n".join(["", *failure.describe(found, job.id)]))
    if isinstance(job, HasConsole):
        click.echo(f"Console: {job.console_url}", err=True)


def _last(found: failure.LastLines | str | None) -> dict[str, object]:
    """A failed job's ``failed_replica`` and ``last_lines`` for ``status --json``; nothing otherwise."""
    if found is None:
        return {}
    if isinstance(found, str):
        return {"failed_replica": None, "last_lines": [], "last_lines_error": found}
    return {"failed_replica": found.replica, "last_lines": found.lines}


def _hints(job: Job) -> str:
    """Where to watch the job: its console page (where the provider has one) and TensorBoard."""
    console = [f"Console: {job.console_url}"] if isinstance(job, HasConsole) else []
    return "\n".join([*console, f"TensorBoard: tensorboard --logdir {job.outputs.tensorboard}"])


def _attach(job_id: str, provider: str | None) -> Job:
    """The job that ``job_id`` names, as ``list`` shows it (``resolve``)."""
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
    failing replica's last lines (its traceback and error) follow on stderr.
    """
    job = _attach(job_id, provider)
    try:
        with StatusLine() as line:
            final = job.wait(poll_s=poll, on_status=line)
    except KeyboardInterrupt:
        _stopped_following(job)
    if final.state == "failed":
        click.echo("\n".join(failure.describe(failure.failure_lines(job), job.id)), err=True)
    _exit_for(final)


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


def _follow(job: Job, *, logs_to_stderr: bool) -> None:
    """Show the job's state until it starts (it may queue for minutes), then stream its logs.

    ``logs_to_stderr``: the log is progress, not the result, when stdout is a pipe, a file
    or a JSON document. A sweep's logs are its trial events; once it ends, its trials table
    and best trial follow. Ctrl-C stops a job that runs on this machine, as it would a
    script (``_stop``); a job elsewhere keeps running (``_stopped_following``).
    """
    try:
        with StatusLine() as line:
            job.wait(poll_s=START_POLL_S, on_status=line, until=lambda now: now.state not in WAITING_STATES)
        for log_line in job.logs(follow=True):
            click.echo(log_line, err=logs_to_stderr)
        final = job.wait(poll_s=1.0)
    except KeyboardInterrupt:
        if isinstance(job, RunsHere):
            _stop(job)
        _stopped_following(job)
    if isinstance(job, HasTrials):
        trials_table.echo(job, err=logs_to_stderr)
    _exit_for(final)


def _stop(job: Job) -> NoReturn:
    """After Ctrl-C: cancel the job, say how it ended, exit 130. A second Ctrl-C leaves it stopping alone."""
    click.echo(f"Interrupted: stopping {job.id} (Ctrl-C again to leave it stopping on its own)...", err=True)
    try:
        job.cancel()
        final = job.status()
    except KeyboardInterrupt:
        click.echo(f"{job.id} is stopping on its own. Check it with: cloudtrain status {job.id}", err=True)
        raise click.exceptions.Exit(INTERRUPTED) from None
    click.echo(f"Stopped {job.id}: {_state(final)}", err=True)
    raise click.exceptions.Exit(INTERRUPTED)


def _stopped_following(job: Job) -> NoReturn:
    """After Ctrl-C on a follower: one line saying the job still runs, and how to stop it; exit 130."""
    where = "on this machine" if isinstance(job, RunsHere) else f"on {registry.get(job.provider).title}"
    click.echo(
        f"Stopped following {job.id}; it still runs {where}. Stop it with: cloudtrain cancel {job.id}",
        err=True,
    )
    raise click.exceptions.Exit(INTERRUPTED)


def _exit_for(final: JobStatus) -> None:
    if final.state != "succeeded":
        raise CloudtrainError(f"Job ended {final.state} ({final.provider_state}). {final.detail}".rstrip())
    sys.stdout.flush()
