"""Which distribution strategy runs, and why: the one home of the strategy rules.

The spec's validation, the plan, the cost table and the runtime all ask ``decide`` and
put its verdict in their own words: ``text("spec")`` speaks of the spec's fields (the
SDK raises it as a ``SpecError``), ``text("cluster")`` of the cluster a replica sees
(the runtime raises it as a ``ConfigError``). Standard library only, so the SDK
imports it without TensorFlow, Keras, JAX or pydantic.

A fact not known yet is None: the spec alone knows its hosts but not the machine
(devices per host, their kind), so the rules that need the machine wait for the plan
and ``auto`` stays undecided until then.

Example:
>>> decide(Setup("auto", keras_backend="tensorflow", hosts=2, devices_per_host=8, kind="gpu"))
Verdict(strategy='multi-worker', rule='hosts')
>>> verdict = decide(Setup("mirrored", keras_backend="tensorflow", hosts=2))
>>> verdict.broken, verdict.text("spec")
(True, "training.strategy: 'mirrored' runs on one host, but resources.hosts=2. ...")
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from typing import Literal, NamedTuple

Audience = Literal["spec", "cluster"]

KERAS_STRATEGIES = ("keras-data-parallel", "keras-model-parallel")
CLASSES = {
    "one-device": "the default strategy",
    "mirrored": "MirroredStrategy",
    "multi-worker": "MultiWorkerMirroredStrategy",
    "tpu": "TPUStrategy",
    "keras-data-parallel": "keras.distribution.DataParallel",
    "keras-model-parallel": "keras.distribution.ModelParallel",
}
"""Every strategy a spec may name besides ``auto``, and what the runtime creates for it."""

MESH_AXES = ("batch", "model")
"""The axes of keras-model-parallel's device mesh: the batch is split over the first, the
weights a layout map names over the second (``training.model_parallel`` devices long)."""


def model_axis_problem(model_parallel: int, devices: int) -> str | None:
    """Why a ``model_parallel``-long model axis cannot split ``devices`` devices; None if it can.

    The mesh is ``devices // model_parallel`` × ``model_parallel``, so the axis must divide.

    Example:
    >>> model_axis_problem(3, 8)
    'training.model_parallel: 3 does not divide the 8 devices. Use a divisor of 8: 1, 2, 4 or 8.'
    """
    if devices % model_parallel == 0:
        return None
    divisors = [str(d) for d in range(1, devices + 1) if devices % d == 0]
    listed = divisors[0] if len(divisors) == 1 else f"{', '.join(divisors[:-1])} or {divisors[-1]}"
    return (
        f"training.model_parallel: {model_parallel} does not divide the {devices} "
        f"device{'s' if devices > 1 else ''}. "
        f"Use a divisor of {devices}: {listed}."
    )


class Words(NamedTuple):
    """One rule's text for each audience; formatted with the fields of ``Verdict.text``."""

    spec: str
    cluster: str


_AUTO = "Set training.strategy: auto, or change resources."
_ONE_SLICE = "Set resources.hosts: 1 and choose the slice size with resources.per_host (chips)."

REASONS = {
    "requested": Words(
        "training.strategy: {strategy} set in the spec",
        "{shape}: {cls}, set in the spec (training.strategy: {strategy})",
    ),
    "planned": Words(
        "training.strategy: {strategy} as planned",
        "{shape}: {cls}, as planned (training.strategy: {strategy})",
    ),
    "keras-layout-map": Words(
        "Keras on JAX with a layout map: keras.distribution.ModelParallel",
        "{shape}, Keras on JAX: keras.distribution.ModelParallel",
    ),
    "keras": Words(
        "Keras on JAX: keras.distribution.DataParallel over all devices",
        "{shape}, Keras on JAX: keras.distribution.DataParallel",
    ),
    "tpu": Words("TPU accelerator: TPUStrategy", "{shape}: TPUStrategy"),
    "hosts": Words(
        "{hosts} hosts: MultiWorkerMirroredStrategy", "{shape}: MultiWorkerMirroredStrategy ({collective})"
    ),
    "devices": Words("1 host with {devices_per_host} devices: MirroredStrategy", "{shape}: MirroredStrategy"),
    "one-device": Words("1 device: the default strategy", "{shape}: the default strategy"),
}
"""Why a strategy was chosen: the request itself, or the rule that resolved ``auto``."""

