"""Resolve a JobSpec for one provider: machines, replicas, batch, learning rate, strategy, paths.

``plan(spec, provider)`` is the one place these are derived. Backends render requests
from the Plan, the cost table prices it and the runtime receives its ``RuntimeConfig``;
nothing downstream derives them again.

Example:
>>> from cloudtrain.spec import JobSpec
>>> spec = JobSpec(
...     name="demo", code={"module": "trainer.task"}, storage={"root": "gs://bucket/demo"},
...     resources={"accelerator": "a100-40gb", "per_host": 8, "hosts": 2}, vertex={"project": "my-project"},
... )
>>> from cloudtrain.provider import registry
>>> p = plan(spec, registry.get("vertex"))
>>> p.machine.machine_type, p.replicas, p.global_batch, p.strategy
('a2-highgpu-8g', 16, 512, 'multi-worker')
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from cloudtrain import catalog, installed
from cloudtrain.arguments import TEXT, expect
from cloudtrain.capacity import Capacity
from cloudtrain.errors import SpecError
from cloudtrain.spec import JobSpec
from cloudtrain_runtime import config as runtime_config
from cloudtrain_runtime import rules
from cloudtrain_runtime.errors import ConfigError

if TYPE_CHECKING:
    from cloudtrain.outputs import Outputs


# Where a run's URIs name its id until the run id is known (``cloudtrain plan`` without --run-id).
RUN = "{run}"
RUNS_FOLDER = "runs"
LATEST_FILE = "latest.json"


# A run id fits a Vertex label value, a SageMaker tag value and a path segment as it is.
RUN_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")


def check_run_id(run_id: str) -> str:
    """``run_id`` if it is one (``cloudtrain.runs``).

    Raises:
        SpecError: ``run_id`` is not a string of 1-63 lowercase letters, digits, '-' or '_'.
    """
    expect(run_id=(run_id, TEXT))
    if not RUN_ID.fullmatch(run_id):
        raise SpecError(
            f"run_id: {run_id[:80]!r} is not a run id. Use 1-63 lowercase letters, digits, '-' or '_', "
            "starting with a letter or digit, e.g. 2026-12-03 or nightly-42."
        )
    return run_id


@runtime_checkable
class Target(Protocol):
    """What a plan needs of the provider it is made for: its facts, its checks, where outputs land.

    Every provider is one (``cloudtrain.provider.base.Provider`` extends this protocol);
    planning reads these and nothing else, and a ``Plan`` carries its provider as
    ``Plan.target``, so nothing after planning looks the provider up again.
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

    def region(self, spec: JobSpec) -> str:
        """The region the job runs in (``"local"`` where there is none)."""
        ...

    def storage_root(self, spec: JobSpec) -> str:
        """Where the job's backups, logs and model live on this provider."""
        ...

    def check(self, spec: JobSpec) -> list[str]:
        """Problems that stop ``spec`` from running here, one message per problem (field first)."""
        ...

    def outputs(self, plan: Plan, request: dict[str, Any] | None = None) -> Outputs:
        """Where each artifact of ``plan``'s job ends up, true on the service (``cloudtrain.outputs``).

        With the rendered ``request``, whatever it already names (a job name) is filled in.
        """
        ...


@runtime_checkable
class PicksMachine(Protocol):
    """A provider whose spec section names the machine its jobs run on (a cluster's node type). Optional.

    Planning takes its answer instead of choosing among the provider's catalog rows, and
    the cost table prices its jobs on that machine alone, or says why it cannot. A machine
    the catalog does not describe (``vcpus`` 0) stands for any machine with the spec's
    accelerators; its ``source`` says so, in words.
    """

    def machine(self, spec: JobSpec) -> catalog.Machine:
        """The machine each host of ``spec``'s job runs on.

        Raises:
            SpecError: the spec names a machine that cannot run it.
        """
        ...

    def unpriced(self, spec: JobSpec) -> str | None:
        """Why the cost table cannot price ``spec``'s job here, in words; None when it can."""
        ...


