"""``cost`` (price a job on every provider and shape) and ``prices refresh`` (update the catalog)."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC
from typing import TYPE_CHECKING, Any

import click

from cloudtrain import cost
from cloudtrain.cli import tables
from cloudtrain.cli.options import RegistryChoice, plot_option, profile_option, throughput_option
from cloudtrain.cost import budget, inputs, notes
from cloudtrain.cost.compare import billed
from cloudtrain.errors import SpecError
from cloudtrain.specfile import load_spec

if TYPE_CHECKING:
    from cloudtrain.cost.hourly import HourlyPrice, PriceList
    from cloudtrain.cost.plans import PlanOffers
    from cloudtrain.planning import Plan
    from cloudtrain.provider.base import PlanOffer
    from cloudtrain.spec import JobSpec

BILLED_CHOICE = RegistryChoice(billed)


def _sources() -> tuple[str, ...]:
    from cloudtrain.cost import refresh

    return refresh.names()


@click.command("cost")
@click.argument("job", type=click.Path(dir_okay=False))
@throughput_option(required=False)
@click.option("--provider", "-p", "providers", type=BILLED_CHOICE, multiple=True, help="Only this provider.")
@click.option("--region", "regions", multiple=True, help="Catalog region(s). Default: the spec's regions.")
@click.option("--max-hours", type=click.FloatRange(min=0, min_open=True), help="Leave out slower options.")
@click.option(
    "--max-cost", type=click.FloatRange(min=0, min_open=True), help="Leave out dearer options (USD)."
)
@click.option(
    "--speeds",
    type=click.Path(dir_okay=False),
    help="CSV accelerator,relative_speed overriding the shipped table.",
)
@click.option("--spot-overhead", type=float, help="Assumed extra time on spot (0.1 = 10%).")
@click.option(
    "--spot-discount",
    type=float,
    help="Assumed spot discount where a provider publishes no spot price (0.6 = 60% off). "
    "Without it, those spot rows show the on-demand rate as an upper bound.",
)
@click.option(
    "--prices", "prices_file", type=click.Path(dir_okay=False), help="Price CSV (from prices refresh)."
)
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a spec field.")
@profile_option
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@plot_option("hours against dollars")
@click.option(
    "--plan-offers",
    is_flag=True,
    help="Also search the capacity providers sell ahead for a time window (training plans) for each "
    "shape, for limits.max_runtime, and list their upfront fees (calls the provider: needs credentials).",
)
def cost_command(job: str, **options: Any) -> None:
    """Price JOB on every billed provider and shape that fits it, before a cent is spent.

    Every option keeps the spec's replica count (so the global batch and learning rate
    are unchanged): one big host or several smaller ones, TPU slices where the strategy
    allows, on-demand and spot. Unknown prices are listed, never guessed.

    Without --throughput: each shape's price per hour, by accelerator: on-demand, spot,
    flex-start and on a reservation (already paid for: 0, with what it holds per hour).
    With a measured speed: the time and dollars of the whole job, cheapest first (this
    needs training.examples_per_epoch or steps_per_epoch in the spec).

    \b
    Examples:
      cloudtrain cost job.yaml                                       price per hour of every shape
      cloudtrain cost job.yaml --throughput 1200@a100-40gb
      cloudtrain cost job.yaml -t outputs/latest.json --provider vertex --json
      cloudtrain cost job.yaml -t 300@t4 --max-cost 50 --plot cost.png
      cloudtrain cost job.yaml --provider sagemaker --plan-offers      training plans' upfront fees
    """
    if options["throughput"] is None:
        _hourly_command(job, options)
        return
    if options["plan_offers"]:
        raise SpecError(
            "--plan-offers lists the offerings beside each shape's hourly prices: leave out --throughput "
            "(a plan's upfront fee does not depend on the job's speed)."
        )
    found = cost.select(
        cost.report(
            load_spec(job, options["overrides"], profile=options["profile"]),
            throughput=options["throughput"],
            providers=tuple(options["providers"]),
            regions=tuple(options["regions"]),
            settings=_settings(options),
        ),
        max_hours=options["max_hours"],
        max_cost=options["max_cost"],
    )
    if options["plot"]:
        from cloudtrain.cost.plot import plot

        found.notes.append(f"Plot written to {plot(found.options, options['plot'])}")
    click.echo(json.dumps(as_json(found), indent=2) if options["as_json"] else table(found))


def _hourly_command(job: str, options: dict[str, Any]) -> None:
    """``cost JOB`` without a speed: every shape's price per hour; the options that rank by total need one."""
    needs_speed = [
        f"--{name.replace('_', '-')}" for name in ("max_hours", "max_cost", "plot") if options[name]
    ]
    if needs_speed:
        verb = "needs" if len(needs_speed) == 1 else "need"
        raise SpecError(
            f"{' and '.join(needs_speed)} {verb} the time and total cost of each option, so a measured "
            "speed: add --throughput RATE@ACCELERATOR (e.g. -t 300@t4) or a run's cloudtrain-throughput.json."
        )
    from cloudtrain.cost.hourly import price_list

    spec = load_spec(job, options["overrides"], profile=options["profile"])
    listed = price_list(
        spec,
        providers=tuple(options["providers"]),
        regions=tuple(options["regions"]),
        settings=_settings(options),
    )
    offers = _plan_offers(spec, listed) if options["plan_offers"] else None
    if options["as_json"]:
        found = hourly_json(listed) | ({"plan_offers": plans_json(offers)} if offers else {})
        click.echo(json.dumps(found, indent=2))
        return
    click.echo(hourly_table(listed))
    if offers is not None:
        click.echo("\n" + plans_table(offers))
    if spec.placement is not None:
        from cloudtrain.cli import candidates_view

        click.echo()
        candidates_view.echo(spec)


