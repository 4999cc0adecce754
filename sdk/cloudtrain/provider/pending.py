"""Waiting for a job to start, for at most ``limits.max_pending``: the one place that limit is kept.

A job that cannot get its machines sits queued or pending, on every provider, for as
long as the provider lets it: minutes for quota, hours for flex-start capacity, a week
for a training plan not yet active. ``wait_to_start`` follows any ``Job`` until it
starts, and when the limit passes first it cancels the job, waits until the provider
confirms the end (nothing is left running or billed), and says so with the failure
reason ``capacity``: another region, shape, provider or capacity mode may start at once
(what a placement tries next), or the same later.

Example:
>>> describe_limit(90), describe_limit(0), describe_limit(3600)
('1m30s', 'for ever', '1h')
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from cloudtrain.arguments import CALLABLE, COUNT, Kind, expect
from cloudtrain.provider.failures import Failure, Reason

if TYPE_CHECKING:
    from cloudtrain.provider.jobs import Job, JobStatus

# The failure's code: the setting that ended the wait, for people to search.
CODE = "limits.max_pending"
# What ``wait_to_start`` follows: a handle of any provider, as submit and attach return it.
JOB = Kind(
    lambda value: all(callable(getattr(value, name, None)) for name in ("status", "wait", "cancel")),
    "a job (what submit or attach returns)",
)
SECONDS = Kind(
    lambda value: isinstance(value, int | float) and not isinstance(value, bool) and value >= 0,
    "a number of seconds >= 0",
)


def wait_to_start(
    job: Job,
    *,
    limit_s: int,
    poll_s: float = 10.0,
    on_status: Callable[[JobStatus], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> JobStatus:
    """Follow ``job`` until it starts (or ends); cancel it if ``limit_s`` passes first.

    The time the job already waited counts: a job the provider reports pending since
    earlier (``JobStatus.pending_since``) has that much less left.

    Args:
        job: any provider's job; it is polled with its own ``wait``.
        limit_s: how long it may wait, in seconds (``JobSpec.max_pending_s``); 0: for ever.
        poll_s: seconds between status reads (a local job's are at most a second).
        on_status: sees the first status and each change, the cancel's included.
        clock: seconds, for the deadline (``time.monotonic``).

    Returns:
        The first status that is not waiting (running, or ended). When the limit passed:
        the job's final status once the cancel took effect, with the failure reason
        ``capacity``; a job that ended otherwise before the cancel ended it keeps its own.

    Raises:
        SpecError: an argument of the wrong type (``cloudtrain.arguments``).
    """
    expect(
        job=(job, JOB),
        limit_s=(limit_s, COUNT),
        poll_s=(poll_s, SECONDS),
        on_status=(on_status, CALLABLE | None),
        clock=(clock, CALLABLE),
    )
    deadline = Deadline(limit_s, clock)
    status = job.wait(poll_s, on_status, until=lambda now: not now.waiting or deadline.passed(now))
    if not status.waiting:
        return status
    job.cancel()
    final = job.wait(poll_s, on_status)
    if final.state != "cancelled":
        return final
    return replace(final, failure=capacity_failure(limit_s, status))


class Deadline:
    """When a waiting job's time is up: ``limit_s`` after it began to wait, as first seen."""

    def __init__(self, limit_s: int, clock: Callable[[], float]) -> None:
        self.limit_s = limit_s
        self._clock = clock
        self._at: float | None = None

    def passed(self, status: JobStatus) -> bool:
        """Whether the limit has passed for the job in ``status`` (never, with no limit)."""
        if self.limit_s == 0:
            return False
        if self._at is None:
            self._at = self._clock() + self.limit_s - waited_s(status)
        return self._clock() >= self._at

    def __repr__(self) -> str:
        return f"Deadline(limit_s={self.limit_s}, at={self._at})"


def waited_s(status: JobStatus, now: datetime | None = None) -> float:
    """How long the provider says the job has waited already; 0 when it does not say.

    >>> from cloudtrain.provider.jobs import JobStatus
    >>> since = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    >>> waited_s(JobStatus("queued", "QUEUED", pending_since=since), now=datetime(2026, 1, 1, 12, 1, tzinfo=UTC))
    60.0
    """
    if status.pending_since is None:
        return 0.0
    return max(0.0, ((now or datetime.now(UTC)) - status.pending_since).total_seconds())


def capacity_failure(limit_s: int, waiting: JobStatus) -> Failure:
    """The failure of a job cancelled because it did not start within ``limit_s``."""
    why = waiting.pending_reason or f"{waiting.state} ({waiting.provider_state})"
    return Failure(
        Reason.CAPACITY,
        f"It did not start within {describe_limit(limit_s)}: {why}. It was cancelled; nothing runs. Raise "
        "limits.max_pending (submit --max-pending), or try another region, shape or capacity mode",
        CODE,
    )


def describe_limit(seconds: int) -> str:
    """A limit in words: ``1m30s``, ``2h``; ``for ever`` for 0."""
    if seconds == 0:
        return "for ever"
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)
