"""``cache`` and ``cache clean``: what cloudtrain keeps on this machine, and removing what can go."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import click

from cloudtrain.bundle import size_text
from cloudtrain.cli import tables
from cloudtrain.cli.options import json_option
from cloudtrain.cli.since import parse_age

COLUMNS = (
    tables.Column("part"),
    tables.Column("size", justify="right"),
    tables.Column("holds", justify="right"),
    tables.Column("where", priority=1, wrap=True),
)


@click.group("cache", invoke_without_command=True)
@json_option
@click.pass_context
def cache_group(ctx: click.Context, as_json: bool) -> None:
    """Show what cloudtrain keeps on this machine: code bundles, local runs, stand-in buckets.

    Every submit packs the code into a bundle under ~/.cache/cloudtrain/bundles, and
    nothing removes old ones; local runs keep a folder each. `cloudtrain cache clean`
    removes what can go.

    \b
    Examples:
      cloudtrain cache
      cloudtrain cache clean --older-than 7d
    """
    if ctx.invoked_subcommand is not None:
        return
    from cloudtrain import cache

    parts = cache.usage()
    if as_json:
        click.echo(json.dumps([part.to_dict() for part in parts], indent=2))
        return
    rows = [(part.name, size_text(part.size), f"{part.items} {part.unit}", str(part.path)) for part in parts]
    tables.echo(COLUMNS, rows)
    click.echo(f"\nIn all {size_text(sum(part.size for part in parts))}. Free it: cloudtrain cache clean")


@cache_group.command("clean")
@click.option(
    "--older-than",
    metavar="DURATION",
    default=None,
    help="Only what was last written longer ago than this, e.g. 7d or 12h. Default: whatever can go.",
)
@click.option(
    "--buckets",
    is_flag=True,
    help="Also the stand-in buckets of emulated runs (--emulate): their models, backups and results.",
)
@click.option("--dry-run", is_flag=True, help="Say what would be removed; remove nothing.")
@json_option
def clean_command(older_than: str | None, buckets: bool, dry_run: bool, as_json: bool) -> None:
    """Remove code bundles and the folders of local runs that have ended.

    A run still queued or running keeps its folder, and a bundle written in the last
    minute stays (a submit may be uploading it). Submit packs again whatever it needs.
    The stand-in buckets of emulated clouds hold their models and results: only with
    --buckets. A symbolic link is removed as a link, never followed: what it points to
    stays, and a cache folder that is itself a link (runs/) is kept, with why.
    """
    from cloudtrain import cache

    # "" (an unset $AGE) is no duration, never "no cutoff"
    cutoff = None if older_than is None else datetime.now(UTC) - parse_age(older_than, option="--older-than")
    cleaned = cache.clean(older_than=cutoff, buckets=buckets, dry_run=dry_run)
    if as_json:
        click.echo(json.dumps({"dry_run": dry_run, **cleaned.to_dict()}, indent=2))
        return
    verb = "Would remove" if dry_run else "Removed"
    for path, size in cleaned.removed:
        click.echo(f"{verb} {path} ({size_text(size)})", err=True)
    for path, why in cleaned.kept:
        click.echo(f"Kept {path}: {why}", err=True)
    click.echo(f"{verb} {len(cleaned.removed)} item(s), {size_text(cleaned.size)}.")
