"""Options shared by every command that reads a job spec."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from cloudtrain.errors import SpecError

if TYPE_CHECKING:
    from cloudtrain.provider import Provider

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


def emulable() -> tuple[str, ...]:
    """What ``--emulate`` accepts: the providers the local provider can emulate, and a placement."""
    from cloudtrain.placement.emulation import EMULATE
    from cloudtrain.providers.local.emulate import emulable as names

    return (*names(), EMULATE)


def local_options(func: F) -> F:
    """--emulate NAME and --fault SPEC: how the local provider runs the job (``submit``), checked alike (``validate``)."""
    func = click.option(
        "--fault",
        "faults",
        metavar="FAULT",
        multiple=True,
        help="With --provider local: TASK:INDEX@epoch:N makes that replica kill itself once, e.g. "
        "worker:0@epoch:1 (tests restarts); spot@epoch:N reclaims every replica; stop@epoch:N loses the "
        "region: no restart, resume elsewhere with --run-id; preempt@step:N gives the last host the provider's "
        "notice after step N (SIGTERM, SIGKILL after its grace): it backs up that step, exits 75 and the run "
        "resumes there; hang@step:N makes the last host's replica stop making progress after step N: the hang "
        "watchdog (training.hang_timeout) ends the attempt and the run resumes; pending@90s holds the job 90 s before it "
        "starts, as a job waiting for capacity; with --emulate placement, capacity@PROVIDER:REGION and "
        "quota@PROVIDER:REGION refuse that candidate as its provider would (repeatable).",
    )(func)
    return click.option(
        "--emulate",
        type=RegistryChoice(emulable),
        default=None,
        help="With --provider local: render that provider's request and run it here, as it would; "
        "placement: try the spec's placement candidates, each as its provider would run it.",
    )(func)


def target(name: str, *, emulate: str | None, faults: tuple[str, ...]) -> str | Provider:
    """The provider to submit to: a name, or the local provider configured with --emulate/--fault.

    Raises:
        SpecError: more than one replica fault (only a placement takes several faults).
    """
    if not (emulate or faults):
        return name
    from cloudtrain.providers import local

    if len(faults) > 1:
        raise SpecError(f"--fault: one replica fault at a time; got {', '.join(faults)}.")
    fault = faults[0] if faults else None
    local.check_options(name, emulate=emulate, fault=fault)
    return local.Local(emulate=emulate, fault=fault)


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


def _plot_path(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """The --plot path, checked before any work (``cloudtrain.figures.check_path``)."""
    if value is None:
        return None
    from cloudtrain.figures import check_path

    check_path(value)
    return value


def plot_option(what: str, name: str = "plot") -> Callable[[F], F]:
    """--plot FILE: draw ``what`` to FILE (.png, .svg or .pdf), its name and folder checked first."""
    return click.option(
        "--plot",
        name,
        metavar="FILE",
        callback=_plot_path,
        help=f"Also draw {what} to FILE: .png (also without a suffix), .svg or .pdf.",
    )


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
