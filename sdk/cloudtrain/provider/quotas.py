"""What a job needs of its provider's quotas, and what the provider says is left.

New accounts have no GPU quota on any cloud, and a job over a quota is refused (SageMaker's
``ResourceLimitExceeded``), or waits queued while the quota is in use (Vertex AI's
``JOB_STATE_QUEUED``). A provider that can say so before a submit is ``ChecksQuota``:

- ``quota_needs(plan)`` names each quota the job draws on, in the provider's own words
  (a Service Quotas name, a Cloud Quotas metric, a ResourceQuota's resource), how much of
  it the job takes, and how to ask for more. It is pure: ``cloudtrain quotas --dry-run``
  prints it without credentials.
- ``read_quotas(plan, needs)`` reads the limit and the current use from the provider. A
  read that fails says why (``QuotaReading.problem``) and never stops a submit: quota
  checks fail open.

A reading is conclusive only when the provider answered: ``over`` (the limit is below what
the job needs, so no wait helps), ``busy`` (it fits the limit but not beside the jobs
already running), ``ok``, or ``unknown``.

Example:
>>> need = QuotaNeed("sagemaker", "us-east-1", "ml.p4d.24xlarge for training job usage", 2, "instances",
...                  "aws service-quotas request-service-quota-increase ...")
>>> QuotaReading(need, limit=0, used=0).verdict, QuotaReading(need, limit=4, used=3).verdict
('over', 'busy')
>>> QuotaReading(need, limit=None, used=None, problem="AccessDeniedException").verdict
'unknown'
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from cloudtrain.planning import Plan

OK, BUSY, OVER, UNKNOWN = "ok", "busy", "over", "unknown"


@dataclass(frozen=True)
class QuotaNeed:
    """One quota a job draws on, and how much of it.

    Attributes:
        provider: the provider whose quota it is.
        region: where it applies (the job's region; a Kubernetes namespace's cluster).
        name: the provider's own name for it, as its console and API spell it.
        amount: how much the job takes (hosts, GPUs, CPUs), in ``unit``.
        unit: ``instances``, ``GPUs``, ``CPUs``, ...
        increase: the command (or console page) that asks the provider for more.
    """

    provider: str
    region: str
    name: str
    amount: int
    unit: str
    increase: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class QuotaReading:
    """What the provider said of one need: its limit and current use (None: not read), or why not."""

    need: QuotaNeed
    limit: float | None
    used: float | None
    problem: str = ""

    @property
    def headroom(self) -> float | None:
        """What is left for new jobs: the limit less what is in use (None when either is unknown)."""
        return None if self.limit is None or self.used is None else self.limit - self.used

    @property
    def verdict(self) -> str:
        """``over`` (never fits), ``busy`` (fits, but not now), ``ok`` or ``unknown``."""
        if self.limit is None:
            return UNKNOWN
        if self.limit < self.need.amount:
            return OVER
        if self.headroom is None:
            return UNKNOWN
        return OK if self.headroom >= self.need.amount else BUSY

    def explained(self) -> str:
        """One line: the quota, what the job needs of it, what is left, and what to do."""
        need = self.need
        wanted = f"{need.name} in {need.region}: needs {need.amount} {need.unit}"
        if self.verdict == UNKNOWN:
            return f"{wanted}; not checked ({self.problem or 'no such quota'})"
        assert self.limit is not None  # a reading other than unknown has one
        used = f", {_count(self.used)} in use" if self.used is not None else ""
        said = f"{wanted}, the limit is {_count(self.limit)}{used}"
        if self.verdict == OK:
            return f"{said}: ok"
        if self.verdict == BUSY:
            return f"{said}: not until running jobs end. Or ask for more: {need.increase}"
        return f"{said}: over the limit. Ask for more: {need.increase}"

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.need.to_dict(),
            "limit": self.limit,
            "used": self.used,
            "headroom": self.headroom,
            "verdict": self.verdict,
            "problem": self.problem,
        }


@runtime_checkable
class ChecksQuota(Protocol):
    """A provider that can say, before a submit, which quotas a job needs and what is left. Optional."""

    def quota_needs(self, plan: Plan) -> list[QuotaNeed]:
        """The quotas ``plan``'s job draws on; pure (no call, no credentials)."""
        ...

    def read_quotas(self, plan: Plan, needs: list[QuotaNeed], *, clients: Any = None) -> list[QuotaReading]:
        """Each need's limit and current use, read from the provider; one reading per need, in order.

        Never raises for a read that fails: its reading has ``problem`` set, and the check
        fails open.
        """
        ...


def _count(value: float | None) -> str:
    return "?" if value is None else f"{value:g}"
