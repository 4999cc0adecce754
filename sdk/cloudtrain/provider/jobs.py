"""A submitted job, whatever the provider: the ``Job`` handle, neutral states, and what a job reports.

These are the types ``status``, ``logs``, ``list`` and the Python API's users hold; they
import nothing of planning or the spec, so ``cloudtrain.Job`` is cheap to import for a
type hint. What a provider is (``Provider``) is ``cloudtrain.provider.base``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from cloudtrain.errors import CredentialsError, MissingDependencyError, ProviderError

if TYPE_CHECKING:
    from datetime import datetime

    from cloudtrain.outputs import Outputs
    from cloudtrain.planning import ExpectedCost
    from cloudtrain.provider.failures import Failure

# Neutral job states, shared by every provider's Job.status().
TERMINAL_STATES = ("succeeded", "failed", "cancelled")
# Accepted but not yet running: waiting for capacity, provisioning hosts, pulling the image.
WAITING_STATES = ("queued", "pending")


@dataclass(frozen=True)
class JobStatus:
    """A job's state in neutral words, the provider's own word, and a detail line.

    ``failure`` says why a failed job failed, in every provider's words
    (``cloudtrain.provider.failures``), where the provider said enough to tell.
    A job that waits to start (``WAITING_STATES``) says since when (``pending_since``,
    UTC) and why (``pending_reason``: "queued for quota", "waiting for flex-start
    capacity", "suspended in Kueue queue team-a"), from the provider's own fields,
    where it tells.
    """

    state: str
    provider_state: str
    detail: str = ""
    failure: Failure | None = None
    pending_since: datetime | None = None
    pending_reason: str = ""

    @property
    def done(self) -> bool:
        return self.state in TERMINAL_STATES

    @property
    def waiting(self) -> bool:
        """Whether the job has not started yet (queued or pending)."""
        return self.state in WAITING_STATES

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the fields, the failure as a mapping (or None), times in ISO 8601, and ``done``.

        >>> JobStatus("running", "RUNNING").to_dict()
        {'state': 'running', 'provider_state': 'RUNNING', 'detail': '', 'failure': None, 'pending_since': None, 'pending_reason': '', 'done': False}
        """
        fields = asdict(self)
        since = self.pending_since
        return {**fields, "pending_since": since.isoformat() if since else None, "done": self.done}


@dataclass(frozen=True)
class Usage:
    """What a job was billed for, in the provider's own measure: enough to price it from the catalog.

    ``seconds`` is each host's billed time before the price row's billing increment;
    ``spot`` says whether the spot rate applies (False where the provider's measure
    already holds the spot saving, as SageMaker's ``BillableTimeInSeconds`` does).
    ``measure`` names the measure for people ("BillableTimeInSeconds", "start to end").
    """

    region: str
    machine_type: str
    accelerator: str
    hosts: int
    seconds: float
    spot: bool
    measure: str


@dataclass(frozen=True)
class JobSummary:
    """One job as ``cloudtrain list`` shows it: what a user needs to find it again.

    ``id`` is what ``attach`` takes; ``name`` the spec's job name. Times are UTC; None
    where the provider has not reached that point (``ended`` of a running job).
    ``shape`` is the hardware in words ("2 × n1-standard-8"); ``estimate`` the cost
    predicted at submit time (None: not billed, or submitted without one); ``usage``
    what was billed once the job ended (None: not billed, or not ended); ``run`` the run
    the job is an attempt of (``cloudtrain.runs``; None for a job from before runs).
    """

    id: str
    name: str
    provider: str
    state: str
    created: datetime
    started: datetime | None = None
    ended: datetime | None = None
    shape: str = ""
    estimate: ExpectedCost | None = None
    usage: Usage | None = None
    run: str | None = None

    @property
    def short_id(self) -> str:
        """The id's last part (the run folder, job number or job name), as ``list`` shows it.

        >>> JobSummary("local:demo-20260101-120000-0a1b", "demo", "local", "running", None).short_id
        'demo-20260101-120000-0a1b'
        """
        return re.split(r"[:/]", self.id)[-1]

    @property
    def duration_s(self) -> float | None:
        """Seconds from start to end; None until the job has both."""
        if self.started is None or self.ended is None:
            return None
        return (self.ended - self.started).total_seconds()


def attached(job: Job) -> bool:
    """Whether ``Provider.submit`` returned a job an earlier submit created, rather than a new one.

    A provider's job says so with an ``attached`` attribute set to True; a job without one
    (a plugin's that does not tell) reads as new.
    """
    return getattr(job, "attached", False) is True


class Job(Protocol):
    """A submitted job, whatever the provider."""

    id: str
    provider: str
    request: dict[str, Any] | None

    @property
    def outputs(self) -> Outputs:
        """Where this job's artifacts are, its real name or ID filled in."""
        ...

    def status(self) -> JobStatus: ...

    def logs(
        self, follow: bool = False, *, since: datetime | None = None, tail: int | None = None
    ) -> Iterator[str]:
        """The job's log lines; ``since`` keeps those written at or after it, ``tail`` the last N.

        With ``follow``, ``tail`` applies to what was written so far; new lines follow.
        """
        ...

    def cancel(self) -> None: ...

    def wait(
        self,
        poll_s: float = 30.0,
        on_status: Callable[[JobStatus], None] | None = None,
        *,
        until: Callable[[JobStatus], bool] | None = None,
    ) -> JobStatus:
        """Poll until the job ends, or until ``until(status)`` holds; ``on_status`` sees each change."""
        ...


@runtime_checkable
class HasConsole(Protocol):
    """A job the provider's web console shows: ``submit`` and ``status`` print the link. Optional."""

    @property
    def console_url(self) -> str: ...


@dataclass(frozen=True)
class Stored:
    """Files left under one storage prefix: how much, and the command that deletes them.

    >>> Stored("s3://b/r/checkpoints", 3_500_000, 4, "aws s3 rm --recursive s3://b/r/checkpoints/").megabytes
    3.5
    """

    uri: str
    bytes: int
    files: int
    delete: str

    @property
    def megabytes(self) -> float:
        return round(self.bytes / 1e6, 1)


@runtime_checkable
class ReportsBackup(Protocol):
    """A job that can say what its run's backup left in storage once it ended. Optional.

    A run keeps its backup after a failure (its retry resumes from it) and, where the
    export is not durable until the job ends (SageMaker), after success too: ``status``
    shows the size, which is storage the user pays for, and how to delete it.
    """

    def kept_backup(self) -> Stored | None:
        """The backup files in storage (ask once the job has ended); None when none are left."""
        ...


@runtime_checkable
class ReportsProgress(Protocol):
    """A job whose chief's progress record can be read while it runs (``cloudtrain_runtime.progress``). Optional.

    ``status`` and ``list`` show where training is, its ETA and the cost to finish from it
    (``cloudtrain.run_progress``).
    """

    def progress_record(self) -> object:
        """The record as the chief last wrote it (decoded JSON, unchecked); None where it wrote none yet."""
        ...


def read_progress(read: Callable[[], bytes]) -> object:
    """``ReportsProgress.progress_record`` from the bytes ``read`` returns: None where there is none yet.

    Nothing there, a store that cannot be read from here (it refuses, this machine has no
    credentials for it, or not its client library: a Kubernetes job's bucket is not the
    cluster) or bytes that are not JSON read as no record: a job's progress is shown where
    it can be, and never stops ``status`` or ``list`` from showing the rest.

    >>> read_progress(lambda: b'{"epoch": 1}'), read_progress(lambda: b"{")
    ({'epoch': 1}, None)
    """
    try:
        return json.loads(read())
    except (ProviderError, CredentialsError, MissingDependencyError, ValueError):
        return None


@runtime_checkable
class RunsHere(Protocol):
    """A job whose processes run on this machine. Optional.

    Ctrl-C on the ``cloudtrain submit`` that follows it stops it, as it would stop a
    script run here; a job elsewhere keeps running when its follower is interrupted.
    """

    runs_here: bool


@runtime_checkable
class HasSummary(Protocol):
    """A job that can describe itself as ``list`` shows it: ``status`` prints its times and cost. Optional."""

    def summary(self) -> JobSummary: ...


def poll_until_done(
    status: Callable[[], JobStatus],
    sleep: Callable[[float], None],
    poll_s: float,
    on_status: Callable[[JobStatus], None] | None = None,
    until: Callable[[JobStatus], bool] | None = None,
) -> JobStatus:
    """``Job.wait`` for any provider: poll ``status`` every ``poll_s`` until it is terminal.

    ``on_status`` sees the first status and then every change, not every poll. ``until``
    stops the wait early (``lambda s: s.state not in WAITING_STATES``: until it starts).
    """
    last = None
    while True:
        current = status()
        if on_status is not None and current != last:
            on_status(current)
        if current.done or (until is not None and until(current)):
            return current
        last = current
        sleep(poll_s)


class Polled(Protocol):
    """A handle ``WaitsByPolling`` can wait on: its status, and the clock its clients sleep on."""

    def status(self) -> JobStatus: ...

    def _sleep(self, seconds: float) -> None: ...


class WaitsByPolling:
    """``Job.wait`` for a job or sweep handle: ``poll_until_done`` on its own ``status``.

    Every handle waits the same way; only the clock differs, so a handle mixes this in
    and names its clock in ``_sleep``: a cloud handle its clients' ``sleep`` (tests pass a
    fake one), a local one a sleep of at most a second (``local.job.poll_sleep``).
    """

    def wait(
        self: Polled,
        poll_s: float = 30.0,
        on_status: Callable[[JobStatus], None] | None = None,
        *,
        until: Callable[[JobStatus], bool] | None = None,
    ) -> JobStatus:
        """Poll until the job ends (or ``until`` holds), reporting each change of state to ``on_status``."""
        return poll_until_done(self.status, self._sleep, poll_s, on_status, until)
