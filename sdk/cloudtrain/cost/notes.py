"""The words under the cost table: the inputs and assumptions behind the numbers, read from the catalog.

Every fact here comes from a catalog row or from the options shown: the scaling
efficiencies and their link names (``scaling.csv``), which providers publish no spot
price and their billing increments (the price rows), how estimated prices were made
(``price_sources.csv``), and the providers' own titles (the registry).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from cloudtrain.cost import inputs
from cloudtrain.cost.option import NOT_OFFERED
from cloudtrain.messages import counted
from cloudtrain.provider import registry

if TYPE_CHECKING:
    from cloudtrain.cost.compare import Estimate
    from cloudtrain.cost.hourly import HourlyPrice, PriceList
    from cloudtrain.cost.inputs import CostSettings, Efficiency, Price

# What to give ``cost`` for time and total dollars, wherever it has no speed to go on.
MEASURE_HINT = (
    "For time and total cost, give a measured speed: -t RATE@ACCELERATOR (examples/s of one device, "
    "e.g. -t 300@t4), the cloudtrain-throughput.json a run writes beside its model, or the output of "
    "cloudtrain bench JOB --json."
)


class Priced(Protocol):
    """A row of a table with a price: a ranked option, or a shape's hourly price."""

    @property
    def provider(self) -> str: ...

    @property
    def rate_basis(self) -> str: ...

    @property
    def price(self) -> Price | None: ...


# The capacity modes the footer explains, as its lines name them.
CAPACITY_WORDS = {"flex": "Flex", "reservation": "Reservation", "plan": "Training plan"}
# How a table marks an efficiency that is not the catalog's assumption.
KIND_MARKS = {inputs.MEASURED: " m", inputs.EXTRAPOLATED: " x"}


def footer(found: Estimate) -> list[str]:
    """The inputs and assumptions a reader needs to trust (or redo) the numbers."""
    measured, options = found.throughput, found.options
    return [
        f"Work: {found.work_examples:,} examples ({found.work_basis}).",
        f"Speed: {measured.examples_per_sec:g} examples/s on 1 × {measured.accelerator} ({measured.source}), "
        f"{relative_speeds(found)} × devices × eff.",
        scaling(),
        *measured_scaling(found),
        spot(found),
        estimates(options),
        billing(options),
        *(f"Note: {note}" for note in found.notes),
    ]


def relative_speeds(found: Estimate) -> str:
    """How the measured speed reaches each accelerator of the table: as measured, or by its relative speed.

    The measured accelerator needs no ratio, and may have none (``cpu``: no CPU-to-GPU
    ratio is meaningful), so it reads "as measured" rather than an empty cell.
    """
    measured, speeds = found.throughput.accelerator, found.settings.speeds
    used = sorted({o.accelerator for o in found.options} - {measured})
    if not used:
        return "as measured"
    ratios = ", ".join(f"{a} {speeds[a]:g}" for a in used)
    return f"{measured} as measured, the others scaled by relative speed (catalog/speeds.csv: {ratios})"


def scaling() -> str:
    """The scaling-efficiency legend, from ``catalog/scaling.csv``.

    Example:
    >>> scaling()
    'eff = assumed scaling efficiency: 0.90 NVLink/ICI, 0.80 PCIe within a host; across hosts the slower of that and 0.78 EFA, 0.72-0.78 GPUDirect, 0.60 Ethernet (catalog/scaling.csv).'
    """
    table = inputs.scaling()
    within = [e for (scope, link), e in table.items() if scope == "intra" and link != "none"]
    across = [e for (scope, _), e in table.items() if scope == "inter"]
    return (
        f"eff = assumed scaling efficiency: {_links(within)} within a host; "
        f"across hosts the slower of that and {_links(across)} (catalog/scaling.csv)."
    )


def measured_scaling(found: Estimate) -> list[str]:
    """The legend of the measured (m) and extrapolated (x) efficiencies, when the throughput carries one."""
    scaling = found.throughput.scaling
    if scaling is None:
        return []
    return [
        f"eff m = measured by bench ({scaling.efficiency:.2f} on {scaling.replicas} replicas, {scaling.hosts} host(s)); "
        "x = extrapolated from it: the assumption for that layout × measured / assumed for the measured one."
    ]


def _links(efficiencies: list[Efficiency]) -> str:
    """``0.90 NVLink/ICI, 0.80 PCIe``: each link's value (or range), fastest first."""
    values: dict[str, list[float]] = {}
    for efficiency in efficiencies:
        values.setdefault(efficiency.label, []).append(efficiency.value)
    labels: dict[str, list[str]] = {}
    for label, found in sorted(values.items(), key=lambda item: -max(item[1])):
        low, high = min(found), max(found)
        labels.setdefault(f"{low:.2f}" if low == high else f"{low:.2f}-{high:.2f}", []).append(label)
    return ", ".join(f"{text} {'/'.join(names)}" for text, names in labels.items())


