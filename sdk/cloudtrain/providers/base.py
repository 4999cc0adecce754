"""What every provider is: the ``Provider`` protocol, the ``Job`` handle and neutral job states.

A provider is one object (``cloudtrain.providers.<name>.provider`` for the built-ins, an
entry point in the ``cloudtrain.providers`` group for a third-party package) that
carries its facts as attributes and its behaviour as methods. The rest of cloudtrain
(planning, the CLI, the cost table, the plot, the price refresh) asks the registry for
providers and never names one.

``render(plan) -> dict`` is pure: the exact request body, golden-tested and printed by
``--dry-run``. ``outputs(plan)`` says where the job's artifacts will really be.
``submit(plan, request, bundle)`` is the only place a job is created.
``attach(job_id)`` reconnects to a job for ``status``/``logs``/``cancel``; ``owns(job_id)``
says whether an ID belongs to the provider, so ``cloudtrain status ID`` needs no
``--provider``. Cloud SDKs are imported inside those methods only, so asking the
registry for a provider is cheap.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path

    from cloudtrain.bundle import Bundle
    from cloudtrain.defaults import Sources
    from cloudtrain.outputs import Outputs
    from cloudtrain.planning import Plan
    from cloudtrain.progress import OnProgress
    from cloudtrain.spec import JobSpec
    from cloudtrain_runtime.diagnosis import Check

# Neutral job states, shared by every provider's Job.status().
TERMINAL_STATES = ("succeeded", "failed", "cancelled")
# Accepted but not yet running: waiting for capacity, provisioning hosts, pulling the image.
WAITING_STATES = ("queued", "pending")


@dataclass(frozen=True)
class JobStatus:
    """A job's state in neutral words, the provider's own word, and a detail line."""

    state: str
    provider_state: str
    detail: str = ""

    @property
    def done(self) -> bool:
        return self.state in TERMINAL_STATES


# How an estimate stored with a job was made (``ExpectedCost.basis``).
FROM_THROUGHPUT = "throughput"
WORST_CASE = "worst-case"


@dataclass(frozen=True)
class ExpectedCost:
    """What a billed job was expected to cost when it was submitted, stored with the job.

    ``basis`` is ``throughput`` (a measured speed priced for the planned shape) or
    ``worst-case`` (every host billed for all of ``limits.max_runtime``: an upper bound).
    A provider keeps it in the job's own labels or tags, so ``list`` and ``status`` can
    put the actual cost beside it after the run without any record on this machine.
    """

    usd: float
    basis: str


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
class Provider(Protocol):
    """A place where jobs run: its facts as attributes, its work as methods.

    Attributes:
        name: the word users type after ``--provider``.
        title: the provider's own name, for messages ("Vertex AI").
        schemes: URI schemes its jobs can read and write (``("gs://",)``); empty for a
            provider that uses local paths.
        machine_catalog: whether machine shapes come from the catalog's ``machines.csv``
            (False: the job runs on this machine, whatever it is).
        billed: whether running a job costs money (the budget guard applies).
        max_runtime_s: the longest job the provider accepts (None: no limit), and
            ``max_runtime_field`` the request field that says so.
        unsupported: accelerator kinds it cannot run, each with the fix.
        catalog_dir: a folder of extra catalog rows (``machines.csv``, ``prices.csv``,
            ``images.csv``) shipped with a third-party provider, or None.
        color: the colour of its points in ``cost --plot``.
    """

    # Read-only properties, so a plain class attribute (``billed = True``) satisfies them.
    @property
    def name(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def schemes(self) -> tuple[str, ...]: ...
    @property
    def machine_catalog(self) -> bool: ...
    @property
    def billed(self) -> bool: ...
    @property
    def max_runtime_s(self) -> int | None: ...
    @property
    def max_runtime_field(self) -> str: ...
    @property
    def unsupported(self) -> Mapping[str, str]: ...
    @property
    def catalog_dir(self) -> Path | None: ...
    @property
    def color(self) -> str: ...

    def region(self, spec: JobSpec) -> str:
        """The region the job runs in (``"local"`` where there is none)."""
        ...

    def storage_root(self, spec: JobSpec) -> str:
        """Where the job's backups, logs and model live on this provider."""
        ...

    def check(self, spec: JobSpec) -> list[str]:
        """Problems that stop ``spec`` from running here, one message per problem (field first)."""
        ...

    def plan(self, spec: JobSpec) -> Plan:
        """``spec`` resolved for this provider (``cloudtrain.planning.plan`` does the work)."""
        ...

    def render(self, plan: Plan) -> dict[str, Any]:
        """The exact request ``submit`` sends for ``plan``: pure and deterministic."""
        ...

    def outputs(self, plan: Plan, request: dict[str, Any] | None = None) -> Outputs:
        """Where each artifact of ``plan``'s job ends up, true on the service (``cloudtrain.outputs``).

        With the rendered ``request``, whatever it already names (a job name) is filled in.
        """
        ...

    def upload(
        self, plan: Plan, bundle: Bundle, *, clients: Any = None, progress: OnProgress | None = None
    ) -> None:
        """Put the code bundle where the request reads it (``plan.bundle``), once; creates no job.

        ``submit`` does it too; a pipeline that hands the request to another orchestrator
        calls it alone (``cloudtrain.stage``).
        """
        ...

    def submit(
        self,
        plan: Plan,
        request: dict[str, Any],
        bundle: Bundle,
        *,
        clients: Any = None,
        progress: OnProgress | None = None,
    ) -> Job:
        """Upload the code once and create the job; the only call that creates anything.

        ``progress`` is the caller's callback: call it with a ``cloudtrain.Progress`` as the
        code uploads (``cloudtrain.providers.transfer.upload_once`` does), and print nothing.
        A job an earlier submit of the same request created is returned with
        ``attached = True`` (see ``attached``), so the caller can say nothing new started.
        """
        ...

    def attach(self, job_id: str, *, clients: Any = None) -> Job:
        """The handle of a job this provider created."""
        ...

    def owns(self, job_id: str) -> bool:
        """Whether ``job_id`` is one of this provider's job IDs."""
        ...


