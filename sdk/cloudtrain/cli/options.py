"""Options shared by every command that reads a job spec."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


class RegistryChoice(click.Choice):
    """A choice of provider names, read from the registry when first needed, not at import.

    Reading it at import would load every provider (and scan installed packages for
    entry points) for ``cloudtrain --help``.
    """

    def __init__(self, names: Callable[[], tuple[str, ...]]) -> None:
        super().__init__(())
        self._names = names

    @property
    def choices(self) -> tuple[str, ...]:
        return self._names()

    @choices.setter
    def choices(self, value: Any) -> None:
        """click's ``__init__`` assigns the choices; the registry owns them."""


def _all_providers() -> tuple[str, ...]:
    from cloudtrain.provider import registry

    return registry.names()


PROVIDER_CHOICE = RegistryChoice(_all_providers)


def _profile_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """The config file's profiles, for shell completion."""
    from cloudtrain.defaults import profile_names

    return [name for name in profile_names() if name.startswith(incomplete)]


def profile_option(func: F) -> F:
    """--profile NAME: the profile of the user config file beneath the spec."""
    return click.option(
        "--profile",
        default=None,
        metavar="NAME",
        shell_complete=_profile_names,
        help="Profile of ~/.config/cloudtrain/config.yaml for the fields the spec leaves out. "
        "Default: $CLOUDTRAIN_PROFILE, else 'default'.",
    )(func)


def spec_options(func: F) -> F:
    """JOB argument, --provider, repeatable --set KEY=VALUE and --profile."""
    func = profile_option(func)
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


def run_id_option(func: F) -> F:
    """--run-id ID: which run of the spec and code; its artifacts live under ROOT/runs/ID."""
    return click.option(
        "--run-id",
        metavar="ID",
        default=None,
        help="Which run of this spec and code; its artifacts live under ROOT/runs/ID. The same ID "
        "attaches to the job it made (or resumes it after a failure), a new one makes a new job.",
    )(func)


def throughput_option(required: bool) -> Any:
    """``--throughput RATE@ACCELERATOR`` or a throughput JSON path."""
    return click.option(
        "--throughput",
        "-t",
        required=required,
        metavar="RATE@ACCEL|FILE",
        help="Measured examples/s of ONE device, e.g. 1200@a100-40gb, or a run's "
        "cloudtrain-throughput.json (PATH@ACCEL when it names no accelerator).",
    )
