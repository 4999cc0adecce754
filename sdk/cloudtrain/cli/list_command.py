"""``cloudtrain list``, and finding a job again by what ``list`` shows (its name or short id).

A job ID printed once by ``submit`` is easy to lose; ``list`` shows the jobs cloudtrain
created, newest first, with their run and the cost estimated at submit beside what each
really cost, and the job commands (``status``, ``logs``, ``cancel``, ``wait``) accept the
full ID, the run id (the run's newest job: ``FindsRuns``), the job's name or a unique part
of its short id through ``resolve``. Only providers that can list their jobs
(``ListsJobs``) are searched.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

import click

from cloudtrain import api, cost, run_progress
from cloudtrain.cli import tables
from cloudtrain.cli.options import PROVIDER_CHOICE, json_option, profile_option
from cloudtrain.cost.actual import ActualCost, actual_cost
from cloudtrain.errors import CloudtrainError, JobNotFoundError
from cloudtrain.messages import quote
from cloudtrain.planning import WORST_CASE
from cloudtrain.provider import registry
from cloudtrain.provider.base import JobSummary
from cloudtrain.run_progress import TrainingProgress
from cloudtrain.specfile import load_settings

# Jobs shown without --all: enough for the work in hand, short enough for one screen.
DEFAULT_LIMIT = 20
# Jobs offered by shell completion.
COMPLETION_LIMIT = 50
# The name and the shape drop before the times: a short id starts with the name on the
# providers that name jobs so. The money stays longest after the id, provider and state.
COLUMNS = (
    tables.Column("id"),
    tables.Column("run", priority=4),
    tables.Column("name", priority=5),
    tables.Column("provider"),
    tables.Column("shape", priority=6),
    tables.Column("state"),
    tables.Column("progress", priority=5),
    tables.Column("created", priority=3),
    tables.Column("started", priority=7),
    tables.Column("duration", priority=4, justify="right"),
    tables.Column("estimate", priority=2, justify="right"),
    tables.Column("cost", priority=1, justify="right"),
)
# ``status``: what it knows of the job beyond its state, one field a row.
DETAIL_COLUMNS = (tables.Column(""), tables.Column("", wrap=True))


class JobLookupError(CloudtrainError):
    """What was typed names no job in particular (nothing, or several): a usage error, as ``JobNotFoundError`` is."""

    exit_code = JobNotFoundError.exit_code


@click.command("list")
@click.option("--provider", "-p", type=PROVIDER_CHOICE, default=None, help="Only this provider's jobs.")
@click.option("--all", "show_all", is_flag=True, help=f"Every job, not only the {DEFAULT_LIMIT} newest.")
@profile_option
@json_option
def list_command(provider: str | None, show_all: bool, profile: str | None, as_json: bool) -> None:
    """List the jobs cloudtrain created, newest first: state, times, estimated and actual cost.

    Every provider set up on this machine is asked (Vertex AI: a project from the profile,
    GOOGLE_CLOUD_PROJECT or gcloud; SageMaker: AWS credentials), for the jobs carrying
    cloudtrain's label or tag only. "estimate" is the cost predicted at submit (a worst
    case without --throughput); "cost" what the provider billed, at catalog prices;
    "progress" a running job's epoch, ETA and cost to finish (docs: keep-running.md).

    \b
    Examples:
      cloudtrain list                      the 20 newest jobs, every provider set up here
      cloudtrain list --provider local --all
      cloudtrain list --json | jq '.[] | select(.state == "failed")'
      cloudtrain status demo               a job by its name or a unique part of its id
      cloudtrain status nightly-42         a run's newest job, by the --run-id it was given
    """
    for name in _unlisted(provider):
        click.echo(f"{name}: cannot list its jobs yet; skipped.", err=True)
    settings = load_settings(None, profile=profile, provider=provider)[0]
    listing = api.list_jobs(provider, limit=None if show_all else DEFAULT_LIMIT, settings=settings)
    for name, why in listing.skipped.items():
        click.echo(f"{name}: skipped: {why}", err=True)
    found = [(job, _progress(job)) for job in listing.jobs]
    if as_json:
        click.echo(json.dumps([_json_row(job, training) for job, training in found], indent=2))
    elif found:
        tables.echo(COLUMNS, [_row(job, training) for job, training in found])
    else:
        click.echo("No jobs yet. Submit one with: cloudtrain submit job.yaml", err=True)


def resolve(reference: str, provider: str | None = None) -> str:
    """The full job ID for what a user typed: a full ID, a run id, a job name, or a unique part of a short id.

    A full ID (one a provider owns) is taken as it is. Otherwise a run id names its
    newest job, the run's current attempt (``api.jobs_of_run``); then an exact name or
    short id wins; failing that, a short id that starts or ends with ``reference``. An
    empty or blank reference names no job (every short id starts with ``""``):
    ``cancel "$JOB"`` with ``JOB`` unset must stop nothing.

    Raises:
        JobLookupError: ``reference`` is empty or blank, or more than one job matches it
            (the candidates listed).
        JobNotFoundError: nothing matches.
    """
    if not reference.strip():
        raise JobLookupError(
            f"No job given: the job reference {quote(reference)} is empty. Give its full ID, its name or "
            "part of its id as `cloudtrain list` shows it (is the shell variable you passed set?)."
        )
    if any(p.owns(reference) for p in _candidates(provider)):
        return reference
    run = api.jobs_of_run(reference, provider).jobs
    if run:
        return run[0].id
    known = api.jobs(provider)
    exact = [job for job in known if reference in (job.name, job.short_id)]
    partial = [job for job in known if job.short_id.startswith(reference) or job.short_id.endswith(reference)]
    matches = exact or partial
    if len(matches) == 1:
        return matches[0].id
    if not matches:
        raise JobNotFoundError(
            f"No job or run matches {quote(reference)}: give its full ID, its run id, its name or part of its id "
            "as `cloudtrain list --all` shows it."
        )
    ids = "\n  ".join(job.id for job in matches)
    raise JobLookupError(f"{quote(reference)} matches {len(matches)} jobs; give one of their IDs:\n  {ids}")


def complete_job_ids(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Short ids of recent jobs for shell completion; nothing (never a traceback) if listing fails."""
    try:
        recent = api.jobs(ctx.params.get("provider"), limit=COMPLETION_LIMIT)
    except (CloudtrainError, OSError):
        return []
    return [job.short_id for job in recent if job.short_id.startswith(incomplete)]