def hourly_footer(listed: PriceList) -> list[str]:
    """What the hourly prices are, where they come from, and what ``cost`` needs to rank by total."""
    replicas = counted(listed.replicas, "replica")
    line = f"Per hour for all the hosts of each shape (the job's {replicas}), catalog/prices.csv"
    assumption = _no_spot_price(listed.settings, listed.rows, "its spot prices show")
    return [
        f"{line}." if not assumption else f"{line}; {assumption}",
        *capacity_bases(listed.rows),
        estimates(listed.rows),
        billing(listed.rows),
        MEASURE_HINT.replace("JOB", "job.yaml"),
        *(f"Note: {note}" for note in listed.notes),
    ]


def capacity_bases(rows: Sequence[HourlyPrice]) -> list[str]:
    """Where the flex and reservation columns (and a training plan) come from, per provider that offers them
    (``capacity_rates.csv``)."""
    lines = []
    for mode, column in (
        ("flex", "flex_basis"),
        ("reservation", "reservation_basis"),
        ("plan", "plan_basis"),
    ):
        bases = dict.fromkeys(
            (row.provider, getattr(row, column))
            for row in rows
            if getattr(row, column) not in (NOT_OFFERED, "price unknown")
        )
        lines += [f"{CAPACITY_WORDS[mode]} on {title(provider)}: {basis}." for provider, basis in bases]
    return lines


def spot(found: Estimate) -> str:
    """The spot assumptions: the interruption overhead, and the discount where no spot price exists."""
    line = f"Spot: assumed +{found.settings.spot_overhead:.0%} time for interruptions"
    assumption = _no_spot_price(found.settings, found.options, "those spot rows show")
    return f"{line}; {assumption}" if assumption else f"{line}."


def _no_spot_price(settings: CostSettings, rows: Sequence[Priced], shown: str) -> str:
    """How spot is priced where a provider publishes no spot price; empty when every one does.

    ``shown``: what shows the bound, e.g. ``those spot rows show``.
    """
    priced = providers([row for row in rows if row.price is not None and row.price.known])
    assumed = [title(p) for p in priced if not settings.prices.publishes_spot(p)]
    if not assumed:
        return ""
    verb = "publishes" if len(assumed) == 1 else "publish"
    if settings.spot_discount == 0:
        return (
            f"{' and '.join(assumed)} {verb} no spot price, so {shown} the "
            "on-demand rate as an upper bound (≤; --spot-discount assumes a discount)."
        )
    return (
        f"{' and '.join(assumed)} {verb} no spot price, so spot = on-demand × "
        f"(1 − {settings.spot_discount:.0%}) (assumed; --spot-discount)."
    )


def estimates(options: Sequence[Priced]) -> str:
    """The legend of the price column, naming how each provider's estimated prices were made."""
    kinds = [_estimate_kind(p) for p in providers([o for o in options if o.rate_basis == "est."])]
    used = f"; est. = estimate: {'; '.join(kinds)}" if kinds else ""
    return f"price: list = published price{used} (each row's formula: catalog/prices.csv, --json)."


def _estimate_kind(provider: str) -> str:
    source = inputs.source_of(provider)
    kind = inputs.price_sources()[source].get("estimate") if source else None
    return kind or f"{title(provider)}: see each row's formula"


def billing(options: Sequence[Priced]) -> str:
    """Each shown provider's billing increment, from its price rows, and what no price covers."""
    parts = []
    for provider in providers(options):
        increments = sorted(
            {o.price.billing_increment_s for o in options if o.provider == provider and o.price}
        )
        if increments:
            parts.append(f"{title(provider)} {_increments(increments)}")
    billed = f"Billing: {', '.join(parts)}. " if parts else ""
    return f"{billed}Storage, egress, image pull and provisioning time are not included."


def _increments(seconds: list[int]) -> str:
    if seconds == [1]:
        return "per second"
    return f"in {' or '.join(f'{s} s' for s in seconds)} increments"


def providers(options: Sequence[Priced]) -> list[str]:
    """The providers of ``options``, in the registry's order."""
    present = {o.provider for o in options}
    return [name for name in registry.names() if name in present]


def title(provider: str) -> str:
    """The provider's own name for prose (its ``title``), from the registry."""
    return registry.get(provider).title
