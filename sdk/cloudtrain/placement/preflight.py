"""Quota preflight: before anything is sent, what each candidate needs of its quotas, and what is left.

A candidate whose quota is conclusively short (the limit below what it needs, or not
enough left beside the jobs running now) is skipped without a submit; one whose quota
cannot be read is tried all the same (a preflight that fails says why and fails open).
A provider that checks no quota (``ChecksQuota`` is optional) is simply not checked.

Example:
>>> from cloudtrain.spec import JobSpec
>>> from cloudtrain.placement.resolve import resolve
>>> [check] = [Check(r, ()) for r in resolve(JobSpec(name="demo", code={"module": "trainer.task"}))]
>>> check.short is None, check.lines()
(True, ['local: no quota to check'])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cloudtrain.provider import registry
from cloudtrain.provider.quotas import BUSY, OVER, ChecksQuota, QuotaNeed, QuotaReading

if TYPE_CHECKING:
    from cloudtrain.placement.resolve import Resolved

DRY_RUN = "a dry run"


@dataclass(frozen=True)
class Check:
    """A candidate's quotas as read before it is tried."""

    candidate: Resolved
    readings: Sequence[QuotaReading]

    @property
    def short(self) -> str | None:
        """Why the candidate cannot start now, if a quota conclusively says so; None otherwise."""
        found = next((r for r in self.readings if r.verdict in (OVER, BUSY)), None)
        return found.explained() if found is not None else None

    def lines(self) -> list[str]:
        """One line per quota, or one saying there is none to check."""
        if not self.readings:
            return [f"{self.candidate.plan.provider}: no quota to check"]
        return [reading.explained() for reading in self.readings]

    def to_dict(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate.index,
            "provider": self.candidate.plan.provider,
            "region": self.candidate.plan.region,
            "quotas": [reading.to_dict() for reading in self.readings],
            "short": self.short,
        }


def needs(candidate: Resolved) -> list[QuotaNeed]:
    """What ``candidate`` needs of its provider's quotas; none where the provider checks none."""
    provider = registry.get(candidate.plan.provider)
    return provider.quota_needs(candidate.plan) if isinstance(provider, ChecksQuota) else []


def check(candidate: Resolved, *, clients: Any = None) -> Check:
    """``candidate``'s quotas, read from its provider; a read that fails is an unknown reading, never an error."""
    provider = registry.get(candidate.plan.provider)
    wanted = needs(candidate)
    if not wanted or not isinstance(provider, ChecksQuota):
        return Check(candidate, ())
    try:
        readings = provider.read_quotas(candidate.plan, wanted, clients=clients)
    except (
        Exception
    ) as failed:  # fail open: no credentials, no network, a provider's surprise; submit still tries
        problem = str(failed).splitlines()[0] if str(failed).strip() else type(failed).__name__
        readings = [QuotaReading(need, None, None, problem) for need in wanted]
    return Check(candidate, readings)


def dry_run(candidate: Resolved) -> Check:
    """``candidate``'s quota needs without reading anything: what ``quotas --dry-run`` shows."""
    return Check(candidate, [QuotaReading(need, None, None, DRY_RUN) for need in needs(candidate)])
