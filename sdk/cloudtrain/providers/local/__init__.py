"""The local provider, the embedded default: the same job on this machine, one process per host.

``Local()`` runs the local request; ``Local(emulate="vertex")`` plans for that provider,
renders its real request and runs it here with the environment that provider gives each
replica; ``fault="worker:0@epoch:1"`` makes that replica kill itself once, to watch the
restart recover; ``refuse="capacity"`` or ``"quota"`` makes the emulated provider refuse
the job as its service would (no capacity for it; no quota left), to watch a placement
fail over. These options belong to this provider alone: they reach it as a
configured provider object, never through the neutral submit path.

Example:
>>> provider.name, provider.billed
('local', False)
>>> Local(emulate="vertex").plans_for
'vertex'
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from cloudtrain import files, planning, runs
from cloudtrain.errors import MissingDependencyError, ProviderError, SpecError, require, require_all
from cloudtrain.outputs import JOB, Outputs, standard
from cloudtrain.provider.emulation import Emulable, RefusesWhenEmulated
from cloudtrain.providers.local.emulate import emulable, emulator
from cloudtrain.providers.local.records import status_record
from cloudtrain.providers.local.render import (
    MAX_RESTARTS,
    check_fault_target,
    process_layout,
    render,
    with_fault,
)
from cloudtrain_runtime import requirements

if TYPE_CHECKING:
    from cloudtrain.bundle import Bundle
    from cloudtrain.planning import Plan
    from cloudtrain.progress import OnProgress
    from cloudtrain.provider.base import JobSummary, Provider
    from cloudtrain.providers.local.backups import FolderStore
    from cloudtrain.providers.local.job import LocalJob
    from cloudtrain.providers.local.sweep import LocalSweep
    from cloudtrain.sources import Sources
    from cloudtrain.spec import JobSpec
    from cloudtrain_runtime.diagnosis import Check

__all__ = ["MAX_RESTARTS", "Local", "LocalJob", "provider"]

# What an emulated provider may refuse a job for (``RefusesWhenEmulated``).
REFUSALS = ("capacity", "quota")

# What every replica imports (cloudtrain_runtime.session: _start_tensorflow, _start_jax), by
# training.keras_backend, and the extras that install it. JAX trains, tf.data feeds it.
# What a run's output file may hold when read back, as the clouds' read_output caps it.
MAX_OUTPUT_BYTES = 16 * 1024 * 1024
RUNTIME_STACK = {
    "tensorflow": (("tensorflow", "keras", "numpy"), "runtime"),
    "jax": (("jax", "keras", "tensorflow", "numpy"), "runtime,jax"),
}


def refuser(emulated: Emulable | None, refuse: str | None) -> RefusesWhenEmulated | None:
    """The emulated provider that refuses jobs as ``refuse`` says; None when nothing is refused.

    Raises:
        SpecError: ``refuse`` is not a refusal, or is given without an emulated provider
            that can refuse.
    """
    if refuse is None:
        return None
    if refuse not in REFUSALS:
        raise SpecError(f"refuse: {refuse!r} is not a refusal; use {' or '.join(REFUSALS)}.")
    if not isinstance(emulated, RefusesWhenEmulated):
        able = [name for name in emulable() if isinstance(emulator(name), RefusesWhenEmulated)]
        raise SpecError(
            f"{refuse}@: only an emulated {' or '.join(able)} refuses jobs here; "
            f"{emulated.name if emulated else 'the local provider'} does not."
        )
    return emulated


class Local:
    """This machine as a provider: free, no region, any accelerator but TPUs."""

    name = "local"
    title = "this machine"
    schemes: tuple[str, ...] = ()
    machine_catalog = False
    billed = False
    max_runtime_s = None
    max_runtime_field = ""
    unsupported: Mapping[str, str] = MappingProxyType(
        {"tpu": "TPUs cannot be emulated by the local provider; use --provider vertex"}
    )
    catalog_dir: Path | None = None
    color = "#5f6368"

    def __init__(
        self, *, emulate: str | None = None, fault: str | None = None, refuse: str | None = None
    ) -> None:
        self.emulate = emulate
        self.fault = fault
        self.refuse = refuse
        with_fault({}, fault)  # a bad fault is refused before anything is planned
        self.emulated = emulator(emulate) if emulate is not None else None
        self.refuser = refuser(self.emulated, refuse)

    @property
    def plans_for(self) -> str:
        """The provider whose plan this runs: the emulated one, else local."""
        return self.emulate or self.name

    def __repr__(self) -> str:
        return f"Local(emulate={self.emulate!r}, fault={self.fault!r}, refuse={self.refuse!r})"

    def region(self, spec: JobSpec) -> str:
        return "local"

    def storage_root(self, spec: JobSpec) -> str:
        return spec.storage.root

    def check(self, spec: JobSpec) -> list[str]:
        return []

    def processes(self, plan: Plan) -> str:
        """``4 processes, one CPU device each: ...`` where hosts × devices cannot share a process (``render.process_layout``)."""
        count, devices = process_layout(plan)
        if count == plan.hosts:
            return f"{count} (one per host, {devices} CPU device{'s' * (devices != 1)} each)"
        return (
            f"{count}, one CPU device each: TensorFlow's MultiWorkerMirroredStrategy drives one CPU device per "
            f"worker, so {plan.hosts} hosts × {plan.devices_per_host} devices run as {count} workers (the "
            f"all-reduce of {plan.hosts} × {plan.devices_per_host} GPUs)"
        )

    def preflight(self, spec: JobSpec) -> list[str]:
        """The code's requirements against the Python that runs the replicas, as ``submit`` checks them."""
        problem = requirements_problem(Path(spec.code.source_dir))
        return [problem] if problem else []

    def plan(self, spec: JobSpec) -> Plan:
        """The emulated provider's plan (its request runs here), else this machine's."""
        return planning.plan(spec, self.emulated or self)

    def new_run_id(self, plan: Plan) -> str:
        """A new run on every submit without a run id, as a script started twice would be."""
        return runs.fresh()

    def render(self, plan: Plan) -> dict[str, Any]:
        """The request that runs ``plan`` here, with the fault to inject, which must be one that can fire."""
        request = with_fault(render(plan), self.fault)
        check_fault_target(request, self.fault, plan.spec.training.epochs)
        if self.refuse == "capacity" and self.refuser is not None:
            return {**request, "stockout": status_record(self.refuser.stockout(plan))}
        return request

    def outputs(self, plan: Plan, request: dict[str, Any] | None = None) -> Outputs:
        """Under the storage root, as the runtime writes them; the logs in the run folder (``{job}``).

        A rendered request (an emulated cloud's included) says where they land on this machine.
        """
        if request is not None:
            return Outputs(**request["outputs"])
        from cloudtrain.providers.local.job import local_home

        return standard(plan.storage.run, logs=str(local_home() / "runs" / JOB / "output.log"))

    def upload(
        self, plan: Plan, bundle: Bundle, *, clients: Any = None, progress: OnProgress | None = None
    ) -> None:
        """Nothing to do ahead: a local run copies its bundle when it starts (``run.submit``)."""

    def read_output(self, plan: Plan, uri: str, *, clients: Any = None) -> bytes:
        """The file at ``uri``: a local job's outputs are paths on this machine.

        Read within the clouds' own cap (``MAX_OUTPUT_BYTES``), and never from a FIFO or a
        device a run folder may hold instead of its file.
        """
        try:
            return files.read_bytes(uri, limit=MAX_OUTPUT_BYTES)
        except FileNotFoundError as error:
            raise ProviderError(f"{uri}: the job wrote no such file ({error.strerror}).") from error
        except files.UnreadableFile as error:
            raise ProviderError(str(error)) from None

    def run_store(self, uri: str, *, region: str = "local", clients: Any = None) -> FolderStore:
        """The run's files on this machine: a folder, or under an emulated job's stand-in buckets."""
        from cloudtrain.providers.local.backups import FolderStore, folder_of
        from cloudtrain.providers.local.job import local_home

        return FolderStore(folder_of(uri, local_home()), uri)

    def submit(
        self,
        plan: Plan,
        request: dict[str, Any],
        bundle: Bundle,
        *,
        clients: Any = None,
        progress: OnProgress | None = None,
    ) -> LocalJob:
        """Start the replicas here, once this Python can import what they train with.

        An emulated provider told to refuse the job for quota raises what its service would.
        """
        from cloudtrain.providers.local import run

        if self.refuse == "quota" and self.refuser is not None:
            raise self.refuser.quota_refusal(plan)
        require_runnable(plan.spec)
        return run.submit(plan, request, bundle, progress)

    def check_setup(self, spec: JobSpec, sources: Sources) -> list[Check]:
        """Python, the runtime and the job's requirements (as ``submit`` checks them), free disk."""

        from cloudtrain.providers.local import setup_checks

        return setup_checks.check_setup(spec, require=lambda: require_runnable(spec))

    def render_sweep(self, plan: Plan) -> dict[str, Any]:
        """The local search's request (``sweep``): the trials run here, or as the emulated cloud."""
        from cloudtrain.providers.local import sweep

        return sweep.render(plan, emulate=self.emulate)

    def sweep_outputs(self, plan: Plan, request: dict[str, Any] | None = None) -> Outputs:
        """Trial ``{trial}``'s, under ``<root>/runs/<trial run id>`` (``sweep.template_outputs``)."""
        from cloudtrain.providers.local import sweep

        return sweep.template_outputs(plan.storage.root)

    def submit_sweep(
        self,
        plan: Plan,
        request: dict[str, Any],
        bundle: Bundle,
        *,
        clients: Any = None,
        progress: OnProgress | None = None,
    ) -> LocalSweep:
        """Start the sweep's driver here; each trial is a local run (``submit``'s checks first)."""
        from cloudtrain.providers.local import sweep

        require_runnable(plan.spec)
        require("optuna", "tuning")
        return sweep.submit(plan, request, bundle)

    def attach(self, job_id: str, *, clients: Any = None) -> LocalJob | LocalSweep:
        """The run or sweep ``job_id`` names: its folder, else (``local:<run id>``) the newest job of that run.

        Raises:
            JobNotFoundError: neither is here.
        """
        from cloudtrain.providers.local import listing, run, sweep

        if sweep.owns(job_id):
            return sweep.attach(job_id)
        if run.exists(job_id):
            return run.attach(job_id)
        name = job_id.removeprefix(run.ID_PREFIX)
        newest = listing.jobs_of_run(name)[:1] if runs.RUN_ID.fullmatch(name) else []
        if newest:
            return self.attach(newest[0].id)
        return run.attach(job_id)

    def owns(self, job_id: str) -> bool:
        from cloudtrain.providers.local import run, sweep

        return run.owns(job_id) or sweep.owns(job_id)

    def configured(self, settings: JobSpec) -> str | None:
        """Always: the runs are folders on this machine."""
        return None

    def list_jobs(self, settings: JobSpec, *, limit: int | None) -> list[JobSummary]:
        """The run folders under ``runs/`` and the sweeps under ``sweeps/``, newest first."""
        from cloudtrain.providers.local import listing, sweep

        found = listing.list_runs(limit=limit) + sweep.list_sweeps(limit=limit)
        return sorted(found, key=lambda job: job.created, reverse=True)[:limit]

    def jobs_of_run(self, run_id: str, settings: JobSpec, *, clients: Any = None) -> list[JobSummary]:
        """The local jobs (runs and sweeps) whose request names run ``run_id``, newest first."""
        from cloudtrain.providers.local import listing

        return listing.jobs_of_run(run_id)


