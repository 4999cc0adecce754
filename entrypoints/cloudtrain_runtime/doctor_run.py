"""Doctor's run: the devices TensorFlow and JAX create, then the strategy, one step and an all-reduce.

``cloudtrain_runtime.doctor`` calls these once the environment is prepared, in the order
the frameworks need: JAX lists its devices before TensorFlow creates its own, so
neither finds the GPU memory taken by the other; TensorFlow's logical devices exist
before any op; the strategy exists before the step. A multi-host plan is checked one
host at a time: MirroredStrategy over this process's devices, the same all-reduce
between the same devices, without the network between hosts.

Example:
>>> local_choice(strategy.Choice("multi-worker", "2 hosts"), 2)
Choice(name='mirrored', reason="this process's 2 device(s): MirroredStrategy")
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from types import ModuleType
from typing import Any

from cloudtrain_runtime import device_check, devices, strategy
from cloudtrain_runtime.config import RuntimeConfig
from cloudtrain_runtime.diagnosis import FAIL, OK, WARN, Check, Expectation, first_line
from cloudtrain_runtime.errors import ConfigError
from cloudtrain_runtime.replica import ClusterInfo
from cloudtrain_runtime.rules import CLASSES

SMOKE_FEATURES = 3  # the smoke step's model: Dense(1) on 3 features, 2 examples per replica
_COLLECTIVE_FIX = (
    "The devices do not agree: on GPUs rerun with NCCL_DEBUG=INFO to see why, and check the nccl "
    "and cuda lines; on emulated CPUs, report it with this output."
)


def jax_devices_check(config: RuntimeConfig, env: MutableMapping[str, str]) -> Check:
    """The devices JAX sees, with the emulated CPU devices (XLA_FLAGS) the environment asked for."""
    if importlib.util.find_spec("jax") is None:
        return Check("jax-devices", OK, "JAX is not installed")
    # JAX reserves 75% of GPU memory when it starts; TensorFlow needs it next, in this process.
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        import jax

        found = jax.devices()
    except Exception as err:  # a broken jaxlib or CUDA plugin raises whatever it raises
        status = FAIL if config.keras_backend == "jax" else WARN
        return Check(
            "jax-devices",
            status,
            f"JAX cannot list devices: {first_line(err)}",
            "pip install 'cloudtrain[jax]'",
        )
    names = ", ".join(f"{device.platform}:{device.id}" for device in found)
    return Check("jax-devices", OK, f"{len(found)} device(s): {names}")


def tensorflow_devices(
    tf: ModuleType, config: RuntimeConfig, env: MutableMapping[str, str]
) -> tuple[int, str, list[Check]]:
    """Create the emulated CPU devices if asked, then (devices, kind, the ``tf-devices`` and ``plan-devices`` lines)."""
    for gpu in tf.config.list_physical_devices("GPU"):
        # Allocate as needed: JAX may hold GPU memory in this same process.
        tf.config.experimental.set_memory_growth(gpu, True)
    try:
        found = devices.configure_tensorflow(tf, config, env)
    except ConfigError as err:
        fix = f"Unset {devices.CPU_DEVICES_ENV} or give it a count."
        return 1, "cpu", [Check("tf-devices", FAIL, str(err), fix)]
    count, kind = found.count, found.kind
    logical = [device.name for device in tf.config.list_logical_devices(kind.upper())]
    physical = {kind: len(tf.config.list_physical_devices(kind)) for kind in ("GPU", "CPU", "TPU")}
    detail = (
        f"{count} {kind} device(s){_emulated(env, kind, count)}: {', '.join(logical)}; physical: "
        + ", ".join(f"{number} {name}" for name, number in physical.items())
    )
    return count, kind, [Check("tf-devices", OK, detail), plan_devices_check(found.verdict)]


def plan_devices_check(verdict: device_check.Verdict) -> Check:
    """The runtime's own comparison of the devices seen with the plan's (``device_check.judge``)."""
    if verdict.status == device_check.SHORT:
        return Check("plan-devices", FAIL, verdict.detail, verdict.cause)
    if verdict.status == device_check.FALLBACK:
        fix = f"Nothing to fix if the CPU is meant. To train on the GPUs: {verdict.cause}"
        return Check("plan-devices", WARN, f"{verdict.detail} {verdict.instead}", fix)
    if verdict.status == device_check.EMULATED:
        # regression: a 2 × T4 plan checked on a machine with no GPU was all ok
        detail = (
            f"{verdict.detail}: the checks below ran on those stand-ins and say nothing of the planned GPUs"
        )
        fix = (
            "Run the checks where the job runs: cloudtrain-runtime doctor in the job's image on its machine."
        )
        return Check("plan-devices", WARN, detail, fix)
    return Check("plan-devices", OK, verdict.detail)


def _emulated(env: Mapping[str, str], kind: str, count: int) -> str:
    """How several CPU devices came to be: emulated on request, or by the spec's CPU fallback."""
    if kind != "cpu" or count < 2:
        return ""
    if env.get(devices.CPU_DEVICES_ENV):
        return f", emulated ({devices.CPU_DEVICES_ENV}={env[devices.CPU_DEVICES_ENV]})"
    return f", emulated ({device_check.FALLBACK_FIELD})"