@runtime_checkable
class NamesRuns(Protocol):
    """A provider that names the run of a submit given no run id. Optional.

    Without it, the run is a digest of what the job is (``cloudtrain.runs.derived``): the
    same spec and code submitted again are the same run, which attaches or resumes.
    """

    def new_run_id(self, plan: Plan) -> str:
        """The run id of ``plan``, submitted without one."""
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


@runtime_checkable
class ListsJobs(Provider, Protocol):
    """A provider that can list the jobs cloudtrain created on it, newest first.

    Optional: ``cloudtrain list`` skips a provider without it with a note, and job
    lookup by name or short id searches only the providers that have it.
    """

    def configured(self, settings: JobSpec) -> str | None:
        """Why jobs cannot be listed with ``settings`` (no project, no credentials found); None: they can.

        Cheap and offline: ``cloudtrain list`` without ``--provider`` asks it first and
        skips, with this line, a provider the user has not set up, importing nothing.
        """
        ...

    def list_jobs(self, settings: JobSpec, *, limit: int | None) -> list[JobSummary]:
        """At most ``limit`` (None: all) of cloudtrain's jobs here, newest first.

        ``settings`` is a spec whose provider section holds where to look (project,
        region), from the profile and the environment (``cloudtrain.specfile.load_settings``).
        Only jobs carrying cloudtrain's own label or tag are asked for.
        """
        ...


class Discovered(NamedTuple):
    """A setting found where the cloud's own tools keep it, and where it was found.

    ``source`` is an environment variable's name (``GOOGLE_CLOUD_PROJECT``) or a file
    (``/home/me/.aws/config [profile dev]``): what a user reads to know where to change it.
    """

    value: str
    source: str


@runtime_checkable
class DiscoversSettings(Protocol):
    """A provider that reads defaults for its spec section from its cloud's own tools.

    Optional: a provider without it simply gets no environment defaults.
    ``cloudtrain.defaults`` asks every provider whose name is a section of the spec.
    """

    def discover_settings(self, environ: Mapping[str, str]) -> dict[str, Discovered]:
        """Field of the provider's spec section -> the value its tools would use (none: absent)."""
        ...


@runtime_checkable
class ChecksSetup(Protocol):
    """A provider that can check, before the first submit, that this machine is set up for it.

    Optional: ``cloudtrain check`` reports a provider without it as having nothing to check.
    """

    def check_setup(self, spec: JobSpec, sources: Sources) -> list[Check]:
        """One line per thing a submit of ``spec`` needs (credentials, settings, storage, service).

        Each is ok, warn or fail, with the fix when it is not ok. ``sources`` says where
        each setting of ``spec`` came from (the spec, a profile, the environment). Nothing
        is created but a probe object, deleted at once; no secret is ever in a line.
        """
        ...


@runtime_checkable
class ReadsOutputs(Provider, Protocol):
    """A provider that can read back one file a job wrote to its outputs.

    Optional: ``cloudtrain bench`` runs only where the bench file can be read back.
    """

    def read_output(self, plan: Plan, uri: str, *, clients: Any = None) -> bytes:
        """The bytes at ``uri``, an output URI as ``Job.outputs`` names it, of a job ``plan`` ran.

        ``archive#member`` names a member of a tar.gz archive (SageMaker's ``output.tar.gz``).

        Raises:
            ProviderError: nothing is there, or it cannot be read; the message names ``uri``.
        """
        ...


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
