"""``history``: one run's epochs, every metric as Keras' ``History`` has it, from its outputs or from MLflow.

The run is read as ``compare`` reads each of its runs (``cloudtrain.scaling.read``, or
``cloudtrain.tracking.reading`` with ``--from mlflow``), so the two sources give the same
table: the chief logs the history file itself as an artifact of the MLflow run.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from cloudtrain.cli import tables
from cloudtrain.cli.options import json_option, profile_option
from cloudtrain.cli.run_sources import named, source_options
from cloudtrain.cost.units import duration

if TYPE_CHECKING:
    from cloudtrain.scaling import RunRecord

COLUMNS = (
    tables.Column("epoch", justify="right"),
    tables.Column("attempt", priority=2, justify="right"),
    tables.Column("time", priority=1, justify="right"),
    tables.Column("epoch time", priority=3, justify="right"),
    tables.Column("examples seen", priority=4, justify="right"),
)


@click.command("history")
@click.argument("run")
@source_options
@profile_option
@json_option
def history_command(
    run: str,
    spec_path: str | None,
    provider: str | None,
    source: str,
    tracking: str | None,
    profile: str | None,
    as_json: bool,
) -> None:
    """Print RUN's history: every epoch's metrics as Keras' History has them.

    RUN is what compare takes: a job ID (local:<run>, a Vertex AI job, a SageMaker ARN),
    a local run's name, an output folder (holding cloudtrain-history.json) or a gs:// /
    s3:// URI of one; with --spec, a run ID of that spec; with --from mlflow, a cloudtrain
    run id or an MLflow run id of a run logged with tracking:. Each epoch once, over every
    attempt of the run, with the attempt that trained it, the time since the run started,
    the epoch's own time and the examples seen; --json adds the run's shape, speed and price.

    \b
    Examples:
      cloudtrain history local:demo-20260101-120000-0a1b
      cloudtrain history outputs/runs/nightly-42 --json
      cloudtrain history nightly-42 --spec job.yaml --provider vertex
      cloudtrain history nightly-42 --from mlflow --tracking http://127.0.0.1:5000
    """
    from cloudtrain.scaling import read

    [found], settings, spec = named(
        (run,), source=source, tracking=tracking, spec_path=spec_path, provider=provider, profile=profile
    )
    record = (
        found if not isinstance(found, str) else read(found, settings=settings, spec=spec, provider=provider)
    )
    click.echo(json.dumps(record.to_json(), indent=2) if as_json else report(record))


def report(record: RunRecord) -> str:
    """A line on the run (its id, shape and attempts), then one row per epoch: its numbers and metrics."""
    attempts = f"{record.attempts} attempt{'s' * (record.attempts != 1)}"
    about = f"{record.run}: {record.shape}, {record.replicas} replicas, global batch {record.global_batch}, {attempts}"
    if not record.points:
        return f"{about}\nNo epoch has ended yet."
    names = record.metrics()
    rows = [
        [
            str(point.epoch),
            str(point.attempt),
            duration(point.wall_s),
            duration(point.epoch_s),
            f"{point.examples:,}",
            *(_value(point.metrics.get(name)) for name in names),
        ]
        for point in record.points
    ]
    metrics = [tables.Column(name, justify="right") for name in names]
    return f"{about}\n{tables.render([*COLUMNS, *metrics], rows)}"


def _value(value: float | None) -> str:
    """A metric as a table shows it: six significant digits (``--json`` has every one); ``-`` where the epoch has none."""
    return "-" if value is None else f"{value:.6g}"
