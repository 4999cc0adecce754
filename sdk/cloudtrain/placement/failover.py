"""Try the candidates in order until one starts; say why each did not.

For each candidate, in order: skip it if an earlier failure blocked it (the same region
and shape out of capacity, or its provider refusing the caller) or if its quota is
conclusively short (``preflight``); else submit it and wait until it starts, fails, or
has waited ``limits.max_pending``, after which it is cancelled (and the cancel confirmed)
and counted as capacity (``provider.pending.wait_to_start``, as a single submit waits). What stopped it is read in the shared words
(``cloudtrain.provider.failures``):

=============  ====================================================================
capacity       block this region for this shape; try the next candidate
quota          skip this candidate
permission     block this provider; try the next candidate elsewhere
internal       try the next candidate
preempted      try the next candidate
configuration  stop: the request is wrong, and would be wrong elsewhere too
user_code      stop: the trainer is broken; running it elsewhere fails again
=============  ====================================================================

Never two live jobs of one run: a candidate's job is confirmed ended before the next is
created, and the trail records each job before it is waited on, so a placement that a
crash or Ctrl-C interrupted resumes by attaching to that job instead of creating another.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cloudtrain.errors import CloudtrainError, ProviderError
from cloudtrain.placement.trail import Attempt, Trail
from cloudtrain.provider.failures import Failure, Reason, failure_of
from cloudtrain.provider.pending import CODE as PENDING_LIMIT
from cloudtrain.provider.pending import wait_to_start

if TYPE_CHECKING:
    from cloudtrain.placement.preflight import Check
    from cloudtrain.placement.resolve import Resolved
    from cloudtrain.provider.jobs import Job

# Reasons that end the placement: nothing another candidate changes.
STOPPING = (Reason.CONFIGURATION, Reason.USER_CODE)
# Seconds between two readings of a candidate's job while it waits to start.
POLL_S = 5.0
# Seconds a cancelled candidate's job gets to be confirmed ended.
CANCEL_WAIT_S = 600.0


class PlacementFailed(CloudtrainError):
    """No candidate started the run; ``trail`` says what each did."""

    def __init__(self, message: str, trail: Trail) -> None:
        super().__init__(message)
        self.trail = trail


@dataclass
class Blocks:
    """What earlier failures ruled out: regions for a shape (capacity) and providers (permission)."""

    regions: dict[tuple[str, str, str], str] = field(default_factory=dict)
    providers: dict[str, str] = field(default_factory=dict)

    def why_blocked(self, candidate: Resolved) -> str | None:
        plan = candidate.plan
        if plan.provider in self.providers:
            return f"{plan.provider} refused the caller at {self.providers[plan.provider]}"
        return self.regions.get((plan.provider, plan.region, candidate.shape))

    def block(self, candidate: Resolved, reason: Reason) -> None:
        plan = candidate.plan
        if reason is Reason.CAPACITY:
            self.regions[(plan.provider, plan.region, candidate.shape)] = (
                f"no capacity for {candidate.shape} in {plan.region} at candidate {candidate.index}"
            )
        elif reason is Reason.PERMISSION:
            self.providers[plan.provider] = f"candidate {candidate.index}"


@dataclass
class Failover:
    """The placement of one run: its candidates, how to submit and check each, and its trail.

    Args:
        candidates: the resolved candidates, in the order to try.
        submit: creates the job of a candidate (the API's submit: budget, bundle, request).
        attach: the job of an id the trail recorded (a placement resumed after a crash).
        trail: the run's record of attempts, kept as each one happens.
        preflight: the quota check of a candidate; None: not checked.
        max_pending_s: how long a job may wait to start before it is cancelled (0: for ever).
        on_attempt: called with each attempt as it is recorded (the CLI prints it).
        clock, sleep: time, injectable for tests; a job waits with its own clients' sleep.
    """

    candidates: Sequence[Resolved]
    submit: Callable[[Resolved], Job]
    attach: Callable[[str, str], Job]
    trail: Trail
    preflight: Callable[[Resolved], Check] | None = None
    max_pending_s: int = 600
    on_attempt: Callable[[Attempt], None] = lambda attempt: None
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    poll_s: float = POLL_S
    blocks: Blocks = field(default_factory=Blocks)

    def run(self) -> Job:
        """The job of the first candidate that started (or is running).

        Raises:
            PlacementFailed: every candidate was skipped or failed; or one failed in a way
                no other candidate changes (configuration, user code).
        """
        resumed = self._resume()
        if resumed is not None:
            return resumed
        for candidate in self.candidates:
            job = self._try(candidate)
            if job is not None:
                return job
        raise PlacementFailed(self._summary("No candidate could start the run"), self.trail)

    def _try(self, candidate: Resolved) -> Job | None:
        blocked = self.blocks.why_blocked(candidate)
        if blocked is not None:
            self._record(candidate, "skipped", Failure(Reason.CAPACITY, blocked, "blocked"))
            return None
        if self.preflight is not None:
            check = self.preflight(candidate)
            if check.short is not None:
                self._record(candidate, "skipped", Failure(Reason.QUOTA, check.short, "preflight"))
                return None
        started = self.clock()
        try:
            job = self._submitted(candidate)
        except (ProviderError, CloudtrainError) as refused:
            failure = failure_of(refused)
            if failure is None:
                raise
            self._failed(candidate, "refused", failure, started)
            return None
        self._record(candidate, "submitted", None, job_id=job.id, started=started)
        return self._follow(candidate, job, started)

    def _submitted(self, candidate: Resolved) -> Job:
        """The candidate's job: submitted, and submitted once more after the provider's own failure.

        A create whose answer was lost may have made the job, and a provider's internal
        error may be such a loss: the second submit attaches to a job the first made
        (every provider finds a job of the same run and request), so the next candidate
        is never created beside a live one.
        """
        try:
            return self.submit(candidate)
        except CloudtrainError as refused:
            failure = failure_of(refused)
            if failure is None or failure.reason is not Reason.INTERNAL:
                raise
        return self.submit(candidate)

    def _follow(self, candidate: Resolved, job: Job, started: float) -> Job | None:
        """``job`` once it runs; None once it failed, or waited too long and was cancelled."""
        try:
            status = wait_to_start(job, limit_s=self.max_pending_s, poll_s=self.poll_s, clock=self.clock)
        except BaseException:  # Ctrl-C or a crash: never leave a job waiting that nobody follows
            self._cancel(job)
            self._record(candidate, "cancelled", None, job_id=job.id, started=started)
            raise
        if status.failure is not None and status.failure.code == PENDING_LIMIT:
            self._failed(candidate, "cancelled", status.failure, started, job)
            return None
        if status.state == "failed":
            failure = status.failure or Failure(Reason.INTERNAL, status.detail or status.provider_state, "")
            self._failed(candidate, "failed", failure, started, job)
            return None
        if status.done and status.state != "succeeded":
            raise PlacementFailed(self._summary(f"The job {job.id} was {status.state}"), self.trail)
        self._record(candidate, "started", None, job_id=job.id, started=started)
        return job

    def _cancel(self, job: Job) -> None:
        """Cancel ``job`` and wait until its provider says it ended: the next candidate may then start."""
        job.cancel()
        deadline = self.clock() + CANCEL_WAIT_S
        while not job.status().done:
            if self.clock() >= deadline:
                raise PlacementFailed(
                    self._summary(
                        f"The job {job.id} did not end after its cancel; stop it before placing again"
                    ),
                    self.trail,
                )
            self.sleep(self.poll_s)

    def _failed(
        self, candidate: Resolved, outcome: str, failure: Failure, started: float, job: Job | None = None
    ) -> None:
        self._record(candidate, outcome, failure, job_id=job.id if job else None, started=started)
        if failure.reason in STOPPING:
            raise PlacementFailed(
                self._summary(
                    f"{candidate.where} failed with {failure.reason}, which another candidate would meet too"
                ),
                self.trail,
            )
        self.blocks.block(candidate, failure.reason)

    def _resume(self) -> Job | None:
        """The job an interrupted placement of this run left live, if its trail names one."""
        live = self.trail.live()
        if live is None:
            return None
        candidate = next((c for c in self.candidates if c.index == live.candidate), None)
        if candidate is None or live.job_id is None:
            return None
        job = self.attach(live.job_id, live.provider)
        return self._follow(candidate, job, self.clock())

    def _record(
        self,
        candidate: Resolved,
        outcome: str,
        failure: Failure | None,
        *,
        job_id: str | None = None,
        started: float | None = None,
    ) -> None:
        took = None if started is None else round(self.clock() - started, 1)
        attempt = Attempt.of(candidate, outcome, failure, job_id=job_id, seconds=took)
        self.trail.add(attempt)
        self.on_attempt(attempt)

    def _summary(self, headline: str) -> str:
        lines = [f"{headline}. Attempts:", *(f"  {attempt.line()}" for attempt in self.trail.attempts)]
        return "\n".join(lines)
