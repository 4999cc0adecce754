"""Price a job on every billed provider and shape before it runs: hours, dollars and the Pareto front.

The estimate is arithmetic on stated inputs, never a quote:

- work = ``training.examples_per_epoch`` × epochs (or steps × the plan's global batch × epochs);
- speed = a measured single-device throughput, scaled to another accelerator by the
  relative-speed table (``catalog/speeds.csv``), times devices, times the scaling
  efficiency of the layout (``catalog/scaling.csv``);
- dollars = billed time (rounded up to the price row's billing increment) × the
  per-host price (``catalog/prices.csv``) × hosts.

The providers compared are the registry's billed ones; every option keeps the plan's
replica count (so the global batch and scaled learning rate do not change).

Example:
>>> from cloudtrain.spec import JobSpec
>>> spec = JobSpec(name="demo", code={"module": "trainer.task"},
...                resources={"accelerator": "a100-40gb", "per_host": 8},
...                training={"examples_per_epoch": 1_000_000, "epochs": 10})
>>> best = estimate(spec, throughput="1200@a100-40gb")[0]
>>> best.label, best.spot, best.marks
('1 × ct5lp-hightpu-8t', True, ('cheapest', 'pareto'))
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypedDict, Unpack

from cloudtrain import planning
from cloudtrain.cost import inputs
from cloudtrain.cost.inputs import CostSettings, PriceCatalog
from cloudtrain.cost.option import CostOption, Workload, device_speed, price_option
from cloudtrain.cost.ranking import rank
from cloudtrain.cost.shapes import Shape, enumerate_shapes
from cloudtrain.cost.throughput import Throughput, parse_throughput
from cloudtrain.errors import SpecError, did_you_mean
from cloudtrain.provider import registry
from cloudtrain.sweep import cost as sweep_cost
from cloudtrain.sweep import space

if TYPE_CHECKING:
    from cloudtrain.planning import Plan
    from cloudtrain.spec import JobSpec


@dataclass(frozen=True)
class Estimate:
    """The ranked options, plus what was left out and why (shown under the table)."""

    options: list[CostOption]
    notes: list[str]
    work_examples: int
    work_basis: str
    throughput: Throughput
    settings: CostSettings


class Scope(TypedDict, total=False):
    """What ``estimate`` prices besides the job; each key is optional."""

    providers: tuple[str, ...]  # which providers to price; empty: every billed provider
    regions: tuple[str, ...]  # catalog regions to price; empty: each provider's region for the spec
    settings: CostSettings | None  # price catalog, speeds and spot assumptions; None: the catalog's


def estimate(spec: JobSpec, *, throughput: str | Throughput, **scope: Unpack[Scope]) -> list[CostOption]:
    """Every option that fits ``spec``, cheapest first, with the cheapest, fastest and Pareto marks.

    Args:
        spec: the job; its planned replica count, batch and epochs define the work.
        throughput: ``"RATE@ACCELERATOR"``, a throughput JSON path, or a ``Throughput``.
        **scope: ``providers``, ``regions`` and ``settings`` (see ``Scope``).

    Raises:
        SpecError: when the work cannot be derived or an input is malformed.
    """
    return report(spec, throughput=throughput, **scope).options


def report(
    spec: JobSpec,
    *,
    throughput: str | Throughput,
    providers: tuple[str, ...] = (),
    regions: tuple[str, ...] = (),
    settings: CostSettings | None = None,
) -> Estimate:
    """Like ``estimate``, with the notes and inputs the CLI shows beside the table.

    Args:
        spec: the job; its planned replica count, batch and epochs define the work.
        throughput: ``"RATE@ACCELERATOR"``, a throughput JSON path, or a ``Throughput``.
        providers: which providers to price; empty means every billed provider.
        regions: catalog regions to price; empty means each provider's region for the spec.
        settings: price catalog, speeds and spot assumptions; default the catalog's.

    Raises:
        SpecError: when the work cannot be derived or an input is malformed.
    """
    settings = settings or CostSettings()
    measured = parse_throughput(throughput)
    tuning = spec.tuning
    spec = space.worst_case_spec(spec)  # a sweep: its longest trial, scaled below
    planned = plan_of(spec)
    work, basis = work_examples(planned)
    names, left_out = runnable(spec, providers or billed(), asked=bool(providers))
    missing = region_notes(spec, names, regions, settings.prices)
    shapes, notes = enumerate_shapes(planned, names)
    notes = left_out + notes
    job = Workload(work, measured, settings)
    options = [
        option
        for shape in shapes
        for region in regions_for(spec, shape.provider, regions, settings.prices)
        for spot in (False, True)
        if (option := price_option(shape, region, spot, job)) is not None
    ]
    notes += _speed_notes(shapes, measured, settings.speeds) + missing
    if tuning is not None:
        options = [sweep_cost.scaled(option, tuning) for option in options]
        notes.append(sweep_cost.note(tuning, spec.training.epochs))
    return Estimate(rank(options), notes, work, basis, measured, settings)


def runnable(spec: JobSpec, names: tuple[str, ...], *, asked: bool) -> tuple[tuple[str, ...], list[str]]:
    """The providers of ``names`` that can run ``spec``, and a note for each left out.

    A sweep (``tuning:``) runs only on a provider that runs sweeps (``TunesJobs``): pricing
    it elsewhere would rank a job that provider refuses to start.

    Raises:
        SpecError: a provider asked for by name (``asked``) cannot run it; the message says which can.
    """
    if spec.tuning is None:
        return names, []
    from cloudtrain.provider.sweeps import TunesJobs
    from cloudtrain.sweep.submit import tuner

    refusing = [name for name in names if not isinstance(registry.get(name), TunesJobs)]
    if refusing and asked:
        tuner(registry.get(refusing[0]))  # raises, naming the providers that run sweeps
    able = [provider.name for provider in registry.providers() if isinstance(provider, TunesJobs)]
    notes = [
        f"{name}: left out: it runs no hyperparameter sweeps (tuning:); {', '.join(able)} do."
        for name in refusing
    ]
    return tuple(name for name in names if name not in refusing), notes


def billed() -> tuple[str, ...]:
    """The names of the providers the cost table compares: those whose jobs cost money."""
    return tuple(provider.name for provider in registry.billed())


def plan_of(spec: JobSpec) -> Plan:
    """``spec`` planned for its own provider, else for the first provider that accepts it.

    The replica count and global batch are the spec's whichever provider plans them, so
    a spec that runs anywhere can be priced everywhere.

    Raises:
        SpecError: the spec's own provider's problems and what to do, when no provider can plan it.
    """
    problems: dict[str, list[str]] = {}
    for name in dict.fromkeys((spec.provider, *registry.names())):
        try:
            return planning.plan(spec, registry.get(name))
        except SpecError as exc:
            problems[name] = exc.problems
    raise SpecError(
        [
            *problems[spec.provider],
            f"No provider could plan the job ({', '.join(problems)}), so it cannot be priced. "
            f"Fix the problems above for provider {spec.provider!r}, or pick another with --set provider=NAME.",
        ]
    )


def work_examples(planned: Plan) -> tuple[int, str]:
    """Examples the whole job processes, and how that number was derived."""
    training = planned.spec.training
    if training.examples_per_epoch:
        work = training.examples_per_epoch * training.epochs
        return work, f"{training.examples_per_epoch:,} examples/epoch × {training.epochs} epochs"
    if training.steps_per_epoch:
        batch = planned.global_batch
        work = training.steps_per_epoch * batch * training.epochs
        return work, f"{training.steps_per_epoch:,} steps × global batch {batch} × {training.epochs} epochs"
    raise SpecError(
        "training.examples_per_epoch is needed to estimate time and cost. "
        "Set training.examples_per_epoch (or training.steps_per_epoch)."
    )


def select(found: Estimate, *, max_hours: float | None = None, max_cost: float | None = None) -> Estimate:
    """Keep the options within the limits, re-ranked; unknown prices fail a cost limit, with a note."""
    kept = [
        o
        for o in found.options
        if (max_hours is None or o.hours <= max_hours)
        and (max_cost is None or (o.usd is not None and o.usd <= max_cost))
    ]
    notes = list(found.notes)
    unknown = sum(1 for o in found.options if not o.known)
    if max_cost is not None and unknown:
        notes.append(f"{unknown} option(s) with an unknown price are left out by --max-cost.")
    return replace(found, options=rank([replace(o, marks=()) for o in kept]), notes=notes)


def regions_for(spec: JobSpec, provider: str, regions: tuple[str, ...], prices: PriceCatalog) -> list[str]:
    """The regions to price ``provider`` in: those asked for that it has prices in, else the spec's."""
    if not regions:  # the provider's region for the spec; none where it has none (an unpriced cluster)
        region = registry.get(provider).region(spec)
        return [region] if region else []
    return [r for r in regions if r in prices.regions(provider)]


