"""``cloudtrain list``, and finding a job again by what ``list`` shows (its name or short id).

A job ID printed once by ``submit`` is easy to lose; ``list`` shows the jobs cloudtrain
created, newest first, and the job commands (``status``, ``logs``, ``cancel``, ``wait``)
accept the full ID, the job's name or a unique part of its short id through ``resolve``.
Only providers that can list their jobs (``ListsJobs``) are searched.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import click

from cloudtrain import api, cost
from cloudtrain.cli import tables
from cloudtrain.cli.options import PROVIDER_CHOICE, json_option
from cloudtrain.errors import CloudtrainError
from cloudtrain.providers import registry
from cloudtrain.providers.base import JobSummary

# Jobs shown without --all: enough for the work in hand, short enough for one screen.
DEFAULT_LIMIT = 20
# Jobs offered by shell completion.
COMPLETION_LIMIT = 50
# The name drops before the times: a short id starts with it on the providers that name jobs so.
COLUMNS = (
    tables.Column("id"),
    tables.Column("name", priority=3),
    tables.Column("provider"),
    tables.Column("state"),
    tables.Column("created", priority=1),
    tables.Column("started", priority=4),
    tables.Column("duration", priority=2, justify="right"),
)
# ``status``: what it knows of the job beyond its state, one field a row.
DETAIL_COLUMNS = (tables.Column(""), tables.Column("", wrap=True))


class JobLookupError(CloudtrainError):
    """What was typed names no job, or more than one: a usage error."""

    exit_code = 2


@click.command("list")
@click.option("--provider", "-p", type=PROVIDER_CHOICE, default=None, help="Only this provider's jobs.")
@click.option("--all", "show_all", is_flag=True, help=f"Every job, not only the {DEFAULT_LIMIT} newest.")
@json_option
def list_command(provider: str | None, show_all: bool, as_json: bool) -> None:
    """List the jobs cloudtrain created, newest first: id, name, provider, state, times.

    \b
    Examples:
      cloudtrain list                      the 20 newest jobs, every provider that can list them
      cloudtrain list --provider local --all
      cloudtrain status demo               a job by its name or a unique part of its id
    """
    for name in _unlisted(provider):
        click.echo(f"{name}: cannot list its jobs yet; skipped.", err=True)
    found = api.jobs(provider, limit=None if show_all else DEFAULT_LIMIT)
    if as_json:
        click.echo(json.dumps([as_dict(job) for job in found], indent=2))
    elif found:
        tables.echo(COLUMNS, [_row(job) for job in found])
    else:
        click.echo("No jobs yet. Submit one with: cloudtrain submit job.yaml", err=True)


def resolve(reference: str, provider: str | None = None) -> str:
    """The full job ID for what a user typed: a full ID, a job name, or a unique part of a short id.

    A full ID (one a provider owns) is taken as it is. Otherwise an exact name or short
    id wins; failing that, a short id that starts or ends with ``reference``.

    Raises:
        JobLookupError: nothing matches, or more than one job does (the candidates listed).
    """
    if any(p.owns(reference) for p in _candidates(provider)):
        return reference
    known = api.jobs(provider)
    exact = [job for job in known if reference in (job.name, job.short_id)]
    partial = [job for job in known if job.short_id.startswith(reference) or job.short_id.endswith(reference)]
    matches = exact or partial
    if len(matches) == 1:
        return matches[0].id
    if not matches:
        raise JobLookupError(
            f"No job matches {reference!r}: give its full ID, its name or part of its id as "
            "`cloudtrain list --all` shows it."
        )
    ids = "\n  ".join(job.id for job in matches)
    raise JobLookupError(f"{reference!r} matches {len(matches)} jobs; give one of their IDs:\n  {ids}")


def complete_job_ids(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Short ids of recent jobs for shell completion; nothing (never a traceback) if listing fails."""
    try:
        recent = api.jobs(ctx.params.get("provider"), limit=COMPLETION_LIMIT)
    except (CloudtrainError, OSError):
        return []
    return [job.short_id for job in recent if job.short_id.startswith(incomplete)]


def as_dict(job: JobSummary) -> dict[str, Any]:
    """A job for ``--json``: every field, times in ISO 8601 UTC."""
    return {
        "id": job.id,
        "short_id": job.short_id,
        "name": job.name,
        "provider": job.provider,
        "state": job.state,
        "created": _iso(job.created),
        "started": _iso(job.started),
        "ended": _iso(job.ended),
        "duration_s": job.duration_s,
    }


def details(job: JobSummary) -> list[list[str]]:
    """The rows ``status`` prints under the state line: the job's name, id and times."""
    return [
        ["id", job.id],
        ["name", job.name],
        ["created", _when(job.created)],
        ["started", _when(job.started)],
        ["ended", _when(job.ended)],
        ["duration", _duration(job)],
    ]


def _row(job: JobSummary) -> list[str]:
    return [
        job.short_id,
        job.name,
        job.provider,
        job.state,
        _when(job.created),
        _when(job.started),
        _duration(job),
    ]


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