def _plan_offers(spec: JobSpec, listed: PriceList) -> PlanOffers:
    from cloudtrain.cost.plans import plan_offers

    return plan_offers(spec, listed)


PLAN_COLUMNS = (
    tables.Column("provider"),
    tables.Column("shape"),
    tables.Column("hours", justify="right"),
    tables.Column("upfront", justify="right"),
    tables.Column("per hour", priority=2, justify="right"),
    tables.Column("window (UTC)", priority=3),
    tables.Column("offering", priority=4, wrap=True),
)


def plans_table(found: PlanOffers, *, width: int | None = None) -> str:
    """The plan offerings as a table, cheapest first, and what was left out."""
    title = f"Capacity bought ahead for {found.hours} h (limits.max_runtime), paid upfront:"
    rows = [
        [
            offer.provider,
            f"{offer.hosts} × {offer.machine_type}",
            f"{offer.hours:g}",
            f"{offer.upfront:,.2f} {offer.currency}",
            f"{offer.upfront / offer.hours:,.2f} {offer.currency}" if offer.hours else "-",
            _window(offer),
            offer.offer_id,
        ]
        for offer in found.offers
    ]
    shown = tables.render(PLAN_COLUMNS, rows, width=width) if rows else "No plan offerings for these shapes."
    return "\n".join([title, shown, *(f"Note: {note}" for note in found.notes)])


def _window(offer: PlanOffer) -> str:
    if offer.start is None or offer.end is None:
        return "-"
    return f"{offer.start.astimezone(UTC):%Y-%m-%d %H:%M} to {offer.end.astimezone(UTC):%Y-%m-%d %H:%M}"


def plans_json(found: PlanOffers) -> dict[str, Any]:
    """The plan offerings as JSON: one object each (times in ISO 8601), and the notes."""
    offers = [
        {
            **{key: value for key, value in asdict(offer).items() if key not in ("start", "end")},
            "start": offer.start.isoformat() if offer.start else None,
            "end": offer.end.isoformat() if offer.end else None,
        }
        for offer in found.offers
    ]
    return {"hours": found.hours, "offers": offers, "notes": found.notes}


