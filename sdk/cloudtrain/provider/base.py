"""What every provider is: the ``Provider`` protocol and the optional ones a provider may add.

The job side (the ``Job`` handle, neutral job states, summaries) is ``cloudtrain.provider.jobs``,
re-exported here.

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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from cloudtrain.planning import Plan, Target
from cloudtrain.provider.jobs import (
    TERMINAL_STATES,
    WAITING_STATES,
    HasConsole,
    HasSummary,
    Job,
    JobStatus,
    JobSummary,
    ReportsBackup,
    ReportsProgress,
    RunsHere,
    Stored,
    Usage,
    attached,
    poll_until_done,
)

if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path

    from cloudtrain.bundle import Bundle
    from cloudtrain.progress import OnProgress
    from cloudtrain.sources import Sources
    from cloudtrain.spec import JobSpec
    from cloudtrain_runtime.diagnosis import Check

__all__ = [
    "TERMINAL_STATES",
    "WAITING_STATES",
    "ChecksBeforeSending",
    "ChecksSetup",
    "Discovered",
    "DiscoversSettings",
    "DiscoversTargetSettings",
    "FindsRuns",
    "HasConsole",
    "HasSummary",
    "Job",
    "JobStatus",
    "JobSummary",
    "ListsJobs",
    "NamesRuns",
    "OffersPlans",
    "PlanOffer",
    "Provider",
    "ReadsOutputs",
    "ReportsBackup",
    "ReportsProgress",
    "RunsHere",
    "StartsProcesses",
    "Stored",
    "Usage",
    "attached",
    "poll_until_done",
]


@runtime_checkable
class Provider(Target, Protocol):
    """A place where jobs run: its facts as attributes, its work as methods.

    What planning reads (the facts, ``region``, ``storage_root``, ``check``, ``outputs``)
    is declared by ``cloudtrain.planning.Target``, which this extends.

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

    # The facts and checks planning reads are ``Target``'s; these are the rest.
    @property
    def catalog_dir(self) -> Path | None: ...
    @property
    def color(self) -> str: ...

    def plan(self, spec: JobSpec) -> Plan:
        """``spec`` resolved for this provider (``cloudtrain.planning.plan`` does the work)."""
        ...

    def render(self, plan: Plan) -> dict[str, Any]:
        """The exact request ``submit`` sends for ``plan``: pure and deterministic."""
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
        code uploads (``cloudtrain.provider.transfer.upload_once`` does), and print nothing.
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


@runtime_checkable
class FindsRuns(ListsJobs, Protocol):
    """A provider that can find the jobs of a run by its run id. Optional.

    Every attempt of a run carries its id where the provider keeps such things (Vertex
    AI: the ``cloudtrain_run`` label; SageMaker: the ``cloudtrain:run`` tag; Kubernetes:
    the ``cloudtrain/run`` annotation; local: the run's request), so ``status``,
    ``logs``, ``cancel`` and ``wait`` take the run id a user chose (``--run-id``) or a
    sweep trial's as well as a job ID (``cloudtrain.api.jobs_of_run``).
    """

    def jobs_of_run(self, run_id: str, settings: JobSpec, *, clients: Any = None) -> list[JobSummary]:
        """The jobs of run ``run_id`` here, newest first; empty when it has none.

        ``settings`` says where to look, as for ``list_jobs``. Ask the service to filter
        where it can, rather than listing every job.
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
class DiscoversTargetSettings(Protocol):
    """A provider whose defaults come from a file that only a job sent to it needs (a kubeconfig).

    Optional. ``cloudtrain.defaults`` asks it only when the command's provider is this one,
    so a user who never sends a job here neither pays for reading the file nor is stopped
    by a broken one; ``DiscoversSettings`` is asked by every spec command.
    """

    def discover_target_settings(self, environ: Mapping[str, str]) -> dict[str, Discovered]:
        """Field of the provider's spec section -> the value its tools would use (none: absent).

        Raises:
            CloudtrainError: the file is there but unusable; one line naming it and the problem.
        """
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


@dataclass(frozen=True)
class PlanOffer:
    """Capacity a provider sells ahead for a time window (a SageMaker training plan offering).

    Attributes:
        provider, machine_type, hosts: what it reserves.
        offer_id: the provider's id of the offering, to buy it with.
        upfront: the fee paid when buying it, in ``currency``.
        hours: how long the window is.
        start, end: the window, where the provider says (UTC).
    """

    provider: str
    machine_type: str
    hosts: int
    offer_id: str
    upfront: float
    currency: str
    hours: float
    start: datetime | None = None
    end: datetime | None = None


@runtime_checkable
class OffersPlans(Protocol):
    """A provider that sells capacity ahead (``capacity: plan``) and can search what it offers. Optional.

    ``cloudtrain cost --plan-offers`` asks it for the offerings of each shape it prices.
    """

    def plan_offers(
        self, spec: JobSpec, machine_type: str, hosts: int, *, hours: int, clients: Any = None
    ) -> list[PlanOffer]:
        """The offerings of ``hosts`` × ``machine_type`` for ``hours`` in ``spec``'s region, cheapest first.

        Empty when the provider sells none of that machine type.

        Raises:
            CloudtrainError: the search failed (no credentials, a refused call).
        """
        ...


@runtime_checkable
class StartsProcesses(Protocol):
    """A provider that runs a job as processes here, not always one per host. Optional.

    ``plan`` says how many start, so "2 hosts" never hides the 4 processes that run them.
    """

    def processes(self, plan: Plan) -> str:
        """How ``plan``'s hosts run here, in words: how many processes, and why when not one per host."""
        ...


@runtime_checkable
class ChecksBeforeSending(Protocol):
    """A provider whose ``submit`` refuses more than the plan and the request show. Optional.

    ``cloudtrain.validate`` asks it too, so what validates is what submit sends: the
    local provider checks the code's requirements against the Python that runs the replicas.
    """

    def preflight(self, spec: JobSpec) -> list[str]:
        """One problem per reason ``submit`` would refuse ``spec`` before sending anything; none: it would send it."""
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
