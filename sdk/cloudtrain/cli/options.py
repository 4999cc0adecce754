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
    from cloudtrain.providers import registry

    return registry.names()


PROVIDER_CHOICE = RegistryChoice(_all_providers)


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
