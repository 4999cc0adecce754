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
>>> p = plan(spec, "vertex")
>>> p.machine.machine_type, p.replicas, p.global_batch, p.strategy
('a2-highgpu-8g', 16, 512, 'multi-worker')
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from cloudtrain import catalog, runs
from cloudtrain.errors import SpecError
from cloudtrain.providers import registry
from cloudtrain.spec import JobSpec
from cloudtrain_runtime import config as runtime_config
from cloudtrain_runtime import rules
from cloudtrain_runtime.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cloudtrain.outputs import Outputs
    from cloudtrain.providers.base import ExpectedCost, Provider


# Where a run's URIs name its id until the run id is known (``cloudtrain plan`` without --run-id).
RUN = "{run}"
RUNS_FOLDER = "runs"
LATEST_FILE = "latest.json"


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


@dataclass(frozen=True)
class Plan:
    """A JobSpec resolved for one provider. Everything a backend or the runtime needs."""

    provider: str
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
    def name(self) -> str:
        return self.spec.name

    @property
    def spot(self) -> bool:
        return self.spec.resources.spot

    @property
    def max_runtime_s(self) -> int:
        return self.spec.limits.max_runtime

    @property
    def outputs(self) -> Outputs:
        """Where each artifact really is after the job, as the provider documents it.

        A sweep's are its best trial's, ``{trial}`` standing for it (``cloudtrain.sweep``).
        """
        from cloudtrain.sweep.submit import TunesJobs

        provider = registry.get(self.provider)
        if self.spec.tuning is not None and not self.hparams and isinstance(provider, TunesJobs):
            return provider.sweep_outputs(self)
        return provider.outputs(self)

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
            runs.check_run_id(run_id)
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
        }
        values.update({name: getattr(training, name) for name in runtime_config.SWITCH_DOCS})
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


def plan(spec: JobSpec, provider: str | None = None) -> Plan:
    """Resolve ``spec`` for ``provider`` (default: ``spec.provider``).

    Raises:
        SpecError: with one message per problem when the spec cannot run on the provider.
    """
    target = registry.get(provider or spec.provider)
    problems = _provider_problems(spec, target)
    machine = None
    kind = catalog.accelerators()[spec.resources.accelerator].kind
    if target.machine_catalog and kind not in target.unsupported:
        machine, machine_problems = _machine(spec, target)
        problems += machine_problems
    if problems:
        raise SpecError(problems)
    return _resolve(spec, target, machine)


def _provider_problems(spec: JobSpec, provider: Provider) -> list[str]:
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
            f"limits.max_runtime: {_human(spec.limits.max_runtime)} exceeds the {days}-day maximum "
            f"for {what} on {provider.title} ({provider.max_runtime_field}). "
            f"Set limits.max_runtime to {days}d or less."
        )
    return problems + provider.check(spec)


def _scheme_problems(spec: JobSpec, provider: Provider) -> list[str]:
    problems = []
    scheme = provider.schemes[0]
    root = provider.storage_root(spec)
    if not root.startswith(provider.schemes):
        problems.append(
            f"storage.root: {root!r} cannot be used on {provider.title}, which needs a {scheme} URI. "
            f"Set {provider.name}.storage_root (or storage.root) to {scheme}BUCKET/path."
        )
    for channel, uri in spec.data.items():
        if not uri.startswith(provider.schemes):
            problems.append(
                f"data.{channel}: {uri!r} cannot be read on {provider.title}; use a {scheme} URI."
            )
    return problems


def _machine(spec: JobSpec, provider: Provider) -> tuple[catalog.Machine | None, list[str]]:
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


def _chosen_machine(spec: JobSpec, provider: Provider) -> tuple[catalog.Machine | None, list[str]]:
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
        f"is a {registry.get(other.provider).title} machine with {other.accelerator}"
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


def _resolve(spec: JobSpec, provider: Provider, machine: catalog.Machine | None) -> Plan:
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
        provider=provider.name,
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


def resolve_image(spec: JobSpec, provider: Provider, region: str, machine: catalog.Machine | None) -> str:
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


def _human(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
