"""``bench``: how fast the job trains here, whether its input holds it back, and how it scales.

The measuring happens in the job's own replicas (``cloudtrain.bench`` starts them, here or
on a cloud, with the runtime's bench mode), so this process imports no TensorFlow.
Progress goes to stderr, the table (or ``--json``) to stdout.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from cloudtrain.bench import BENCH_MAX_RUNTIME, DEFAULT_STEPS, scaling_efficiency
from cloudtrain.cli import tables
from cloudtrain.cli.options import PROVIDER_CHOICE, json_option, plot_option, profile_option
from cloudtrain.cost.notes import KIND_MARKS
from cloudtrain.cost.units import dollars, duration
from cloudtrain.errors import SpecError
from cloudtrain_runtime.bench import MAX_STEPS

if TYPE_CHECKING:
    from cloudtrain.bench import BenchResult, Measurement, Verdict
    from cloudtrain.cost.option import CostOption
    from cloudtrain.progress import Progress
    from cloudtrain.recommend import Recommendation, Target
    from cloudtrain.spec import JobSpec

# What stays on a narrow terminal: how many replicas, how fast, how much waiting, how well it scales.
COLUMNS = (
    tables.Column("replicas", justify="right"),
    tables.Column("strategy", priority=2),
    tables.Column("global batch", priority=1, justify="right"),
    tables.Column("input pipeline", justify="right"),
    tables.Column("compute ceiling", priority=3, justify="right"),
    tables.Column("input wait", justify="right"),
    tables.Column("efficiency", justify="right"),
)
# The findings under the table: a name, then text that folds to the width left.
FINDINGS = (tables.Column(""), tables.Column("", wrap=True))


@click.command("bench")
@click.argument("job", type=click.Path(dir_okay=False))
@click.option(
    "--provider",
    "-p",
    type=PROVIDER_CHOICE,
    default=None,
    help="Where to run it: local (this machine, the default) or a cloud, on the spec's own machines.",
)
@click.option(
    "--force",
    is_flag=True,
    help=f"Run on a cloud even when a run's worst case (every host for {BENCH_MAX_RUNTIME}) exceeds limits.max_cost_usd.",
)
@click.option(
    "--steps",
    type=click.IntRange(1, MAX_STEPS),
    default=DEFAULT_STEPS,
    show_default=True,
    help="Optimizer steps timed per measurement, after as many of warm-up.",
)
@plot_option("the results", "plot_path")
@click.option(
    "--target-from",
    type=click.Path(dir_okay=False),
    help="A cloudtrain compare --json file: also price each option to its target, in the epochs "
    "its run of the spec's replica count needed.",
)
@click.option(
    "--profile-steps",
    metavar="FIRST-LAST",
    help="Also trace these steps of one more epoch with the TensorFlow Profiler, e.g. 10-20; the input "
    "verdict names the trace. Runs then write under the storage root's bench/ folder, here too.",
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a spec field, e.g. --set training.per_replica_batch=64 (repeatable).",
)
@profile_option
@json_option
def bench_command(
    job: str,
    provider: str | None,
    force: bool,
    steps: int,
    plot_path: str | None,
    target_from: str | None,
    profile_steps: str | None,
    overrides: tuple[str, ...],
    profile: str | None,
    as_json: bool,
) -> None:
    """Measure JOB's training speed: input-bound or not, scaling efficiency, mixed precision.

    Runs the job's own model and input on the local provider (or --provider), first on
    1 replica, then on the spec's hosts × per_host (emulated on the CPU where there is no
    GPU, locally), the
    per-replica batch fixed. Each replica times the real input pipeline and one cached
    batch (the compute ceiling) after a warm-up; compilation is not timed. The verdicts
    say whether the device waits for input (and the fix), the scaling efficiency
    throughput_N / (N × throughput_1), and whether mixed precision pays where the
    devices support it.

    On a cloud each run is a job of its own, on the spec's machine type, stopped after
    30 minutes at most; the worst case (every host billed for all of it) is printed first
    and checked against limits.max_cost_usd like submit (--force to run anyway). Its
    outputs go under the storage root's bench/ folder.

    With --json the results are also a throughput file: save them and pass the file to
    cloudtrain cost --throughput.

    \b
    Examples:
      cloudtrain bench job.yaml
      cloudtrain bench job.yaml --json > bench.json && cloudtrain cost job.yaml --throughput bench.json
      cloudtrain bench job.yaml --steps 100 --plot bench.png
      cloudtrain bench job.yaml --profile-steps 10-20
      cloudtrain bench job.yaml --provider sagemaker --json > bench-t4.json
    """
    from cloudtrain.bench import bench, plot, worst_cost
    from cloudtrain.recommend import load_target
    from cloudtrain.specfile import load_spec

    spec = load_spec(job, overrides, profile=profile, provider=provider)
    target = load_target(target_from, spec) if target_from else None  # a bad file fails before any run
    usd = worst_cost(spec, provider)
    if usd is not None:
        click.echo(
            f"bench: the runs can cost at most ${usd:,.2f} (every host billed for {BENCH_MAX_RUNTIME})",
            err=True,
        )
    result = bench(
        spec, provider=provider, steps=steps, progress=_progress, force=force, profile_steps=profile_steps
    )
    if plot_path:
        click.echo(f"Plot written to {plot(result, plot_path)}", err=True)
    advice, why = _recommend(result, spec, target)
    if as_json:
        options = {"recommendation": advice.to_json() if advice else {"skipped": why}}
        click.echo(json.dumps({**result.to_json(), **options}, indent=2))
    else:
        click.echo("\n\n".join([table(result), options_table(advice) if advice else f"options: {why}"]))


def _recommend(
    result: BenchResult, spec: JobSpec, target: Target | None
) -> tuple[Recommendation | None, str]:
    """The priced options, or why there are none (the spec gives no size of an epoch)."""
    from cloudtrain.recommend import recommend

    try:
        return recommend(result, spec, target=target), ""
    except SpecError as error:
        return None, str(error)


def _progress(event: Progress) -> None:
    if event.done < event.total:
        click.echo(f"bench: {event.name} (run {event.done + 1} of {event.total})...", err=True)


def table(result: BenchResult, *, width: int | None = None) -> str:
    """One row per replica count, then the verdicts with their fixes and the notes, ``width`` wide.

    ``width`` None: the terminal's (see ``tables.render``); a pipe or a file gets every column.
    """
    runs = tables.render(COLUMNS, [_row(run, result) for run in result.runs], width=width)
    findings = [("input", result.input), ("scaling", result.scaling), ("precision", result.precision)]
    rows = [row for name, verdict in findings if verdict for row in _verdict(name, verdict)]
    rows += [("note", note) for note in result.notes]
    return "\n\n".join([runs, tables.render(FINDINGS, rows, width=width)] if rows else [runs])


def _row(run: Measurement, result: BenchResult) -> tuple[str, ...]:
    efficiency = scaling_efficiency(result.runs[0].pipeline, run.pipeline, run.replicas)
    return (
        str(run.replicas),
        run.strategy,
        str(run.global_batch),
        f"{run.pipeline:,.0f} ex/s",
        f"{run.ceiling:,.0f} ex/s",
        f"{run.input_wait:.0%}",
        f"{efficiency:.2f}",
    )


SHOWN_OPTIONS = 12


def options_table(advice: Recommendation) -> str:
    """The cheapest options per epoch (and to the target), marked measured (m) or extrapolated (x)."""
    shown = advice.estimate.options[:SHOWN_OPTIONS]
    reach = advice.target is not None
    columns = [
        tables.Column("#", justify="right"),
        tables.Column("provider"),
        tables.Column("shape"),
        tables.Column("accel", priority=4),
        tables.Column("capacity"),
        tables.Column("examples/s", justify="right"),
        tables.Column("eff", justify="right"),
        tables.Column("time/epoch", justify="right"),
        tables.Column("USD/epoch", justify="right"),
        *(
            [tables.Column("to target", justify="right"), tables.Column("USD to target", justify="right")]
            if reach
            else []
        ),
        tables.Column("marks", priority=2),
    ]
    rows = [_option_row(rank, option, advice) for rank, option in enumerate(shown, 1)]
    more = len(advice.estimate.options) - len(shown)
    lines = [
        f"options for {advice.epochs} epochs, cheapest first (m measured by this bench, x extrapolated from it, "
        "else assumed; cost --throughput with this bench's --json ranks them the same):",
        tables.render(columns, rows),
    ]
    if more > 0:
        lines.append(f"... and {more} more: cloudtrain cost JOB --throughput bench.json lists them all.")
    if advice.target is not None:
        lines.append(f"to target: {advice.target.source}.")
    lines += [f"note: {note}" for note in advice.estimate.notes]
    return "\n".join(lines)


def _option_row(rank: int, option: CostOption, advice: Recommendation) -> list[str]:
    hours, usd = advice.per_epoch(option)
    reach = advice.to_target(option)
    speed_mark = " m" if option.speed_kind == "measured" else " x"
    row = [
        str(rank),
        option.provider,
        option.label,
        option.accelerator,
        option.capacity,
        f"{option.examples_per_sec:,.0f}{speed_mark}",
        f"{option.efficiency.value:.2f}{KIND_MARKS.get(option.efficiency.kind, '')}",
        duration(hours * 3600),
        "price unknown" if usd is None else f"{'≤ ' if option.upper_bound else ''}{dollars(usd)}",
    ]
    if reach is not None:
        row += [duration(reach[0] * 3600), "-" if reach[1] is None else dollars(reach[1])]
    return [*row, ", ".join(option.marks)]


def _verdict(name: str, verdict: Verdict) -> list[tuple[str, str]]:
    return [(name, f"{verdict.kind}: {verdict.detail}"), *(("", f"fix: {fix}") for fix in verdict.fixes)]