provider: Provider = Local()


def require_runnable(spec: JobSpec) -> None:
    """Raise MissingDependencyError when this Python could not run ``spec``'s replicas.

    What a job, a sweep's trials and ``cloudtrain check`` all ask first: the runtime's
    stack for the spec's Keras backend (``require_runtime``) and the code's requirements
    (``require_requirements``).
    """
    require_runtime(spec.training.keras_backend)
    require_requirements(Path(spec.code.source_dir))


def require_runtime(keras_backend: str) -> None:
    """Raise MissingDependencyError, with the pip command, when the replicas could not train.

    The replicas run ``python -m cloudtrain_runtime`` with this interpreter, so it is
    checked here, before any process starts, rather than failing in every replica.
    """
    modules, extra = RUNTIME_STACK[keras_backend]
    require_all(modules, extra, needed_for=f"training on this machine with keras_backend {keras_backend}")


def require_requirements(source_dir: Path) -> None:
    """Raise MissingDependencyError when this Python lacks what the code's requirements.txt asks for.

    The replicas run with this interpreter, which cloudtrain never installs into: the
    user installs, once, with the command in the message (a cloud container installs
    the file itself, ``cloudtrain_runtime.requirements``).
    """
    problem = requirements_problem(source_dir)
    if problem:
        raise MissingDependencyError(problem)


def requirements_problem(source_dir: Path) -> str | None:
    """What this Python lacks of the code's requirements.txt, with the pip command; None: nothing."""
    path = source_dir / requirements.FILE
    missing = requirements.unmet(requirements.read(path)) if path.is_file() else []
    if not missing:
        return None
    return (
        f"{path}: this Python ({sys.executable}) lacks {', '.join(missing)}, which the replicas "
        f"would import. Run: {sys.executable} -m pip install -r {path}"
    )


def __getattr__(name: str) -> Any:
    """``LocalJob``, from the job room, imported when first asked for: the spec commands never need it."""
    if name == "LocalJob":
        return importlib.import_module("cloudtrain.providers.local.job").LocalJob
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check_options(name: str, *, emulate: str | None, fault: str | None) -> None:
    """Refuse local-only options for another provider, naming the command that works."""
    if name != "local" and (emulate or fault):
        switch = "--emulate" if emulate else "--fault"
        raise SpecError(
            f"{switch} runs the job on this machine, so it needs --provider local (got {name!r}). "
            f"Use: cloudtrain submit JOB --provider local {switch} {emulate or fault}"
        )
