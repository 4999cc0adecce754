"""Capacity bought ahead, priced: the plan offerings for the shapes a job fits (``cost --plan-offers``).

A training plan is paid upfront for a window, so it has no hourly rate in the catalog;
what it costs is the fee of an offering the provider has now for that shape and the
job's ``limits.max_runtime`` (rounded up to whole hours). Each provider that sells
capacity so (``provider.base.OffersPlans``) is asked once per shape; one that cannot be
asked (no credentials, a refused call) is left out with a note, as ``list`` does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cloudtrain.errors import CloudtrainError
from cloudtrain.provider import registry
from cloudtrain.provider.base import OffersPlans, PlanOffer

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cloudtrain.cost.hourly import PriceList
    from cloudtrain.spec import JobSpec


@dataclass(frozen=True)
class PlanOffers:
    """The offerings found, cheapest first, for ``hours``; and each provider left out, with why."""

    offers: list[PlanOffer]
    notes: list[str]
    hours: int


def plan_offers(spec: JobSpec, listed: PriceList, *, clients: Mapping[str, Any] | None = None) -> PlanOffers:
    """The plan offerings of every shape in ``listed`` whose provider sells plans.

    ``clients`` gives a provider's clients by its name (tests, custom transports).
    """
    hours = max(1, math.ceil(spec.limits.max_runtime / 3600))
    found: list[PlanOffer] = []
    notes: list[str] = []
    failed: set[str] = set()
    for name, machine_type, hosts in dict.fromkeys(
        (r.provider, r.machine_type, r.hosts) for r in listed.rows
    ):
        provider = registry.get(name)
        if not isinstance(provider, OffersPlans) or name in failed:
            continue
        try:
            found += provider.plan_offers(
                spec, machine_type, hosts, hours=hours, clients=(clients or {}).get(name)
            )
        except CloudtrainError as error:
            failed.add(name)
            notes.append(f"{registry.get(name).title} plan offerings: skipped: {error}")
    return PlanOffers(sorted(found, key=lambda offer: offer.upfront), notes, hours)
