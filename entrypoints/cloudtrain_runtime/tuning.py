"""Training speed: what each ``training.*`` speed switch resolves to on this replica, and why.

The switches are defined in ``cloudtrain_runtime.config`` (``SWITCH_DOCS``, with the
figures measured by benchmarks/entrypoint_overhead.py on CPU). ``auto`` is decided here,
from facts the runtime has: the strategy, the Keras in use, the dataset. Each decision
is a ``Setting`` with its reason; the chief logs them in one ``speed:`` line and the
result JSON keeps them under ``speed``.

Example:
>>> steps_per_execution("auto", strategy="one-device", keras="keras", steps_per_epoch=None)
Setting(value=16, reason='auto')
>>> steps_per_execution("auto", strategy="one-device", keras="keras", steps_per_epoch=100)
Setting(value=10, reason='auto: the largest divisor of steps_per_epoch=100 up to 16')
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from cloudtrain_runtime.config import AUTO, SWITCH_DEFAULTS, RuntimeConfig
from cloudtrain_runtime.errors import ConfigError

STEPS_PER_EXECUTION = 16
"""What ``auto`` runs per call where it may: 2.2-2.8x the examples/s of 1 on CPU; 32 gained no more."""

CACHE_SHARE = 4
"""``cache: auto`` keeps a dataset only if it needs at most 1/4 of the host's memory."""

# Keras 3's multi-step loop fails under MirroredStrategy and MultiWorkerMirroredStrategy
# ("You must feed a value for placeholder tensor", keras-team/keras#19246), and so does its
# step compiled with XLA (jit_compile=True); seen with Keras 3.15 on TF 2.21.
_BROKEN = ("mirrored", "multi-worker")
# Where auto was measured: Keras 3 on TensorFlow, the default strategy (one device).
_MEASURED = "one-device"
_WORK_OPS = (b"MapDataset", b"Interleave", b"TFRecordDataset", b"TextLineDataset", b"FixedLengthRecord")
_CHANCE_OPS = (b"Shuffle", b"Random", b"Sample")
_ORDER = ("steps_per_execution", "jit_compile", "cache", "prefetch", "parallel_map")


@dataclass(frozen=True)
class Setting:
    """One resolved switch: its value and why it has it."""

    value: Any
    reason: str

    def __str__(self) -> str:
        value = ("on" if self.value else "off") if isinstance(self.value, bool) else self.value
        return f"{value} ({self.reason})"


def steps_per_execution(
    requested: int | str, *, strategy: str, keras: str, steps_per_epoch: int | None
) -> Setting:
    """``training.steps_per_execution`` for this replica.

    Args:
        requested: the config's value, ``auto`` or a number.
        strategy: the strategy's name (``cloudtrain_runtime.strategy.Choice.name``).
        keras: ``keras`` (Keras 3 on TensorFlow), ``tf_keras`` or ``jax``.
        steps_per_epoch: the fixed steps per epoch, or None when each epoch runs the data to its end.

    Raises:
        ConfigError: for a number above 1 under a strategy Keras 3 cannot run it with.
    """
    if requested != AUTO:
        if int(requested) > 1 and keras == "keras" and strategy in _BROKEN:
            raise ConfigError(
                f"training.steps_per_execution={requested} cannot run under strategy {strategy!r}: Keras 3 "
                "fails to run several steps per call under tf.distribute (keras-team/keras#19246). "
                "Set training.steps_per_execution: auto (or 1)."
            )
        return Setting(int(requested), "set in the spec")
    if keras != "keras":
        return Setting(1, f"auto: not measured on {keras}")
    if strategy in _BROKEN:
        return Setting(1, f"auto: Keras 3 runs one step per call under {strategy} (keras-team/keras#19246)")
    if strategy != _MEASURED:
        return Setting(1, f"auto: not measured under {strategy}")
    if steps_per_epoch:
        divisor = largest_divisor(steps_per_epoch, at_most=STEPS_PER_EXECUTION)
        if divisor != STEPS_PER_EXECUTION:
            return Setting(
                divisor,
                f"auto: the largest divisor of steps_per_epoch={steps_per_epoch} up to {STEPS_PER_EXECUTION}",
            )
    return Setting(STEPS_PER_EXECUTION, "auto")


def largest_divisor(number: int, *, at_most: int) -> int:
    """The largest divisor of ``number`` that is at most ``at_most``.

    Example:
    >>> largest_divisor(100, at_most=16), largest_divisor(17, at_most=16)
    (10, 1)
    """
    return max(d for d in range(1, min(number, at_most) + 1) if number % d == 0)


def jit_compile(requested: bool | str, *, strategy: str, keras: str) -> Setting:
    """``training.jit_compile``: ``auto`` leaves it to Keras, which turns XLA off on CPU.

    Raises:
        ConfigError: for ``true`` under a strategy whose step XLA cannot compile.
    """
    if requested == AUTO:
        return Setting(AUTO, "auto: Keras's choice, off on CPU and under tf.distribute")
    if requested and keras == "keras" and strategy in _BROKEN:
        raise ConfigError(
            f"training.jit_compile=true cannot run under strategy {strategy!r}: XLA cannot compile its "
            "cross-replica training step. Set training.jit_compile: auto (or false)."
        )
    return Setting(bool(requested), "set in the spec")


