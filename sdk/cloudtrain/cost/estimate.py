"""Price a job on every provider and shape before it runs: hours, dollars and the Pareto front.

The estimate is arithmetic on stated inputs, never a quote:

- work = ``training.examples_per_epoch`` × epochs (or steps × global batch × epochs);
- speed = a measured single-device throughput, scaled to another accelerator by the
  relative-speed table (``catalog/speeds.csv``), times devices, times the scaling
  efficiency of the layout (``catalog/scaling.csv``);
- dollars = billed time (rounded up to the provider's billing increment) × the
  per-host price (``catalog/prices.csv``) × hosts. Spot runs take longer by the assumed
  interruption overhead; a SageMaker spot rate is an assumed discount on on-demand.

Every option keeps the same replica count as the spec (so the global batch and scaled
learning rate do not change): one big host, or several smaller ones.

Example:
>>> from cloudtrain.spec import JobSpec
>>> spec = JobSpec(name="demo", code={"module": "trainer.task"},
...                resources={"accelerator": "a100-40gb", "per_host": 8},
...                training={"examples_per_epoch": 1_000_000, "epochs": 10})
>>> best = estimate(spec, throughput="1200@a100-40gb")[0]
>>> best.provider, best.label, best.spot
('vertex', '1 × ct5lp-hightpu-8t', True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from cloudtrain import catalog, pricing
from cloudtrain.errors import SpecError, did_you_mean
from cloudtrain.planning import DEFAULT_PER_REPLICA_BATCH, choose_strategy
from cloudtrain.throughput import Throughput, parse_throughput

if TYPE_CHECKING:
    from cloudtrain.spec import JobSpec

CLOUD_PROVIDERS = ("vertex", "sagemaker")


@dataclass(frozen=True)
class CostSettings:
    """The model's inputs besides the job: prices, speeds and the spot assumptions.

    Defaults come from the catalog files; pass values to override them (the CLI's
    ``--speeds``, ``--spot-overhead`` and ``--spot-discount``).
    """

    prices: pricing.PriceCatalog = field(default_factory=pricing.prices)
    speeds: dict[str, float | None] = field(default_factory=pricing.read_speeds)
    spot_overhead: float = field(
        default_factory=lambda: pricing.assumptions()["spot_interruption_overhead"].value
    )
    sagemaker_spot_discount: float = field(
        default_factory=lambda: pricing.assumptions()["sagemaker_spot_discount"].value
    )

    def __post_init__(self) -> None:
        if not 0 <= self.spot_overhead <= 10:
            raise SpecError(
                f"spot overhead must be between 0 and 10 (0.1 = 10%). Received: {self.spot_overhead}."
            )
        if not 0 <= self.sagemaker_spot_discount < 1:
            raise SpecError(
                f"spot discount must be at least 0 and below 1 (0.6 = 60% off). Received: {self.sagemaker_spot_discount}."
            )

    def __repr__(self) -> str:
        return (
            f"CostSettings(prices={self.prices!r}, spot_overhead={self.spot_overhead}, "
            f"sagemaker_spot_discount={self.sagemaker_spot_discount})"
        )


@dataclass(frozen=True)
class Shape:
    """``hosts`` × one machine shape of one provider."""

    provider: str
    machine: catalog.Machine
    hosts: int

    @property
    def devices(self) -> int:
        return self.machine.devices * self.hosts


@dataclass(frozen=True)
class CostOption:
    """One way to run the job, with its time and (when the price is known) its cost."""

    provider: str
    region: str
    machine_type: str
    accelerator: str
    hosts: int
    devices_per_host: int
    spot: bool
    efficiency: pricing.Efficiency
    examples_per_sec: float
    hours: float
    billed_hours: float
    usd_per_hour: float | None
    usd: float | None
    rate_basis: str
    price: pricing.Price | None
    marks: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return f"{self.hosts} × {self.machine_type}"

    @property
    def capacity(self) -> str:
        return "spot" if self.spot else "on-demand"

    @property
    def known(self) -> bool:
        """True when the option has a dollar figure (its price is known)."""
        return self.usd is not None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields; unknown prices are null, never a number."""
        price = pricing.price_summary(self.price) if self.price and self.price.known else None
        return {
            "provider": self.provider,
            "region": self.region,
            "machine_type": self.machine_type,
            "accelerator": self.accelerator,
            "hosts": self.hosts,
            "devices_per_host": self.devices_per_host,
            "capacity": self.capacity,
            "scaling_efficiency": self.efficiency.value,
            "scaling_basis": self.efficiency.basis,
            "examples_per_sec": round(self.examples_per_sec, 3),
            "hours": self.hours,
            "billed_hours": self.billed_hours,
            "usd_per_hour": self.usd_per_hour,
            "usd": self.usd,
            "rate_basis": self.rate_basis,
            "price": price,
            "marks": list(self.marks),
        }

    def __repr__(self) -> str:
        usd = "price unknown" if self.usd is None else f"${self.usd:.2f}"
        return (
            f"CostOption({self.provider} {self.region} {self.label} {self.capacity}, "
            f"{self.hours:.3g} h, {usd})"
        )


