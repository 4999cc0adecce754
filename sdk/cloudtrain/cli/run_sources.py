"""Where ``compare`` and ``history`` read runs: their outputs, or MLflow. The options and the MLflow reader they share."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import click

from cloudtrain.cli.options import PROVIDER_CHOICE
from cloudtrain.errors import SpecError

if TYPE_CHECKING:
    from cloudtrain.scaling import RunRecord
    from cloudtrain.spec import JobSpec

F = TypeVar("F", bound=Callable[..., object])
OUTPUTS, MLFLOW = "outputs", "mlflow"


def source_options(func: F) -> F:
    """``--spec``, ``--provider``, ``--from`` and ``--tracking``: where the runs named are read."""
    options = (
        click.option(
            "--spec",
            "spec_path",
            type=click.Path(dir_okay=False),
            help="A job spec whose run IDs (submit --run-id) RUNS may name: each is read under ROOT/runs/<run_id>.",
        ),
        click.option(
            "--provider", "-p", type=PROVIDER_CHOICE, default=None, help="Where the --spec runs ran."
        ),
        click.option(
            "--from",
            "source",
            type=click.Choice([OUTPUTS, MLFLOW]),
            default=OUTPUTS,
            show_default=True,
            help="Read RUNS from their outputs, or from MLflow (runs logged with tracking:; see docs/tracking.md).",
        ),
        click.option(
            "--tracking",
            metavar="URI",
            envvar="MLFLOW_TRACKING_URI",
            default=None,
            help="With --from mlflow: the MLflow tracking URI. Default: MLFLOW_TRACKING_URI.",
        ),
    )
    for option in reversed(options):
        func = option(func)
    return func


def named(
    runs: Sequence[str],
    *,
    source: str,
    tracking: str | None,
    spec_path: str | None,
    provider: str | None,
    profile: str | None,
) -> tuple[list[str | RunRecord], JobSpec, JobSpec | None]:
    """The runs as the options say: read from MLflow, or their names for ``cloudtrain.scaling`` to read;
    the settings they are read with, and the ``--spec`` whose run IDs they may be."""
    from cloudtrain.specfile import load_settings, load_spec

    settings = load_settings(None, profile=profile, provider=provider)[0]
    spec = load_spec(spec_path, (), profile=profile, provider=provider) if spec_path else None
    found: list[str | RunRecord] = list(runs)
    if source == MLFLOW:
        found = list(from_mlflow(runs, tracking, settings))
    return found, settings, spec


def from_mlflow(runs: Sequence[str], uri: str | None, settings: JobSpec) -> list[RunRecord]:
    """RUNS read from the MLflow store at ``uri`` (``cloudtrain.tracking.reading``).

    Raises:
        SpecError: no URI was given.
    """
    if not uri:
        raise SpecError(
            "--from mlflow needs the MLflow tracking URI: pass --tracking URI or export MLFLOW_TRACKING_URI."
        )
    from cloudtrain.tracking.reading import read_runs

    return read_runs(runs, uri=uri, settings=settings)