def _settings(options: dict[str, Any]) -> cost.CostSettings:
    defaults = cost.CostSettings()
    return cost.CostSettings(
        prices=inputs.read_prices(options["prices_file"]) if options["prices_file"] else defaults.prices,
        speeds=inputs.read_speeds(options["speeds"]),
        spot_overhead=_given(options["spot_overhead"], defaults.spot_overhead),
        spot_discount=_given(options["spot_discount"], defaults.spot_discount),
    )


def _given(value: float | None, default: float) -> float:
    return default if value is None else value


# What stays on a narrow terminal: the rank, where, what, how long and how much. The
# price's source wraps rather than drops; the marks and the rate go before the rest.
COLUMNS = (
    tables.Column("#", justify="right"),
    tables.Column("provider"),
    tables.Column("region", priority=4),
    tables.Column("shape"),
    tables.Column("accel", priority=6),
    tables.Column("dev", priority=7, justify="right"),
    tables.Column("capacity"),
    tables.Column("eff", priority=8, justify="right"),
    tables.Column("time", justify="right"),
    tables.Column("USD", justify="right"),
    tables.Column("USD/h", priority=3, justify="right"),
    tables.Column("price", priority=5, wrap=True),
    tables.Column("as of", priority=9),
    tables.Column("marks", priority=2),
)


def table(found: cost.Estimate, *, width: int | None = None) -> str:
    """The ranked options as a table ``width`` wide (None: the terminal's), then the inputs behind them."""
    rows = [_row(i, o) for i, o in enumerate(found.options, 1)]
    shown = tables.render(COLUMNS, rows, width=width) if rows else "No option fits the filters."
    return "\n".join([shown, "", *notes.footer(found)])


def _row(rank: int, o: cost.CostOption) -> tuple[str, ...]:
    known = o.price is not None and o.price.known
    return (
        str(rank),
        o.provider,
        o.region,
        o.label,
        o.accelerator,
        str(o.hosts * o.devices_per_host),
        o.capacity,
        f"{o.efficiency.value:.2f}{notes.KIND_MARKS.get(o.efficiency.kind, '')}",
        cost.duration(o.hours * 3600),
        "price unknown" if o.usd is None else f"{'≤ ' if o.upper_bound else ''}{cost.dollars(o.usd)}",
        "-" if o.usd_per_hour is None else cost.dollars(o.usd_per_hour),
        o.rate_basis,
        o.price.as_of if known and o.price else "-",
        ", ".join(o.marks),
    )


# The price list: which accelerator, which shape, what an hour costs; where and as of when drop first.
HOURLY_COLUMNS = (
    tables.Column("accel"),
    tables.Column("dev", priority=5, justify="right"),
    tables.Column("provider"),
    tables.Column("region", priority=3),
    tables.Column("shape"),
    tables.Column("on-demand USD/h", justify="right"),
    tables.Column("spot USD/h", justify="right"),
    tables.Column("flex USD/h", priority=2, justify="right"),
    tables.Column("reservation USD/h", priority=2, justify="right"),
    tables.Column("price", priority=4, wrap=True),
    tables.Column("as of", priority=6),
)


def hourly_table(listed: PriceList, *, width: int | None = None) -> str:
    """Every shape's hourly price as a table ``width`` wide (None: the terminal's), then where they come from."""
    rows = [_hourly_row(row) for row in listed.rows]
    shown = tables.render(HOURLY_COLUMNS, rows, width=width) if rows else "No shape fits the job."
    return "\n".join([shown, "", *notes.hourly_footer(listed)])


def _hourly_row(row: HourlyPrice) -> tuple[str, ...]:
    known = row.price is not None and row.price.known
    bound = "≤ " if row.spot_basis == cost.option.SPOT_UPPER_BOUND else ""
    return (
        row.accelerator,
        str(row.devices),
        row.provider,
        row.region,
        row.label,
        "unknown" if row.on_demand is None else cost.dollars(row.on_demand),
        "unknown" if row.spot is None else f"{bound}{cost.dollars(row.spot)}",
        _mode_cell(row.flex, row.flex_basis),
        _reservation_cell(row),
        row.rate_basis,
        row.price.as_of if known and row.price else "-",
    )