@dataclass(frozen=True)
class Estimate:
    """The ranked options, plus what was left out and why (shown under the table)."""

    options: list[CostOption]
    notes: list[str]
    work_examples: int
    work_basis: str
    throughput: Throughput
    settings: CostSettings


def estimate(
    spec: JobSpec,
    *,
    throughput: str | Throughput,
    providers: tuple[str, ...] = CLOUD_PROVIDERS,
    regions: tuple[str, ...] = (),
    settings: CostSettings | None = None,
) -> list[CostOption]:
    """Every option that fits ``spec``, cheapest first, with the cheapest, fastest and Pareto marks.

    Args:
        spec: the job; its replica count, batch and epochs define the work.
        throughput: ``"RATE@ACCELERATOR"``, a throughput JSON path, or a ``Throughput``.
        providers: which providers to price.
        regions: catalog regions to price; empty means each provider's region in the spec.
        settings: price catalog, speeds and spot assumptions; default the shipped files.

    Raises:
        SpecError: when the work cannot be derived or an input is malformed.
    """
    return report(
        spec, throughput=throughput, providers=providers, regions=regions, settings=settings
    ).options


def report(
    spec: JobSpec,
    *,
    throughput: str | Throughput,
    providers: tuple[str, ...] = CLOUD_PROVIDERS,
    regions: tuple[str, ...] = (),
    settings: CostSettings | None = None,
) -> Estimate:
    """Like ``estimate``, with the notes and inputs the CLI shows beside the table."""
    settings = settings or CostSettings()
    measured = parse_throughput(throughput)
    work, basis = work_examples(spec)
    region_notes = _region_notes(spec, providers, regions, settings.prices)
    shapes, notes = enumerate_shapes(spec, providers)
    job = Workload(work, measured, settings)
    options = [
        option
        for shape in shapes
        for region in _regions(spec, shape.provider, regions, settings.prices)
        for spot in (False, True)
        if (option := price_option(shape, region, spot, job)) is not None
    ]
    notes += _speed_notes(shapes, measured, settings.speeds) + region_notes
    return Estimate(rank(options), notes, work, basis, measured, settings)


def work_examples(spec: JobSpec) -> tuple[int, str]:
    """Examples the whole job processes, and how that number was derived."""
    training, res = spec.training, spec.resources
    if training.examples_per_epoch:
        work = training.examples_per_epoch * training.epochs
        return work, f"{training.examples_per_epoch:,} examples/epoch × {training.epochs} epochs"
    if training.steps_per_epoch:
        replicas = res.per_host * res.hosts
        batch = training.global_batch or (training.per_replica_batch or DEFAULT_PER_REPLICA_BATCH) * replicas
        work = training.steps_per_epoch * batch * training.epochs
        return work, f"{training.steps_per_epoch:,} steps × global batch {batch} × {training.epochs} epochs"
    raise SpecError(
        "training.examples_per_epoch is needed to estimate time and cost. "
        "Set training.examples_per_epoch (or training.steps_per_epoch)."
    )