def region_notes(
    spec: JobSpec, providers: tuple[str, ...], regions: tuple[str, ...], prices: PriceCatalog
) -> list[str]:
    """A note for each provider and region without prices; a region no provider has is an error."""
    known = prices.regions()
    for region in regions:
        if region not in known:
            raise SpecError(
                f"--region {region!r} has no prices in the catalog.{did_you_mean(region, known, 'regions')}"
            )
    return [
        _no_prices(provider, region)
        for provider in providers
        for region in regions_for(spec, provider, regions, prices)
        if region not in prices.regions(provider)
    ]


def _no_prices(provider: str, region: str) -> str:
    source = inputs.source_of(provider)
    if source is None:
        return f"{provider} {region}: no prices in the catalog (nor in the provider's own prices.csv)."
    return (
        f"{provider} {region}: no prices in the catalog. "
        f"Run: cloudtrain prices refresh --provider {source} --region {region}"
    )


def _speed_notes(shapes: list[Shape], measured: Throughput, speeds: dict[str, float | None]) -> list[str]:
    unknown = sorted(
        {
            s.machine.accelerator
            for s in shapes
            if device_speed(s.machine.accelerator, measured, speeds) is None
        }
    )
    if not unknown:
        return []
    return [
        f"Left out {', '.join(unknown)}: no relative speed to {measured.accelerator} "
        f"(catalog/speeds.csv). Measure one (--throughput N@{unknown[0]}) or add it with --speeds FILE."
    ]