def tensorflow_checks(
    expected: Expectation, cluster: ClusterInfo, tf: ModuleType, env: MutableMapping[str, str]
) -> list[Check]:
    """TensorFlow's devices, the strategy for them, then the run under it."""
    count, kind, device_lines = tensorflow_devices(tf, expected.config, env)
    choice, strategy_line = strategy_check(expected, cluster, count, kind)
    checks = [*device_lines, strategy_line]
    local = local_choice(choice, count) if choice else None
    if choice is not None and local is None:
        fix = "The job's first epoch is the check there: watch its first log lines."
        checks.append(
            Check("all-reduce", WARN, f"not run: doctor has no step under {CLASSES[choice.name]}", fix)
        )
    if local is not None:
        checks += run_under(local, expected, cluster, tf, env, kind)
    return checks


def strategy_check(
    expected: Expectation, cluster: ClusterInfo, count: int, kind: str
) -> tuple[strategy.Choice | None, Check]:
    """The strategy the runtime would create for the plan on these devices, or the fail line."""
    config, hosts = expected.config, expected.hosts(cluster)
    per_host = max(1, count // hosts) if expected.stand_in else count
    try:
        choice = strategy.decide(
            config.strategy,
            keras_backend=config.keras_backend,
            num_hosts=hosts,
            devices_per_host=per_host,
            device_kind=kind,
            layout_map=bool(config.layout_map),
            spec=config.strategy_requested,
        )
    except ConfigError as err:
        fix = "Run on the machine type the plan chose (cloudtrain plan JOB shows it), or change the spec as the message says."
        return None, Check("strategy", FAIL, str(err), fix)
    return choice, Check(
        "strategy", OK, f"{choice.name}: {choice.reason}{_checked_as(choice, expected, cluster)}"
    )


def local_choice(choice: strategy.Choice, count: int) -> strategy.Choice | None:
    """The tf.distribute strategy one process runs for ``choice`` here; None on TPUs (not checked).

    Across hosts, or with keras.distribution on JAX, that is MirroredStrategy over this
    process's devices: the same all-reduce between the same devices, without the
    network between hosts.
    """
    if choice.name in ("mirrored", "one-device"):
        return choice
    if choice.name == "tpu":
        return None
    name = "mirrored" if count > 1 else "one-device"
    return strategy.Choice(name, f"this process's {count} device(s): {CLASSES[name]}")


def _checked_as(choice: strategy.Choice, expected: Expectation, cluster: ClusterInfo) -> str:
    if choice.name != "multi-worker":
        return ""
    if expected.stand_in:
        return "; checked here as MirroredStrategy over all its replicas in one process"
    return f"; checked here: this host's part (MirroredStrategy over its devices), not the network between the {cluster.num_hosts} hosts"


def run_under(
    local: strategy.Choice,
    expected: Expectation,
    cluster: ClusterInfo,
    tf: ModuleType,
    env: MutableMapping[str, str],
    kind: str,
) -> list[Check]:
    """Create the strategy, count its replicas, take one step and all-reduce under it."""
    try:
        created = strategy.create_tensorflow(local, tf, kind)
    except Exception as err:  # TensorFlow raises many types here; each one is a finding
        return [
            Check(
                "replicas", FAIL, f"{CLASSES[local.name]} failed to start: {first_line(err)}", _COLLECTIVE_FIX
            )
        ]
    checks = [replicas_check(expected, cluster, created.num_replicas_in_sync, kind)]
    checks.append(guarded("smoke-step", lambda: _smoke(tf, created, expected.config, env)))
    checks.append(guarded("all-reduce", lambda: allreduce_check(tf, created)))
    return checks


def guarded(name: str, check: Callable[[], Check]) -> Check:
    """``check()``, or a fail line named ``name`` when TensorFlow raises instead of answering."""
    try:
        return check()
    except Exception as err:  # TensorFlow raises many types here; each one is a finding
        return Check(name, FAIL, f"raised {first_line(err)}", _COLLECTIVE_FIX)


def replicas_check(expected: Expectation, cluster: ClusterInfo, local: int, kind: str) -> Check:
    """The job's replicas from what this process holds: the plan's count, or >= 2 without a plan."""
    hosts = 1 if expected.stand_in else cluster.num_hosts
    total, config = local * hosts, expected.config
    shape = f"{total} replica(s): {hosts} host(s) × {local} {kind} device(s)"
    if expected.planned and total != config.replicas:
        wanted = config.replicas if expected.stand_in else config.devices_per_host
        return Check(
            "replicas",
            FAIL,
            f"{shape}, but the plan expects {config.replicas} ({config.hosts} × {config.devices_per_host})",
            _device_fix(kind, local, wanted),
        )
    if total < 2 and expected.planned:
        fix = "Nothing to fix if one device is meant; to train on several, set resources.per_host or resources.hosts >= 2."
        return Check("replicas", WARN, f"{shape}, as planned: nothing is distributed", fix)
    if total < 2:
        return Check("replicas", FAIL, f"{shape}; a distributed run needs >= 2", _device_fix(kind, local, 2))
    return Check("replicas", OK, f"{shape}, " + ("as planned" if expected.planned else ">= 2"))


def _device_fix(kind: str, found: int, wanted: int) -> str:
    """How to get ``wanted`` devices on a host that shows ``found`` of ``kind``."""
    emulate = f"{devices.CPU_DEVICES_ENV}={wanted}"
    if kind == "cpu":
        return (
            f"No GPU is visible here (see the gpus line). Run on a machine with {wanted} GPUs per host, "
            f"or emulate them on the CPU: {emulate}."
        )
    return (
        f"This host has {found} {kind}(s) and {wanted} are needed: use the machine type the plan chose, "
        f"and leave CUDA_VISIBLE_DEVICES unset. To check on the CPU instead: CUDA_VISIBLE_DEVICES= {emulate}."
    )


def _smoke(tf: ModuleType, created: Any, config: RuntimeConfig, env: MutableMapping[str, str]) -> Check:
    if config.keras_backend != "tensorflow":
        return Check(
            "smoke-step",
            WARN,
            f"not run: the plan trains Keras on {config.keras_backend} (keras.distribution), "
            "and doctor's step runs tf.distribute",
            "Nothing to fix here; the all-reduce line checks the same devices under TensorFlow.",
        )
    if devices.legacy_keras(env):
        import tf_keras as keras
    else:
        import keras
    return smoke_check(tf, keras, created)


def smoke_check(tf: ModuleType, keras: ModuleType, created: Any) -> Check:
    """One Keras training step under ``created``; every replica's weights must be the same, and moved."""
    replicas = created.num_replicas_in_sync
    with created.scope():
        model = keras.Sequential([keras.Input((SMOKE_FEATURES,)), keras.layers.Dense(1)])
        model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    before = [weight.numpy().copy() for weight in model.weights]
    batch = 2 * replicas
    history = model.fit(
        tf.ones((batch, SMOKE_FEATURES)), tf.ones((batch, 1)), batch_size=batch, epochs=1, verbose=0
    )
    loss = float(history.history["loss"][0])
    copies = {
        getattr(w, "path", w.name): [c.numpy() for c in created.experimental_local_results(_variable(tf, w))]
        for w in model.weights
    }
    problem = smoke_problem(loss, copies, before)
    if problem:
        return Check(
            "smoke-step", FAIL, f"one training step over {replicas} replica(s): {problem}", _COLLECTIVE_FIX
        )
    return Check(
        "smoke-step",
        OK,
        f"one Keras training step over {replicas} replica(s): loss {loss:.4f}, weights updated and "
        "the same on every replica",
    )


def smoke_problem(loss: float, copies: Mapping[str, Sequence[Any]], before: Sequence[Any]) -> str | None:
    """What is wrong after the step, or None: the loss, replicas' copies that differ, or weights that never moved.

    ``copies`` maps each weight to its value on every replica; ``before`` holds the
    weights' values before the step, in the same order.

    Example:
    >>> import numpy as np
    >>> smoke_problem(0.5, {"kernel": [np.ones(2), np.zeros(2)]}, [np.zeros(2)])
    "replicas hold different values of ['kernel']"
    """
    differ = [name for name, values in copies.items() if any((v != values[0]).any() for v in values)]
    moved = any((values[0] != then).any() for values, then in zip(copies.values(), before, strict=True))
    if not math.isfinite(loss):
        return f"the loss is {loss}"
    if differ:
        return f"replicas hold different values of {differ}"
    return None if moved else "the weights did not move"


def _variable(tf: ModuleType, weight: Any) -> Any:
    """The tf.Variable of a weight: a Keras 3 weight wraps it in ``.value``; a tf_keras weight is one."""
    return weight if isinstance(weight, tf.Variable) else weight.value


def allreduce_check(tf: ModuleType, created: Any) -> Check:
    """Replica i contributes i + 1; after a SUM all-reduce every replica must hold n(n + 1)/2."""
    replicas = created.num_replicas_in_sync

    def contribute() -> Any:
        context = tf.distribute.get_replica_context()
        value = tf.fill([4], tf.cast(context.replica_id_in_sync_group + 1, tf.float32))
        return context.all_reduce(tf.distribute.ReduceOp.SUM, value)

    results = created.experimental_local_results(created.run(tf.function(contribute)))
    expected = replicas * (replicas + 1) / 2
    got = [float(value) for result in results for value in result.numpy()]
    if len(results) != replicas or any(value != expected for value in got):
        return Check(
            "all-reduce",
            FAIL,
            f"SUM over {replicas} replica(s) gave {sorted(set(got))} on {len(results)} replica(s), expected {expected:g} on each",
            _COLLECTIVE_FIX,
        )
    return Check(
        "all-reduce", OK, f"SUM over {replicas} replica(s) = {expected:g} on every replica, as expected"
    )
