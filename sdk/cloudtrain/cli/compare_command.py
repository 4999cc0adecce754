"""``compare``: did scaling pay? Runs side by side at equal epochs, time and cost, and the verdict.

The runs are read back from their outputs (``cloudtrain.scaling``), so this process
imports no TensorFlow; a cloud job's outputs are read with that cloud's client.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from cloudtrain.cli import tables
from cloudtrain.cli.options import json_option, plot_option, profile_option
from cloudtrain.cli.run_sources import named, source_options
from cloudtrain.cost.units import dollars, duration

if TYPE_CHECKING:
    from cloudtrain.scaling import Comparison, RunRecord

RUN_COLUMNS = (
    tables.Column("run"),
    tables.Column("shape"),
    tables.Column("replicas", justify="right"),
    tables.Column("global batch", priority=2, justify="right"),
    tables.Column("LR", priority=3, justify="right"),
    tables.Column("examples/s", justify="right"),
    tables.Column("wall time", justify="right"),
    tables.Column("lost", priority=4, justify="right"),
    tables.Column("$/h", priority=1, justify="right"),
)


@click.command("compare")
@click.argument("runs", nargs=-1, required=True)
@click.option(
    "--target",
    metavar="METRIC=VALUE",
    help="The value to reach, e.g. val_accuracy=0.95. Default: the best value the slowest-converging run reached.",
)
@click.option(
    "--metric", help="The metric to compare without --target. Default: a validation metric every run logged."
)
@plot_option("the runs", "plot_path")
@source_options
@profile_option
@json_option
def compare_command(
    runs: tuple[str, ...],
    target: str | None,
    metric: str | None,
    plot_path: str | None,
    spec_path: str | None,
    provider: str | None,
    source: str,
    tracking: str | None,
    profile: str | None,
    as_json: bool,
) -> None:
    """Did scaling pay? Compare RUNS at equal epochs, equal wall time and equal cost.

    Each RUN is a job ID (local:<run>, a Vertex AI job, a SageMaker ARN), a local run's
    name, an output folder (holding cloudtrain-history.json) or a gs:// / s3:// URI of
    one; with --from mlflow, a cloudtrain run id or an MLflow run id of a run logged with
    tracking:. For each it shows the shape, replicas, global batch, learning rate and speed;
    the metric epoch by epoch; when each reached the target, in time and dollars; what
    each had reached at equal time and at equal cost; and a verdict for each run against
    the one with the fewest replicas. Dollars are what the provider billed where it says,
    else the catalog's rate for the run's shape; the source is printed.

    \b
    Examples:
      cloudtrain compare local:demo-20260101-120000-0a1b local:demo-20260101-121500-9f3c
      cloudtrain compare RUN_A RUN_B --target val_binary_accuracy=0.95 --plot scaling.png
      cloudtrain compare outputs/runs/a outputs/runs/b --json
      cloudtrain compare 2026-12-03 2026-12-10 --spec job.yaml --provider vertex
      cloudtrain compare RUN_A RUN_B --from mlflow --tracking http://127.0.0.1:5000
    """
    from cloudtrain.scaling import compare
    from cloudtrain.scaling.plot import plot

    read, settings, spec = named(
        runs, source=source, tracking=tracking, spec_path=spec_path, provider=provider, profile=profile
    )
    found = compare(*read, target=target, metric=metric, settings=settings, spec=spec, provider=provider)
    if plot_path:
        click.echo(f"Plot written to {plot(found, plot_path)}", err=True)
    click.echo(json.dumps(found.to_json(), indent=2) if as_json else report(found))


def report(found: Comparison) -> str:
    """The runs, the metric by epoch, the target, equal time and cost, the verdicts and the prices' sources.

    Each run is its letter (A, B, ...), its ID given once under the first table.
    """
    runs = tables.render(
        RUN_COLUMNS, [_run_row(name, run) for name, run in zip(found.names, found.runs, strict=True)]
    )
    epochs = tables.render(
        [
            tables.Column("epoch", justify="right"),
            *(tables.Column(name, justify="right") for name in found.names),
        ],
        [[str(epoch), *(_value(v) for v in values)] for epoch, values in found.table()],
    )
    ids = [f"{name} = {run.label}" for name, run in zip(found.names, found.runs, strict=True)]
    lines = [runs, *ids, "", f"{found.metric} at equal epochs", epochs, "", *_target_lines(found), ""]
    lines += [f"{'verdict':<8} {verdict.text}" for verdict in found.verdicts]
    named = list(zip(found.names, found.runs, strict=True))
    lines += [f"{'speed':<8} {name}: {run.speed_basis}" for name, run in named]
    lines += [f"{'cost':<8} {name}: {run.cost.source}" for name, run in named]
    lines += [
        f"{'note':<8} {name} ran on {run.measured_on}, not {run.accelerator}: its speed is that machine's."
        for name, run in named
        if run.measured_on != run.accelerator
    ]
    return "\n".join(lines)


def _run_row(name: str, run: RunRecord) -> list[str]:
    rate = run.cost.usd_per_hour
    return [
        name,
        run.shape,
        str(run.replicas),
        str(run.global_batch),
        "?" if run.learning_rate is None else f"{run.learning_rate:g}",
        "?" if run.examples_per_sec is None else f"{run.examples_per_sec:,.0f}",
        duration(run.wall_s),
        duration(run.time_lost_s) if run.time_lost_s else "-",
        "?" if rate is None else dollars(rate),
    ]


def _target_lines(found: Comparison) -> list[str]:
    target = found.target
    rows = [
        [
            name,
            "never" if reached is None else str(reached.epoch),
            "-" if reached is None else duration(reached.wall_s),
            "-" if reached is None or reached.usd is None else dollars(reached.usd),
            "-" if reached is None else f"{reached.examples:,}",
        ]
        for name, reached in zip(found.names, found.reached, strict=True)
    ]
    columns = [
        tables.Column("run"),
        *(tables.Column(name, justify="right") for name in ("epoch", "time", "cost", "examples seen")),
    ]
    lines = [f"to reach {target} ({target.basis})", tables.render(columns, rows), ""]
    lines.append(
        f"at equal wall time ({duration(found.equal_time_s)}): {_each(found.names, found.at_equal_time)}"
    )
    if found.equal_usd is not None:
        lines.append(f"at equal cost ({dollars(found.equal_usd)}): {_each(found.names, found.at_equal_cost)}")
    return lines


def _each(names: tuple[str, ...], values: tuple[float | None, ...]) -> str:
    return ", ".join(f"{name} {_value(value)}" for name, value in zip(names, values, strict=True))


def _value(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"
