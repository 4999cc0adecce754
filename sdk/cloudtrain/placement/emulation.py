"""A placement on this machine: each candidate runs as its provider would, and may be refused as it would be.

``cloudtrain submit JOB --provider local --emulate placement`` tries the spec's candidates
in order, each one emulated by the local provider (``Local(emulate=PROVIDER)``).
``--fault capacity@PROVIDER:REGION`` makes that provider find no capacity in that region
(its job fails as the service's would, in its words), ``--fault quota@PROVIDER:REGION``
leaves it no quota there (the preflight reads a limit of 0, and a create is refused with
the service's own error); both may repeat. The rest of the trying is the placement's own.

Example:
>>> refusals, rest = split_faults(("capacity@vertex:us-central1", "worker:0@epoch:1"))
>>> refusals, rest
({('vertex', 'us-central1'): 'capacity'}, ('worker:0@epoch:1',))
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from cloudtrain.errors import SpecError
from cloudtrain.placement import preflight
from cloudtrain.placement.preflight import Check
from cloudtrain.provider.quotas import QuotaReading

if TYPE_CHECKING:
    from cloudtrain.placement.resolve import Resolved

EMULATE = "placement"
REFUSAL = re.compile(r"(?P<kind>capacity|quota)@(?P<provider>[a-z][a-z0-9_-]*):(?P<region>[a-z][a-z0-9-]*)")

Refusals = dict[tuple[str, str], str]


def split_faults(faults: Sequence[str]) -> tuple[Refusals, tuple[str, ...]]:
    """The refusals among ``faults`` (``capacity@P:R``, ``quota@P:R``), by (provider, region); and the rest.

    Raises:
        SpecError: the same provider and region refused twice.
    """
    refusals: Refusals = {}
    rest = []
    for fault in faults:
        found = REFUSAL.fullmatch(fault)
        if found is None:
            rest.append(fault)
            continue
        where = (found["provider"], found["region"])
        if where in refusals:
            raise SpecError(
                f"--fault {fault}: {where[0]}:{where[1]} is refused already ({refusals[where]}@)."
            )
        refusals[where] = found["kind"]
    return refusals, tuple(rest)


def check_refusals(refusals: Refusals, candidates: Sequence[Resolved]) -> None:
    """Refusals must name a candidate's provider and region: one that names none would never fire.

    Raises:
        SpecError: naming the refusal and the candidates there are.
    """
    places = {(c.plan.provider, c.plan.region) for c in candidates}
    for (provider, region), kind in refusals.items():
        if (provider, region) not in places:
            known = ", ".join(f"{p}:{r}" for p, r in sorted(places))
            raise SpecError(
                f"--fault {kind}@{provider}:{region}: no candidate runs there. Candidates: {known}."
            )


def emulated_check(candidate: Resolved, refusals: Refusals) -> Check:
    """The preflight of an emulated candidate: a limit of 0 where quota is refused, else nothing read.

    The needs are the provider's own (its quota names), so the skip reads as it would.
    """
    refused = refusals.get((candidate.plan.provider, candidate.plan.region)) == "quota"
    readings = [
        QuotaReading(need, 0, 0) if refused else QuotaReading(need, None, None, "emulated: not read")
        for need in preflight.needs(candidate)
    ]
    return Check(candidate, readings)