def as_dict(job: JobSummary) -> dict[str, Any]:
    """A job for ``--json``: every field, times in ISO 8601 UTC, dollars as numbers.

    ``estimate`` is null where the job carries none; ``cost`` is null until a billed job
    ends (and for a job that is not billed: ``billed`` is false).
    """
    spent = _spent(job)
    return {
        "id": job.id,
        "short_id": job.short_id,
        "name": job.name,
        "run": job.run,
        "provider": job.provider,
        "shape": job.shape or None,
        "state": job.state,
        "created": _iso(job.created),
        "started": _iso(job.started),
        "ended": _iso(job.ended),
        "duration_s": job.duration_s,
        "billed": registry.get(job.provider).billed,
        "estimate": None if job.estimate is None else {"usd": job.estimate.usd, "basis": job.estimate.basis},
        "cost": None if spent is None else _cost_dict(spent),
    }


def details(job: JobSummary) -> list[list[str]]:
    """The rows ``status`` prints under the state line: name, id, shape, times, estimate and cost."""
    spent = _spent(job)
    return [
        ["id", job.id],
        ["run", job.run or "-"],
        ["name", job.name],
        ["shape", job.shape or "-"],
        ["created", _when(job.created)],
        ["started", _when(job.started)],
        ["ended", _when(job.ended)],
        ["duration", _duration(job)],
        ["estimate", _estimate(job, long=True)],
        ["cost", spent.describe() if spent else _unspent(job)],
    ]


def _json_row(job: JobSummary, training: TrainingProgress | None) -> dict[str, Any]:
    """A job for ``--json``, with its progress as ``status --json`` carries it (null: none)."""
    return {**as_dict(job), "progress": training.to_dict() if training else None}


def _row(job: JobSummary, training: TrainingProgress | None) -> list[str]:
    spent = _spent(job)
    return [
        job.short_id,
        job.run or "-",
        job.name,
        job.provider,
        job.shape or "-",
        job.state,
        run_progress.short(training),
        _when(job.created),
        _when(job.started),
        _duration(job),
        _estimate(job),
        _money(spent.usd) if spent else "-",
    ]


def _progress(job: JobSummary) -> TrainingProgress | None:
    """A running job's progress (``cloudtrain.run_progress``), priced by the estimate listed with it; None for
    the others, or where it cannot be read."""
    if job.state != "running":
        return None
    try:
        return run_progress.of_job(api.attach(job.id, job.provider), now=time.time(), summary=job)
    except CloudtrainError:
        return None


def _spent(job: JobSummary) -> ActualCost | None:
    """What the job was charged, priced from the catalog; None until a billed job has ended."""
    return None if job.usage is None else actual_cost(job.provider, job.usage)


def _cost_dict(spent: ActualCost) -> dict[str, Any]:
    return {
        "usd": spent.usd,
        "billed_s": spent.billed_s,
        "hosts": spent.hosts,
        "measure": spent.measure,
        "rate_basis": spent.rate_basis,
        "price_as_of": spent.price.as_of if spent.price else None,
    }


def _estimate(job: JobSummary, *, long: bool = False) -> str:
    """The estimate as dollars; a worst case is marked as the bound it is."""
    if job.estimate is None:
        return "-"
    bound = "≤ " if job.estimate.basis == WORST_CASE else ""
    how = f" ({job.estimate.basis}, at submit)" if long else ""
    return f"{bound}{_money(job.estimate.usd)}{how}"


def _unspent(job: JobSummary) -> str:
    """Why ``status`` shows no cost: nothing is billed here, or the job has not ended."""
    if not registry.get(job.provider).billed:
        return "not billed"
    return "-" if job.ended is None else "unknown (the provider reported no billed time)"


def _money(usd: float | None) -> str:
    return "?" if usd is None else cost.dollars(usd)


def _duration(job: JobSummary) -> str:
    return "-" if job.duration_s is None else cost.duration(job.duration_s)


def _candidates(provider: str | None) -> tuple[Any, ...]:
    return (registry.get(provider),) if provider else registry.providers()


def _unlisted(provider: str | None) -> list[str]:
    listed = {p.name for p in api.listing_providers(provider)}
    return [p.name for p in _candidates(provider) if p.name not in listed]


def _iso(when: datetime | None) -> str | None:
    return None if when is None else when.astimezone(UTC).isoformat()


def _when(when: datetime | None) -> str:
    """A time in the user's local zone, to the second: what a person compares with a clock."""
    return "-" if when is None else when.astimezone().strftime("%Y-%m-%d %H:%M:%S")
