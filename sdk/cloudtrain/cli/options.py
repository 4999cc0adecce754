"""Options shared by every command that reads a job spec."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

PROVIDER_CHOICE = click.Choice(["local", "vertex", "sagemaker"])


def spec_options(func: F) -> F:
    """JOB argument, --provider and repeatable --set KEY=VALUE."""
    func = click.option(
        "--set",
        "overrides",
        multiple=True,
        metavar="KEY=VALUE",
        help="Override a spec field, e.g. --set training.epochs=5 (repeatable).",
    )(func)
    func = click.option(
        "--provider",
        "-p",
        type=PROVIDER_CHOICE,
        default=None,
        help="Where the job runs. Default: the spec's provider field (local if unset).",
    )(func)
    return click.argument("job", type=click.Path(dir_okay=False))(func)


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")(func)