def compile_settings(
    config: RuntimeConfig,
    user_args: Mapping[str, Any],
    *,
    strategy: str,
    keras: str,
    steps_per_epoch: int | None,
) -> dict[str, Setting]:
    """``steps_per_execution`` and ``jit_compile`` for ``model.compile``.

    A value the spec sets wins; then one ``compile_args()`` returns; then ``auto``.
    """
    settings = {
        "steps_per_execution": steps_per_execution(
            config.steps_per_execution, strategy=strategy, keras=keras, steps_per_epoch=steps_per_epoch
        ),
        "jit_compile": jit_compile(config.jit_compile, strategy=strategy, keras=keras),
    }
    for name in settings:
        if name in user_args and getattr(config, name) == AUTO:
            settings[name] = Setting(user_args[name], "set by compile_args()")
    return settings


def cache(tf: ModuleType, dataset: Any, requested: bool | str, *, sharded_by_file: bool) -> Setting:
    """``training.cache`` for one dataset: ``auto`` keeps it in memory when that is safe and pays.

    Safe: the dataset is finite, gives the same examples in the same order every epoch (no
    shuffle, no random op), its examples have a fixed size and all of them fit in
    1/``CACHE_SHARE`` of the memory, and no FILE sharding is rewriting its readers. Pays:
    it does work per example (a map, an interleave, a file reader) that the cache saves.
    """
    if requested != AUTO:
        if requested and int(dataset.cardinality()) == int(tf.data.INFINITE_CARDINALITY):
            raise ConfigError(
                "training.cache=true, but the dataset repeats forever and would fill the memory. "
                "Remove .repeat() (cloudtrain repeats it when training.steps_per_epoch is set), "
                "or set training.cache: auto."
            )
        return Setting(bool(requested), "set in the spec")
    reason = _not_cacheable(tf, dataset, sharded_by_file)
    if reason:
        return Setting(False, f"auto: {reason}")
    count, size = int(dataset.cardinality()), _size(tf, dataset) / 2**20
    return Setting(True, f"auto: the same {count} examples every epoch, {size:.1f} MiB")


def _not_cacheable(tf: ModuleType, dataset: Any, sharded_by_file: bool) -> str | None:
    count = int(dataset.cardinality())
    if count < 0:
        return "its length is unknown" if count == int(tf.data.UNKNOWN_CARDINALITY) else "it repeats"
    graph = tf.raw_ops.DatasetToGraphV2(input_dataset=dataset._variant_tensor).numpy()
    if any(op in graph for op in _CHANCE_OPS):
        return "it shuffles or draws random numbers, so each epoch differs"
    if not any(op in graph for op in _WORK_OPS):
        return "its examples come straight from memory: nothing to save"
    if sharded_by_file:
        return "it is sharded by FILE across hosts"
    size = _size(tf, dataset)
    if size < 0:
        return "its examples have no fixed size"
    if size > memory_bytes() // CACHE_SHARE:
        return f"{size >> 20} MiB is more than 1/{CACHE_SHARE} of this host's memory"
    return None


def _size(tf: ModuleType, dataset: Any) -> int:
    """The bytes all examples take, or -1 when an example's size is not fixed."""
    total = 0
    for spec in tf.nest.flatten(dataset.element_spec):
        if (
            not isinstance(spec, tf.TensorSpec)
            or not spec.shape.is_fully_defined()
            or spec.dtype == tf.string
        ):
            return -1
        total += spec.shape.num_elements() * spec.dtype.size
    return total * int(dataset.cardinality())


def memory_bytes(cgroup: str = "/sys/fs/cgroup/memory.max") -> int:
    """This host's memory: the container's limit when it has one, else the machine's."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        with open(cgroup) as limit:
            text = limit.read().strip()
    except OSError:
        return total
    return min(total, int(text)) if text.isdigit() else total


def plain(config: RuntimeConfig, name: str) -> Setting:
    """A true/false switch without ``auto``: its value, and whether the spec changed it."""
    value = getattr(config, name)
    return Setting(value, "default" if value == SWITCH_DEFAULTS[name] else "set in the spec")


def compiled(model: Any) -> dict[str, Any]:
    """The steps per execution and XLA setting a compiled model runs with (Keras 3 or tf_keras)."""
    steps = model.steps_per_execution
    if not isinstance(steps, int):  # tf_keras keeps it in a variable
        steps = int(steps.numpy())
    return {"steps_per_execution": steps, "jit_compile": bool(model.jit_compile)}


def line(settings: Mapping[str, Setting]) -> str:
    """The ``speed:`` log line, in a fixed order.

    Example:
    >>> line({"prefetch": Setting(True, "set in the spec"), "cache_train": Setting(False, "auto: it repeats")})
    'speed: cache_train=off (auto: it repeats), prefetch=on (set in the spec)'
    """
    ordered = sorted(settings.items(), key=lambda item: _rank(item[0]))
    return "speed: " + ", ".join(f"{name}={setting}" for name, setting in ordered)


def _rank(name: str) -> int:
    """A setting's place in the line; a dataset's (``cache_train``) goes with its switch."""
    places = (i for i, switch in enumerate(_ORDER) if name == switch or name.startswith(f"{switch}_"))
    return next(places, len(_ORDER))


def as_json(settings: Mapping[str, Setting]) -> dict[str, dict[str, Any]]:
    """The settings for the result JSON: ``{name: {"value": ..., "reason": ...}}``."""
    return {name: {"value": setting.value, "reason": setting.reason} for name, setting in settings.items()}