def _mode_cell(usd: float | None, basis: str) -> str:
    """A capacity mode's dollars, ``unknown`` where the rate is, ``-`` where the provider does not offer it."""
    if usd is not None:
        return "$0" if usd == 0 else cost.dollars(usd)
    return "-" if basis == cost.option.NOT_OFFERED else "unknown"


def _reservation_cell(row: HourlyPrice) -> str:
    """A reservation's marginal dollars, and what the reservation itself costs per hour (its on-demand rate)."""
    cell = _mode_cell(row.reservation, row.reservation_basis)
    if row.reservation == 0 and row.on_demand is not None:
        return f"{cell} (holds {cost.dollars(row.on_demand)})"
    return cell


def hourly_json(listed: PriceList) -> dict[str, Any]:
    """The price list as JSON: one object per shape and region; unknown prices are null."""
    return {
        "replicas": listed.replicas,
        "prices": [row.to_dict() for row in listed.rows],
        "notes": listed.notes,
    }


def as_json(found: cost.Estimate) -> dict[str, Any]:
    """The estimate as JSON: options, inputs and assumptions; unknown prices are null."""
    settings = found.settings
    return {
        "work_examples": found.work_examples,
        "work_basis": found.work_basis,
        "throughput": {
            "examples_per_sec": found.throughput.examples_per_sec,
            "accelerator": found.throughput.accelerator,
            "source": found.throughput.source,
        },
        "assumptions": {
            "spot_interruption_overhead": settings.spot_overhead,
            "spot_discount": settings.spot_discount,
            "relative_speeds": settings.speeds,
        },
        "options": [o.to_dict() for o in found.options],
        "notes": found.notes,
    }


@click.group("prices")
def prices_group() -> None:
    """The managed-training price catalog: see where prices come from, refresh them."""


@prices_group.command("refresh")
@click.option(
    "--provider",
    "sources",
    type=RegistryChoice(_sources),
    multiple=True,
    help="Provider whose prices to fetch (catalog/price_sources.csv). Default: all.",
)
@click.option("--region", "regions", multiple=True, help="Regions to fetch. Default: the catalog's regions.")
@click.option("--out", type=click.Path(dir_okay=False), default="prices.csv", show_default=True)
def refresh(sources: tuple[str, ...], regions: tuple[str, ...], out: str) -> None:
    """Fetch current prices (AWS Price List API, Google Cloud Billing Catalog) into a price CSV.

    AWS needs any IAM identity (aws configure). Google needs GOOGLE_API_KEY or
    application-default credentials. Use the file with cloudtrain cost --prices FILE.

    \b
    Example:
      cloudtrain prices refresh --provider sagemaker --region us-east-1 --out prices.csv
    """
    from cloudtrain.cost import refresh as prices

    named = [prices.source_named(name) for name in sources]
    for _, note in named:
        if note:
            click.echo(f"Note: {note}", err=True)
    chosen = tuple(dict.fromkeys(source for source, _ in named)) or prices.SOURCES
    written = prices.refresh(sources=chosen, regions=regions, out=out)
    click.echo(f"Wrote {written.rows} prices ({written.unknown} unknown) to {written.path}", err=True)


def budget_guard(planned: Plan, throughput: str | None, *, dry_run: bool, force: bool, strict: bool) -> None:
    """Show submit's estimate (or worst case) on stderr; refuse (BudgetError, exit 3) unless forced.

    Over ``limits.max_cost_usd`` is refused, and with ``strict`` so is a limit that an
    unknown price leaves unchecked. A dry run only shows.
    """
    check = budget.check_budget(planned, throughput)
    for line in check.lines():
        click.echo(line, err=True)
    if not dry_run:
        budget.enforce_budget(check, force=force, strict=strict)