PROBLEMS = {
    "keras-needs-jax": Words(
        "training.strategy: {strategy!r} uses keras.distribution, which needs training.keras_backend: jax.",
        "training.strategy {strategy!r} needs training.keras_backend: jax, but it is {keras_backend!r}. "
        + _AUTO,
    ),
    "tf-needs-tensorflow": Words(
        "training.strategy: {strategy!r} uses tf.distribute, which needs training.keras_backend: tensorflow. "
        "Use strategy auto (keras.distribution on JAX), or set training.keras_backend: tensorflow.",
        "training.strategy {strategy!r} needs training.keras_backend: tensorflow, but it is "
        "{keras_backend!r}. " + _AUTO,
    ),
    "layout-map-required": Words(
        "training.layout_map is required by strategy 'keras-model-parallel': map weight regexes to "
        "sharding axes, e.g. '.*dense/kernel': [null, model].",
        "training.strategy 'keras-model-parallel' is impossible here: training.layout_map is empty. "
        "Set training.layout_map, or training.strategy: auto.",
    ),
    "tpu-one-host": Words(
        "TPU jobs run on one host, and no single slice has {devices} chips",
        "A TPU job runs on one host (one slice), but the cluster has {hosts}. " + _ONE_SLICE,
    ),
    "tf-on-tpu": Words(
        "training.strategy: {strategy!r} cannot drive a TPU. Use strategy 'tpu' or auto.",
        "training.strategy {strategy!r} is impossible here: it cannot drive a TPU; use strategy 'tpu'. "
        + _AUTO,
    ),
    "tpu-needs-tpu": Words(
        "training.strategy: 'tpu' needs a TPU accelerator, but resources.accelerator is a {kind}. "
        "Set resources.accelerator: tpu-v5e, or use strategy auto.",
        "training.strategy 'tpu' is impossible here: no TPU is attached (devices are {kind}). " + _AUTO,
    ),
    "mirrored-one-host": Words(
        "training.strategy: 'mirrored' runs on one host, but resources.hosts={hosts}. "
        "Use strategy 'multi-worker' (or auto), or set resources.hosts: 1.",
        "training.strategy 'mirrored' is impossible here: MirroredStrategy runs on one host, but the "
        "cluster has {hosts}. " + _AUTO,
    ),
    "one-device-of-many": Words(
        "training.strategy: 'one-device' would use 1 of {devices} devices. "
        "Set resources.per_host: 1 and resources.hosts: 1, or use strategy auto.",
        "training.strategy 'one-device' is impossible here: it would use 1 of {devices} devices. " + _AUTO,
    ),
}
"""The rules a strategy can break, in the order ``decide`` checks them."""


@dataclass(frozen=True)
class Setup:
    """What the choice depends on. None: not known yet (the spec before the plan picks a machine)."""

    strategy: str
    """As requested: ``auto`` or a key of ``CLASSES``."""
    _: KW_ONLY
    keras_backend: str
    hosts: int
    devices_per_host: int | None = None
    kind: str | None = None
    """The devices' kind: cpu, gpu or tpu."""
    layout_map: bool = False
    """Whether training.layout_map has entries."""

    @property
    def devices(self) -> int | None:
        """Devices over all hosts."""
        return None if self.devices_per_host is None else self.hosts * self.devices_per_host


@dataclass(frozen=True)
class Verdict:
    """The strategy that runs and the rule that chose it, or the rule that is broken."""

    strategy: str | None
    """The request, or what ``auto`` resolved to; None when broken or undecided."""
    rule: str
    """A key of ``REASONS`` or of ``PROBLEMS``, or ``undecided`` while facts are missing."""
    setup: Setup = field(repr=False)

    @property
    def broken(self) -> bool:
        return self.rule in PROBLEMS

    def text(self, audience: Audience) -> str:
        """Why this strategy runs, or what is broken and the fix, for the SDK or the runtime."""
        words = PROBLEMS[self.rule] if self.broken else REASONS[self.rule]
        template = words.spec if audience == "spec" else words.cluster
        setup = self.setup
        hosts = f"{setup.hosts} host{'s' if setup.hosts > 1 else ''}"
        return template.format(
            strategy=self.strategy or setup.strategy,
            cls=CLASSES.get(self.strategy or ""),
            keras_backend=setup.keras_backend,
            hosts=setup.hosts,
            devices_per_host=setup.devices_per_host,
            devices=setup.devices,
            kind=setup.kind,
            shape=f"{hosts} × {setup.devices_per_host} {setup.kind}",
            collective="NCCL all-reduce" if setup.kind == "gpu" else "ring all-reduce",
        )


def decide(setup: Setup) -> Verdict:
    """The strategy for ``setup``: the request when no rule forbids it, else ``auto`` resolved.

    ``auto`` picks keras.distribution for Keras on JAX (ModelParallel with a layout map),
    else TPUStrategy on a TPU, MultiWorkerMirroredStrategy on several hosts,
    MirroredStrategy on one host with several devices, and the default strategy on one.
    """
    if setup.strategy == "auto":
        strategy, rule = _auto(setup)
    else:
        strategy, rule = setup.strategy, "requested"
    broken = _broken(strategy, setup) if strategy else None
    if broken:
        return Verdict(None, broken, setup)
    return Verdict(strategy, rule, setup)


def _auto(setup: Setup) -> tuple[str | None, str]:
    if setup.keras_backend == "jax":
        if setup.layout_map:
            return "keras-model-parallel", "keras-layout-map"
        return "keras-data-parallel", "keras"
    if setup.kind is None or setup.devices_per_host is None:
        return None, "undecided"
    if setup.kind == "tpu":
        return "tpu", "tpu"
    if setup.hosts > 1:
        return "multi-worker", "hosts"
    if setup.devices_per_host > 1:
        return "mirrored", "devices"
    return "one-device", "one-device"


def _broken(strategy: str, setup: Setup) -> str | None:
    """The first rule in ``PROBLEMS`` that ``strategy`` breaks; rules on unknown facts pass."""
    keras, kind, devices = strategy in KERAS_STRATEGIES, setup.kind, setup.devices
    breaks = {
        "keras-needs-jax": keras and setup.keras_backend != "jax",
        "tf-needs-tensorflow": not keras and setup.keras_backend == "jax",
        "layout-map-required": strategy == "keras-model-parallel" and not setup.layout_map,
        "tpu-one-host": kind == "tpu" and setup.hosts > 1,
        "tf-on-tpu": kind == "tpu" and strategy in ("one-device", "mirrored", "multi-worker"),
        "tpu-needs-tpu": strategy == "tpu" and kind not in (None, "tpu"),
        "mirrored-one-host": strategy == "mirrored" and setup.hosts > 1,
        "one-device-of-many": strategy == "one-device" and devices is not None and devices > 1,
    }
    return next((rule for rule in PROBLEMS if breaks[rule]), None)
