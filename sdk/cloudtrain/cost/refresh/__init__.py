"""``cloudtrain prices refresh``: rebuild price rows from the providers' price APIs.

One module per price source: ``aws`` (the AWS Price List API) and ``gcp`` (Google's
Cloud Billing Catalog). Which provider each source prices, and what it asks its API
for, are rows of ``catalog/price_sources.csv``. Which source a region belongs to is
read from the catalog's price rows (the provider that has rows there), never guessed
from how the region is spelled.

Every machine of the served provider gets a row per region; what the API did not
return stays unknown (empty), with the reason in its source column.

Example:
>>> split_regions(("us-east-1", "europe-west4"))
{'aws': ('us-east-1',), 'gcp': ('europe-west4',)}
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cloudtrain.cost import inputs
from cloudtrain.cost.inputs import Price
from cloudtrain.cost.refresh import aws, gcp
from cloudtrain.errors import SpecError

FETCHERS: dict[str, Callable[..., list[Price]]] = {aws.SOURCE: aws.fetch, gcp.SOURCE: gcp.fetch}
SOURCES = tuple(FETCHERS)


@dataclass(frozen=True)
class Written:
    """What ``refresh`` wrote: the file, its rows and how many prices stayed unknown."""

    path: Path
    rows: int
    unknown: int


def refresh(
    *,
    sources: Iterable[str] = SOURCES,
    regions: Iterable[str] = (),
    out: str | Path,
    clients: dict[str, Any] | None = None,
    today: datetime.date | None = None,
) -> Written:
    """Fetch prices from ``sources`` ("aws", "gcp") for ``regions`` and write them to ``out``.

    Args:
        sources: the price APIs to ask; default all of them.
        regions: regions of any source, mixed; a source none of them belongs to is not
            asked. Default: every region the catalog has prices for.
        clients: ``{"aws": boto3 pricing client, "gcp": gcp.BillingCatalog}`` to use
            instead of the defaults (tests, proxies).
        today: the as-of date written on every row; default today.

    Raises:
        SpecError: a region no catalog row names, with several sources to choose from.
        CredentialsError: a source needs credentials that are not configured.
        ProviderError: the price API refused or failed a call.
    """
    chosen, regions = tuple(sources), tuple(regions)
    clients = clients or {}
    by_source = split_regions(regions, chosen)
    date = (today or datetime.date.today()).isoformat()
    rows: list[Price] = []
    for source in chosen:
        wanted = by_source[source] if regions else tuple(inputs.prices().regions(provider_of(source)))
        if wanted:
            rows += FETCHERS[source](wanted, client=clients.get(source), as_of=date)
    path = inputs.write_prices(rows, out)
    return Written(path, len(rows), sum(1 for r in rows if not r.known))


def source_named(name: str) -> tuple[str, str | None]:
    """The price source for ``name``, a provider (``sagemaker``) or a source (``aws``), and a note.

    Every other command names providers; the sources' own names still work, with a note
    saying the provider's.

    Example:
    >>> source_named("sagemaker")
    ('aws', None)
    >>> source_named("gcp")[1]
    '--provider gcp names the price source; say --provider vertex, as every other command does.'
    """
    if name in FETCHERS:
        return (
            name,
            f"--provider {name} names the price source; say --provider {provider_of(name)}, as every other command does.",
        )
    return next(source for source in SOURCES if provider_of(source) == name), None


def names() -> tuple[str, ...]:
    """What ``prices refresh --provider`` takes: each priced provider's name, then the sources' own."""
    return (*(provider_of(source) for source in SOURCES), *SOURCES)


def provider_of(source: str) -> str:
    """The provider whose prices ``source`` fetches (``price_sources.csv``)."""
    return inputs.price_sources()[source]["provider"]


def split_regions(regions: tuple[str, ...], sources: tuple[str, ...] = SOURCES) -> dict[str, tuple[str, ...]]:
    """``regions`` by the source whose provider has price rows there.

    A region no price row names can only be fetched from a source asked for by name.

    Raises:
        SpecError: naming the region and the command that fetches it.
    """
    owner = {region: source for source in sources for region in inputs.prices().regions(provider_of(source))}
    for region in regions:
        if region not in owner and len(sources) == 1:
            owner[region] = sources[0]
        elif region not in owner:
            raise SpecError(
                f"--region {region!r} is in no price row, so the source that prices it is unknown. "
                f"Name it: cloudtrain prices refresh --provider {'|'.join(map(provider_of, sources))} --region {region}"
            )
    return {source: tuple(r for r in regions if owner[r] == source) for source in sources}