def enumerate_shapes(spec: JobSpec, providers: tuple[str, ...]) -> tuple[list[Shape], list[str]]:
    """Every (machine, hosts) layout with the spec's replica count that its strategy can drive."""
    replicas = spec.resources.per_host * spec.resources.hosts
    shapes: list[Shape] = []
    notes: list[str] = []
    for provider in providers:
        for accelerator in catalog.accelerator_names():
            found, skipped = _layouts(spec, provider, accelerator, replicas)
            shapes += found
            notes += skipped
    return shapes, notes


def _layouts(spec: JobSpec, provider: str, accelerator: str, replicas: int) -> tuple[list[Shape], list[str]]:
    counts = catalog.device_counts(provider, accelerator)
    shapes, problems = [], []
    for devices in (d for d in counts if replicas % d == 0):
        machine = catalog.machine_for(provider, accelerator, devices)
        assert machine is not None  # devices comes from device_counts
        shape = Shape(provider, machine, replicas // devices)
        problem = _incompatible(spec, shape)
        if problem:
            problems.append(problem)
        else:
            shapes.append(shape)
    if counts and not shapes:
        # The last problem is the fewest-hosts layout's: the most telling one.
        why = (
            problems[-1] if problems else f"no layout gives {replicas} replicas ({_counts(counts)} per host)"
        )
        return [], [f"{accelerator} on {provider}: {why}"]
    return shapes, []


def _counts(counts: list[int]) -> str:
    return ", ".join(map(str, counts))


def _incompatible(spec: JobSpec, shape: Shape) -> str | None:
    """Why the spec's strategy cannot drive ``shape``, or None when it can."""
    machine = shape.machine
    if catalog.accelerators()[machine.accelerator].kind == "tpu" and shape.hosts > 1:
        return f"TPU jobs run on one host, and no single slice has {shape.devices} chips"
    if spec.training.strategy == "mirrored" and shape.hosts > 1:
        return "strategy 'mirrored' runs on one host"
    resources = spec.resources.model_copy(
        update={"accelerator": machine.accelerator, "per_host": machine.devices, "hosts": shape.hosts}
    )
    try:
        choose_strategy(spec.model_copy(update={"resources": resources}), machine.devices)
    except SpecError as exc:
        return str(exc)
    return None


@dataclass(frozen=True)
class Workload:
    """What every option of one estimate shares: the examples to process, the speed, the model."""

    work: int
    throughput: Throughput
    settings: CostSettings


def device_speed(accelerator: str, measured: Throughput, speeds: dict[str, float | None]) -> float | None:
    """One device's examples/s on ``accelerator``, scaled from the measured one; None if unknown."""
    if accelerator == measured.accelerator:
        return measured.examples_per_sec
    mine, theirs = speeds.get(accelerator), speeds.get(measured.accelerator)
    if mine is None or theirs is None:
        return None
    return measured.examples_per_sec * mine / theirs


def price_option(shape: Shape, region: str, spot: bool, job: Workload) -> CostOption | None:
    """Time and cost of ``shape`` in ``region``; None when its speed cannot be derived."""
    per_device = device_speed(shape.machine.accelerator, job.throughput, job.settings.speeds)
    if per_device is None:
        return None
    efficiency = pricing.scaling_efficiency(shape.machine, shape.hosts)
    speed = per_device * shape.devices * efficiency.value
    seconds = run_seconds(job.work, speed, job.settings.spot_overhead if spot else 0.0)
    price = job.settings.prices.lookup(
        shape.provider, region, shape.machine.machine_type, shape.machine.accelerator
    )
    rate, basis = host_rate(price, spot, job.settings)
    billed = billed_seconds(seconds, price.billing_increment_s if price else 1)
    return CostOption(
        provider=shape.provider,
        region=region,
        machine_type=shape.machine.machine_type,
        accelerator=shape.machine.accelerator,
        hosts=shape.hosts,
        devices_per_host=shape.machine.devices,
        spot=spot,
        efficiency=efficiency,
        examples_per_sec=speed,
        hours=seconds / 3600,
        billed_hours=billed / 3600,
        usd_per_hour=None if rate is None else rate * shape.hosts,
        usd=None if rate is None else charge(billed, rate, shape.hosts),
        rate_basis=basis,
        price=price,
    )


def run_seconds(work: int, examples_per_sec: float, overhead: float) -> float:
    """Wall-clock seconds to process ``work`` examples, plus the spot overhead fraction."""
    return work / examples_per_sec * (1 + overhead)


def charge(billed: int, usd_per_host_hour: float, hosts: int) -> float:
    """Dollars for ``billed`` seconds of ``hosts`` hosts (each host is billed)."""
    return billed / 3600 * usd_per_host_hour * hosts


def billed_seconds(seconds: float, increment: int) -> int:
    """Seconds billed: rounded up to the billing increment (Vertex 30 s, SageMaker 1 s).

    Example:
    >>> billed_seconds(31.0, 30)
    60
    """
    return math.ceil(round(seconds / increment, 9)) * increment


def host_rate(price: pricing.Price | None, spot: bool, settings: CostSettings) -> tuple[float | None, str]:
    """$/h of one host and where it comes from; (None, why) when the price is unknown."""
    if price is None or price.on_demand is None:
        return None, "price unknown"
    flag = "est." if price.is_estimate else "list"
    if not spot:
        return price.on_demand, flag
    if price.spot is not None:
        return price.spot, flag
    if price.provider == "sagemaker":
        discount = settings.sagemaker_spot_discount
        return price.on_demand * (1 - discount), f"assumed: on-demand × (1 − {discount:.0%})"
    return None, "spot price unknown"


def dollars(usd: float) -> str:
    """``$0.0123`` below a dollar (small jobs stay visible), else ``$1,234.56``."""
    return f"${usd:.4f}" if usd < 1 else f"${usd:,.2f}"


def duration(seconds: float) -> str:
    """Seconds as ``12s``, ``4.5m``, ``3.2h`` or ``2.1d``."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.1f}s" if seconds < 10 else f"{seconds:.0f}s"


def rank(options: list[CostOption]) -> list[CostOption]:
    """Options cheapest first (unknown prices last, by time), marked cheapest, fastest and pareto."""
    priced = [o for o in options if o.known]
    front = {id(o) for o in pareto_front(priced)}
    cheapest = min(priced, key=lambda o: (o.usd, o.hours), default=None)
    fastest = min(priced, key=lambda o: (o.hours, o.usd), default=None)

    def marked(option: CostOption) -> CostOption:
        marks = [
            name
            for name, hit in (
                ("cheapest", option is cheapest),
                ("fastest", option is fastest),
                ("pareto", id(option) in front),
            )
            if hit
        ]
        return replace(option, marks=tuple(marks))

    ordered = sorted(options, key=lambda o: (not o.known, o.usd or 0.0, o.hours, o.provider, o.label))
    return [marked(o) for o in ordered]


def pareto_front(options: list[CostOption]) -> list[CostOption]:
    """The priced options no other option beats on both hours and dollars."""
    priced = [o for o in options if o.known]
    return [o for o in priced if not any(_dominates(other, o) for other in priced)]


def _dominates(a: CostOption, b: CostOption) -> bool:
    assert a.usd is not None and b.usd is not None
    return a.hours <= b.hours and a.usd <= b.usd and (a.hours < b.hours or a.usd < b.usd)


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


def _regions(
    spec: JobSpec, provider: str, regions: tuple[str, ...], prices: pricing.PriceCatalog
) -> list[str]:
    if not regions:
        return [spec.vertex.region if provider == "vertex" else spec.sagemaker.region]
    return [r for r in regions if r in prices.regions(provider)]


def _region_notes(
    spec: JobSpec, providers: tuple[str, ...], regions: tuple[str, ...], prices: pricing.PriceCatalog
) -> list[str]:
    known = prices.regions()
    for region in regions:
        if region not in known:
            raise SpecError(
                f"--region {region!r} has no prices in the catalog.{did_you_mean(region, known, 'regions')}"
            )
    notes = []
    for provider in providers:
        for region in _regions(spec, provider, regions, prices):
            if region not in prices.regions(provider):
                notes.append(
                    f"{provider} {region}: no prices in the catalog. "
                    f"Run: cloudtrain prices refresh --provider {_cloud(provider)} --region {region}"
                )
    return notes


def _cloud(provider: str) -> str:
    return {"vertex": "gcp", "sagemaker": "aws"}[provider]


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