@dataclass(frozen=True)
class StoragePaths:
    """Where each role writes, as provider URIs (or local paths).

    Everything one run makes lives under its own prefix, ``run`` = ``ROOT/runs/<run_id>``:
    backups, TensorBoard logs, the export and the result files, so no run overwrites or
    deletes another's (``cloudtrain.runs``). Two things are shared by the runs of a root:
    the code bundles (``code``, named by their content hash) and ``latest``, the pointer
    to the run whose export was verified last.
    """

    root: str
    run: str
    backup: str
    tensorboard: str
    export: str
    code: str
    latest: str


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
    ``usd_per_hour`` is the planned shape's price, every host at the planned rate (spot on
    spot): what an hour of the running job costs, so ``status`` prices the time left to
    finish (None for a job submitted without it).
    """

    usd: float
    basis: str
    usd_per_hour: float | None = None


def stored_dollars(text: str | None) -> float | None:
    """A dollar figure as a job's tag or annotation carries it; None for none, or one edited into nonsense.

    >>> stored_dollars("1.26"), stored_dollars("nan"), stored_dollars("-1"), stored_dollars(None)
    (1.26, None, None, None)
    """
    try:
        usd = float(text or "")
    except ValueError:
        return None
    return usd if math.isfinite(usd) and usd >= 0 else None


@dataclass(frozen=True)
class Plan:
    """A JobSpec resolved for one provider. Everything a backend or the runtime needs."""

    target: Target
    """The provider the plan is made for (``provider`` is its name)."""
    spec: JobSpec
    region: str
    machine: catalog.Machine | None
    hosts: int
    devices_per_host: int
    replicas: int
    per_replica_batch: int
    global_batch: int
    base_learning_rate: float
    learning_rate: float
    lr_scaling: str
    steps_per_epoch: int | None
    warmup_steps: int | None
    strategy: str
    strategy_reason: str
    mixed_precision: str
    storage: StoragePaths
    image: str
    bundle: str | None = None
    """URI of the code bundle, once packed (see ``with_bundle``); render needs it."""
    run_id: str | None = None
    """Which run of the same spec and code this is (see ``with_run``); None: the request alone."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables cloudtrain itself adds to every container (see ``with_env``); empty for training."""
    estimate: ExpectedCost | None = None
    """The cost expected at submit time, stored with the job (see ``with_estimate``); None: none."""
    hparams: Mapping[str, int | float | str] = field(default_factory=dict)
    """A sweep trial's values (``cloudtrain.sweep``); empty: the provider hands them to each trial."""

    @property
    def provider(self) -> str:
        """The name of the provider the plan is made for (``target.name``)."""
        return self.target.name

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def spot(self) -> bool:
        return self.spec.resources.capacity.mode == "spot"

    @property
    def capacity(self) -> Capacity:
        """How the job gets its machines (``resources.capacity``)."""
        return self.spec.resources.capacity

    @property
    def capacity_quota(self) -> str | None:
        """The quota the capacity mode draws on, where the catalog says (``catalog/capacity.csv``):
        on Vertex AI spot and flex-start draw on the preemptible quota. None: not said."""
        offer = catalog.capacity_offers(self.provider).get(self.capacity.mode)
        return offer.quota if offer is not None and offer.quota else None

    @property
    def max_runtime_s(self) -> int:
        return self.spec.limits.max_runtime

    @property
    def outputs(self) -> Outputs:
        """Where each artifact really is after the job, as the provider documents it.

        A sweep's are its best trial's, ``{trial}`` standing for it (``cloudtrain.sweep``),
        from a provider that runs sweeps (``cloudtrain.provider.sweeps.TunesJobs``).
        """
        sweep_outputs = getattr(self.target, "sweep_outputs", None)
        if self.spec.tuning is not None and not self.hparams and sweep_outputs is not None:
            found: Outputs = sweep_outputs(self)
            return found
        return self.target.outputs(self)

    def with_run(self, run_id: str | None) -> Plan:
        """This plan as run ``run_id``: its artifacts move under ``ROOT/runs/<run_id>``.

        The run id is part of the request, so the provider's idempotency key becomes
        (request, run_id): the same run id attaches to the job it made or resumes it (a
        retried pipeline step), a new one (a scheduled retrain of unchanged code) makes a
        new job with artifacts of its own. None leaves the run to be named at submit
        (``cloudtrain.runs``), and the URIs say ``{run}``.

        Raises:
            SpecError: ``run_id`` is not 1-63 lowercase letters, digits, '-' or '_'.
        """
        if run_id is not None:
            check_run_id(run_id)
        return replace(self, run_id=run_id, storage=storage_paths(self.storage.root, run_id))

    def with_env(self, env: Mapping[str, str]) -> Plan:
        """This plan with ``env`` added to every container's environment by render.

        It is part of the rendered request, so the request hash (and with it the job name
        submit's idempotency keys on) differs from the same plan's training job: a bench
        never attaches to a real training job, nor the reverse. The user's ``env`` cannot
        carry these: ``CLOUDTRAIN_*`` names are reserved there.
        """
        return replace(self, env={**self.env, **env})

    def with_estimate(self, estimate: ExpectedCost | None) -> Plan:
        """This plan with the cost expected at submit time, which render stores with the job.

        It is not part of the request's identity (its hash, the job name): the same job
        submitted again after a price change, or with a measured throughput, still attaches.
        """
        return replace(self, estimate=estimate)

    def with_hparams(self, hparams: Mapping[str, int | float | str]) -> Plan:
        """This plan as a sweep trial with these values (``cloudtrain.sweep``), in ``config.hparams``."""
        return replace(self, hparams=dict(hparams))

    def with_bundle(self, uri: str) -> Plan:
        """This plan with the code bundle's URI filled in; render needs it."""
        return replace(self, bundle=uri)

    @property
    def runtime(self) -> runtime_config.RuntimeConfig:
        """What travels into the container: this plan, in the runtime's words.

        Built by the runtime's own ``from_dict``, so a key the runtime does not define (or
        one it needs and misses) fails here, at plan time, rather than in the container.
        """
        spec, training = self.spec, self.spec.training
        values: dict[str, Any] = {
            "name": spec.name,
            "module": spec.code.module,
            "script": spec.code.script,
            "args": spec.code.args,
            "bundle": self.bundle,
            "epochs": training.epochs,
            "steps_per_epoch": training.steps_per_epoch,
            "per_replica_batch": self.per_replica_batch,
            "replicas": self.replicas,
            "learning_rate": self.learning_rate,
            "base_learning_rate": self.base_learning_rate,
            "warmup_epochs": training.learning_rate.warmup_epochs,
            "mixed_precision": self.mixed_precision,
            "strategy": self.strategy,
            "strategy_requested": training.strategy,
            "keras_backend": training.keras_backend,
            "layout_map": training.layout_map,
            "model_parallel": training.model_parallel,
            "accelerator": spec.resources.accelerator,
            "allow_cpu_fallback": spec.resources.allow_cpu_fallback,
            "devices_per_host": self.devices_per_host,
            "hosts": self.hosts,
            "run_id": self.run_id,
            "backup_dir": self.storage.backup,
            "tensorboard_dir": self.storage.tensorboard,
            "export_dir": self.storage.export,
            "latest_file": self.storage.latest,
            "data": spec.data,
            "hang_timeout": training.hang_timeout,
        }
        values.update({name: getattr(training, name) for name in runtime_config.SWITCH_DOCS})
        if spec.tracking is not None:
            values["tracking_uri"] = spec.tracking.uri
            values["tracking_experiment"] = spec.tracking.experiment_for(spec.name)
            values["tracking_tags"] = spec.tracking.tags
            values["log_model"] = spec.tracking.log_model
        if spec.tuning is not None:
            values["tuned"] = {name: p.kind for name, p in spec.tuning.parameters.items()}
            values["objective"] = spec.tuning.objective.metric
            values["hparams"] = dict(self.hparams)
        try:
            return runtime_config.from_dict(values, "the plan")
        except ConfigError as err:  # a value the spec let through: still a spec error, never a traceback
            raise SpecError(str(err)) from None

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON-ready data (what ``cloudtrain plan --json`` prints)."""
        return {
            "name": self.name,
            "provider": self.provider,
            "region": self.region,
            "machine": asdict(self.machine) if self.machine else None,
            "hosts": self.hosts,
            "devices_per_host": self.devices_per_host,
            "replicas": self.replicas,
            "per_replica_batch": self.per_replica_batch,
            "global_batch": self.global_batch,
            "learning_rate": {
                "base": self.base_learning_rate,
                "scaled": self.learning_rate,
                "scaling": self.lr_scaling,
                "warmup_epochs": self.spec.training.learning_rate.warmup_epochs,
                "warmup_steps": self.warmup_steps,
            },
            "steps_per_epoch": self.steps_per_epoch,
            "epochs": self.spec.training.epochs,
            "strategy": self.strategy,
            "strategy_reason": self.strategy_reason,
            "mixed_precision": self.mixed_precision,
            "spot": self.spot,
            "capacity": self.capacity.model_dump(exclude_defaults=True) or {"mode": "on_demand"},
            "capacity_quota": self.capacity_quota,
            "max_pending_s": self.spec.max_pending_s,
            "max_runtime_s": self.max_runtime_s,
            "image": self.image,
            "bundle": self.bundle,
            "run_id": self.run_id,
            "storage": asdict(self.storage),
            "outputs": self.outputs.to_dict(),
        }

    def __repr__(self) -> str:
        machine = self.machine.machine_type if self.machine else "local"
        return (
            f"Plan(name={self.name!r}, provider={self.provider!r}, machine={machine!r}, "
            f"hosts={self.hosts}, replicas={self.replicas}, global_batch={self.global_batch}, "
            f"strategy={self.strategy!r})"
        )


def plan(spec: JobSpec, target: Target) -> Plan:
    """Resolve ``spec`` for the provider ``target`` (``cloudtrain.plan`` takes a provider's name).

    Raises:
        SpecError: with one message per problem when the spec cannot run on the provider.
    """
    problems = _provider_problems(spec, target)
    machine = None
    kind = catalog.accelerators()[spec.resources.accelerator].kind
    if target.machine_catalog and kind not in target.unsupported:
        machine, machine_problems = _machine(spec, target)
        problems += machine_problems + _reserved_machine_problems(spec, machine)
    if problems:
        raise SpecError(spec.explained(problems))
    return _resolve(spec, target, machine)


def _provider_problems(spec: JobSpec, provider: Target) -> list[str]:
    """What the provider's facts rule out (storage schemes, runtime, hardware), then its own checks."""
    kind = catalog.accelerators()[spec.resources.accelerator].kind
    problems = []
    if kind in provider.unsupported:
        problems.append(f"resources.accelerator: {provider.unsupported[kind]}.")
    if provider.schemes:
        problems += _scheme_problems(spec, provider)
    limit = provider.max_runtime_s
    if limit is not None and spec.limits.max_runtime > limit:
        days = limit // 86400
        what = "spot training" if spec.resources.spot else "training"
        problems.append(
            f"limits.max_runtime: {human_duration(spec.limits.max_runtime)} exceeds the {days}-day maximum "
            f"for {what} on {provider.title} ({provider.max_runtime_field}). "
            f"Set limits.max_runtime to {days}d or less."
        )
    return problems + _capacity_problems(spec, provider) + _tracking_problems(spec) + provider.check(spec)


def _tracking_problems(spec: JobSpec) -> list[str]:
    """Tracking turned on with nowhere to log to: no ``tracking.uri``, ``--tracking`` or ``MLFLOW_TRACKING_URI``."""
    if spec.tracking is None or spec.tracking.uri is not None:
        return []
    return [
        "tracking.uri: tracking is on but no MLflow tracking URI is set. Set tracking.uri, pass "
        "--tracking URI, or export MLFLOW_TRACKING_URI (e.g. http://127.0.0.1:5000)."
    ]


# What a provider without capacity rows is taken to offer: what every provider did before modes.
PLAIN_MODES = ("on_demand", "spot")


def _capacity_problems(spec: JobSpec, provider: Target) -> list[str]:
    """A capacity mode the provider does not offer, refused with what it offers instead (``catalog/capacity.csv``)."""
    mode = spec.resources.capacity.mode
    offers = catalog.capacity_offers(provider.name)
    offer = offers.get(mode)
    if offer is not None and offer.offered:
        return []
    if offer is not None:
        return [f"resources.capacity: {offer.instead}."]
    if not offers and mode in PLAIN_MODES:
        return []
    offered = [name for name, found in offers.items() if found.offered] or list(PLAIN_MODES)
    return [
        f"resources.capacity: {provider.title} does not offer capacity mode {mode!r}. "
        f"Use one of: {', '.join(offered)}."
    ]


def _reserved_machine_problems(spec: JobSpec, machine: catalog.Machine | None) -> list[str]:
    """A reservation serves only its own machine type, exactly (Compute Engine reservations;
    Vertex AI: "Your reservation's VM instance properties must match exactly",
    https://cloud.google.com/vertex-ai/docs/predictions/use-reservations)."""
    reserved = spec.resources.capacity.reserved_machine
    if reserved is None or machine is None or machine.machine_type == reserved:
        return []
    return [
        f"resources.capacity.reserved_machine: the reservation holds {reserved}, but this job runs on "
        f"{machine.machine_type}, which it would not serve. Set resources.accelerator: {reserved} (its accelerators "
        "and machine), or use capacity: on_demand."
    ]


def _scheme_problems(spec: JobSpec, provider: Target) -> list[str]:
    problems = []
    schemes = " or ".join(provider.schemes)
    root = provider.storage_root(spec)
    if not root.startswith(provider.schemes):
        examples = " or ".join(f"{scheme}BUCKET/path" for scheme in provider.schemes)
        problems.append(
            f"storage.root: {root!r} cannot be used on {provider.title}, which needs a {schemes} URI. "
            f"Set {provider.name}.storage_root (or storage.root) to {examples}."
        )
    for channel, uri in spec.data.items():
        if not uri.startswith(provider.schemes):
            problems.append(
                f"data.{channel}: {uri!r} cannot be read on {provider.title}; use a {schemes} URI."
            )
    return problems


def _machine(spec: JobSpec, provider: Target) -> tuple[catalog.Machine | None, list[str]]:
    if isinstance(provider, PicksMachine):
        try:
            return provider.machine(spec), []
        except SpecError as exc:
            return None, exc.problems
    res = spec.resources
    if res.machine_type is not None and catalog.device_counts(provider.name, res.accelerator):
        return _chosen_machine(spec, provider)
    machine = catalog.machine_for(provider.name, res.accelerator, res.per_host)
    if machine is not None:
        return machine, []
    counts = catalog.device_counts(provider.name, res.accelerator)
    title = provider.title
    if not counts:
        offered = sorted({m.accelerator for m in catalog.machines(provider.name)})
        return None, [
            f"resources.accelerator: {res.accelerator!r} is not offered on {title}. "
            f"Choose one of: {', '.join(offered)}."
        ]
    kind = "chip" if catalog.accelerators()[res.accelerator].kind == "tpu" else "GPU"
    return None, [
        f"resources.per_host: {res.per_host} is not a valid {kind} count for {res.accelerator} "
        f"on {provider.name} ({', '.join(map(str, counts))})."
    ]


def _chosen_machine(spec: JobSpec, provider: Target) -> tuple[catalog.Machine | None, list[str]]:
    """The machine ``resources.machine_type`` names, if the provider's catalog has it for this hardware."""
    res = spec.resources
    offered = catalog.machines(provider.name)
    machine = next(
        (m for m in offered if m.machine_type == res.machine_type and m.accelerator == res.accelerator), None
    )
    fitting = [
        m.machine_type for m in offered if m.accelerator == res.accelerator and m.devices == res.per_host
    ]
    if machine is not None and machine.devices == res.per_host:
        return machine, []
    if machine is not None:
        return None, [
            f"resources.machine_type: {res.machine_type!r} has {machine.devices} {res.accelerator} per host, "
            f"but resources.per_host is {res.per_host}. Set resources.per_host: {machine.devices}."
        ]
    other = next((m for m in catalog.machines() if m.machine_type == res.machine_type), None)
    why = (
        f"is a {installed.title(other.provider)} machine with {other.accelerator}"
        if other is not None and other.provider != provider.name
        else f"carries {other.accelerator}, not {res.accelerator}"
        if other is not None
        else f"is not a {provider.title} machine type in the catalog"
    )
    choices = f"choose one of {', '.join(fitting)}." if fitting else "the catalog has none: leave it out."
    return None, [
        f"resources.machine_type: {res.machine_type!r} {why}. For {res.per_host} × {res.accelerator} "
        f"on {provider.title}, {choices}"
    ]


def _resolve(spec: JobSpec, provider: Target, machine: catalog.Machine | None) -> Plan:
    res, training = spec.resources, spec.training
    devices = machine.devices if machine else res.per_host
    replicas = res.hosts * devices
    per_replica = _per_replica_batch(spec, replicas, devices)
    global_batch = per_replica * replicas
    strategy, reason = choose_strategy(spec, devices)
    lr = training.learning_rate
    scaled = scale_learning_rate(lr.base, replicas, lr.scaling)
    steps = _steps_per_epoch(spec, global_batch)
    warmup = math.ceil(lr.warmup_epochs * steps) if steps and lr.warmup_epochs else None
    storage = storage_paths(provider.storage_root(spec))
    precision = mixed_precision(training.mixed_precision, res.accelerator if machine else "cpu")
    region = provider.region(spec)
    return Plan(
        target=provider,
        spec=spec,
        region=region,
        machine=machine,
        hosts=res.hosts,
        devices_per_host=devices,
        replicas=replicas,
        per_replica_batch=per_replica,
        global_batch=global_batch,
        base_learning_rate=lr.base,
        learning_rate=scaled,
        lr_scaling=lr.scaling,
        steps_per_epoch=steps,
        warmup_steps=warmup,
        strategy=strategy,
        strategy_reason=reason,
        mixed_precision=precision,
        storage=storage,
        image=resolve_image(spec, provider, region, machine),
    )


DEFAULT_PER_REPLICA_BATCH = 32


def _per_replica_batch(spec: JobSpec, replicas: int, devices: int) -> int:
    """Per-replica batch from the spec; a global batch must split evenly over the replicas."""
    training = spec.training
    if training.global_batch is None:
        return training.per_replica_batch or DEFAULT_PER_REPLICA_BATCH
    if training.global_batch % replicas:
        lower = training.global_batch // replicas * replicas
        options = " or ".join(str(n) for n in (lower, lower + replicas) if n > 0)
        raise SpecError(
            f"training.global_batch: {training.global_batch} does not divide over {replicas} replicas "
            f"({spec.resources.hosts} hosts × {devices} {spec.resources.accelerator}). "
            f"Use a multiple of {replicas} (e.g. {options}), or set training.per_replica_batch."
        )
    return training.global_batch // replicas


def _steps_per_epoch(spec: JobSpec, global_batch: int) -> int | None:
    training = spec.training
    if training.steps_per_epoch:
        return training.steps_per_epoch
    if training.examples_per_epoch:
        return math.ceil(training.examples_per_epoch / global_batch)
    return None


def choose_strategy(spec: JobSpec, devices_per_host: int) -> tuple[str, str]:
    """The strategy the runtime will create, and why, in one line.

    An explicit ``training.strategy`` wins when the hardware allows it.

    Raises:
        SpecError: naming the rule the requested strategy breaks on this hardware.
    """
    res = spec.resources
    verdict = _strategy_verdict(spec, res.accelerator, devices_per_host=devices_per_host, hosts=res.hosts)
    if verdict.broken:
        raise SpecError(verdict.text("spec"))
    assert verdict.strategy is not None  # every fact is known once the machine is
    if verdict.strategy == "keras-model-parallel":  # the mesh spans every device of every host
        problem = rules.model_axis_problem(spec.training.model_parallel, res.hosts * devices_per_host)
        if problem:
            raise SpecError(problem)
    return verdict.strategy, verdict.text("spec")


def strategy_problem(spec: JobSpec, accelerator: str, *, devices_per_host: int, hosts: int) -> str | None:
    """Why ``spec``'s strategy cannot run on ``hosts`` × ``devices_per_host`` ``accelerator``; None if it can.

    Example:
    >>> spec = JobSpec(name="demo", code={"module": "trainer.task"}, training={"strategy": "mirrored"})
    >>> strategy_problem(spec, "tpu-v5e", devices_per_host=8, hosts=1)
    "training.strategy: 'mirrored' cannot drive a TPU. Use strategy 'tpu' or auto."
    """
    verdict = _strategy_verdict(spec, accelerator, devices_per_host=devices_per_host, hosts=hosts)
    return verdict.text("spec") if verdict.broken else None


def _strategy_verdict(spec: JobSpec, accelerator: str, *, devices_per_host: int, hosts: int) -> rules.Verdict:
    training = spec.training
    setup = rules.Setup(
        training.strategy,
        keras_backend=training.keras_backend,
        hosts=hosts,
        devices_per_host=devices_per_host,
        kind=catalog.accelerators()[accelerator].kind,
        layout_map=bool(training.layout_map),
    )
    return rules.decide(setup)


def scale_learning_rate(base: float, replicas: int, scaling: str) -> float:
    """Scale a single-replica learning rate to ``replicas`` replicas.

    Example:
    >>> scale_learning_rate(0.001, 8, "linear")
    0.008
    """
    factor = {"linear": replicas, "sqrt": math.sqrt(replicas), "none": 1}[scaling]
    return round(base * factor, 12)


def mixed_precision(requested: str, accelerator: str) -> str:
    """Resolve ``auto``: bf16 where the hardware has it, fp16 on older GPUs, off on CPU."""
    if requested != "auto":
        return requested
    accel = catalog.accelerators()[accelerator]
    if accel.kind == "cpu":
        return "off"
    return "bf16" if accel.bf16 else "fp16"


def storage_paths(root: str, run_id: str | None = None) -> StoragePaths:
    """Every storage role of run ``run_id`` under ``root`` (``{run}`` while it has none).

    The run's folders have the names of Vertex's AIP_*_DIR variables (``model``,
    ``checkpoints``, ``logs``) under its prefix, which is what Vertex derives them from.

    Example:
    >>> paths = storage_paths("gs://b/churn/", "2026-12-03")
    >>> paths.export, paths.code, paths.latest
    ('gs://b/churn/runs/2026-12-03/model', 'gs://b/churn/code', 'gs://b/churn/latest.json')
    """
    base = root.rstrip("/")
    run = f"{base}/{RUNS_FOLDER}/{run_id or RUN}"
    return StoragePaths(
        root=base,
        run=run,
        backup=f"{run}/checkpoints",
        tensorboard=f"{run}/logs",
        export=f"{run}/model",
        code=f"{base}/code",
        latest=f"{base}/{LATEST_FILE}",
    )


def resolve_image(spec: JobSpec, provider: Target, region: str, machine: catalog.Machine | None) -> str:
    """The container image: the spec's URI, or for ``auto`` the catalog's image for this hardware."""
    if spec.image != "auto" or not provider.machine_catalog:
        return spec.image if spec.image != "auto" else "local"
    kind = catalog.accelerators()[machine.accelerator].kind if machine else "cpu"
    for row in catalog.images():
        if row["provider"] == provider.name and row["kind"] == kind:
            return catalog.image_uri(row, region)
    raise SpecError(
        f"image: auto has no maintained TensorFlow {kind.upper()} image on {provider.title}. "
        f"Build containers/{kind}.Dockerfile, push it, and set image: to its URI."
    )


def human_duration(seconds: int) -> str:
    """Whole seconds as the spec writes them: ``2d``, ``1h``, ``90m``, ``20s``.

    >>> human_duration(3600), human_duration(20)
    ('1h', '20s')
    """
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
