"""Process setup that must happen before TensorFlow or JAX start: backend, devices, TF_CONFIG.

``CLOUDTRAIN_CPU_DEVICES=N`` (set only by the local provider) emulates N devices per
host on the CPU: TensorFlow gets N logical CPU devices, configured before any op
runs; JAX gets ``--xla_force_host_platform_device_count=N``, which XLA reads when JAX
is first imported. So 2 hosts × 2 devices really runs 4 replicas.

Counting the devices is also where a replica is held to its plan (``device_check``):
one that sees fewer GPUs than planned stops before the strategy exists, unless the
devices are emulated or the spec allows a CPU fallback, which then emulates the plan's
devices on the CPU the same way.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from cloudtrain_runtime import device_check
from cloudtrain_runtime.cluster import ClusterInfo
from cloudtrain_runtime.config import RuntimeConfig
from cloudtrain_runtime.device_check import Sight, Verdict
from cloudtrain_runtime.errors import ConfigError

CPU_DEVICES_ENV = "CLOUDTRAIN_CPU_DEVICES"
LEGACY_KERAS_ENV = "TF_USE_LEGACY_KERAS"


def cpu_devices(env: MutableMapping[str, str]) -> int | None:
    """The number of CPU devices to emulate, or None when not asked to."""
    value = env.get(CPU_DEVICES_ENV, "")
    if not value:
        return None
    if not value.isascii() or not value.isdigit() or len(value) > 6 or int(value) < 1:
        raise ConfigError(f"{CPU_DEVICES_ENV} must be a positive integer. Received: {value!r}")
    return int(value)


def legacy_keras(env: MutableMapping[str, str]) -> bool:
    """Whether the user's code runs on tf_keras (Keras 2) through ``TF_USE_LEGACY_KERAS=1``."""
    return env.get(LEGACY_KERAS_ENV, "").lower() in ("1", "true")


def prepare_environment(config: RuntimeConfig, cluster: ClusterInfo, env: MutableMapping[str, str]) -> None:
    """Set what TensorFlow, Keras and JAX read at import or strategy creation.

    The strategy reads TF_CONFIG when it is constructed (tensorflow/tensorflow#31154),
    and Keras reads KERAS_BACKEND at import, so this runs before either is imported.
    """
    if legacy_keras(env) and config.keras_backend != "tensorflow":
        raise ConfigError(
            f"{LEGACY_KERAS_ENV}=1 selects tf_keras, which runs on TensorFlow only, but "
            f"training.keras_backend is {config.keras_backend!r}. Unset {LEGACY_KERAS_ENV} or "
            "set training.keras_backend: tensorflow."
        )
    env["KERAS_BACKEND"] = config.keras_backend
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if cluster.tf_config is not None:
        env["TF_CONFIG"] = json.dumps(cluster.tf_config)
    count = cpu_devices(env)
    if count is None and device_check.may_fall_back(config):
        # Only the CPU platform reads it, so it is harmless where the GPUs are there after all.
        count = config.devices_per_host
    if count is not None:
        flags = env.get("XLA_FLAGS", "")
        env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={count}".strip()


@dataclass(frozen=True)
class Found:
    """This host's devices as the strategy will use them, and how they compare with the plan."""

    count: int
    kind: str
    verdict: Verdict


def configure_tensorflow(
    tf: ModuleType, config: RuntimeConfig, env: MutableMapping[str, str] | None = None
) -> Found:
    """Count this host's GPUs against the plan, and create emulated CPU devices where asked.

    Must run before any TensorFlow op: logical devices cannot change once the runtime
    is initialised. Emulated devices come from ``CLOUDTRAIN_CPU_DEVICES``, or on a CPU
    fallback from the plan's devices per host.
    """
    env = os.environ if env is None else env
    gpus = len(tf.config.list_physical_devices("GPU"))
    verdict = device_check.judge(config, tensorflow_sight(tf, env, gpus))
    if gpus:
        return Found(gpus, "gpu", verdict)
    count = cpu_devices(env)
    if count is None and verdict.status == device_check.FALLBACK:
        count = config.devices_per_host
    if count is not None and count > 1:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * count)
    return Found(count or 1, "cpu", verdict)


def tensorflow_sight(tf: ModuleType, env: MutableMapping[str, str], gpus: int) -> Sight:
    """What TensorFlow sees (``gpus`` of them), with its build and the container's GPU facts."""
    build = dict(tf.sysconfig.get_build_info())
    return Sight(
        "TensorFlow",
        gpus,
        gpu_build=bool(build.get("is_cuda_build") or build.get("is_rocm_build")),
        cuda=build.get("cuda_version"),
        **_container_facts(env),
    )


def jax_sight(env: MutableMapping[str, str], count: int, platform: str) -> Sight:
    """What JAX sees: ``count`` devices of ``platform``; its build is not known here."""
    gpus = count if platform in ("gpu", "cuda", "rocm") else 0
    return Sight("JAX", gpus, gpu_build=None, cuda=None, **_container_facts(env))


def _container_facts(env: MutableMapping[str, str]) -> dict[str, Any]:
    return {
        "visible": env.get("CUDA_VISIBLE_DEVICES"),
        "driver": device_check.nvidia_driver(),
        "library_path": env.get("LD_LIBRARY_PATH", ""),
        "emulated": cpu_devices(env),
    }


def enforce(verdict: Verdict, say: Callable[[str], None]) -> None:
    """Stop a replica short of its planned GPUs; say so when it trains on the CPU by the spec's leave.

    Raises:
        ConfigError: with the one line naming the planned shape, what is seen and the likely cause.
    """
    if verdict.status == device_check.SHORT:
        raise ConfigError(verdict.line)
    if verdict.status == device_check.FALLBACK:
        say(f"warning: {verdict.line}")


def jax_devices(jax: ModuleType) -> tuple[int, str]:
    """This process's JAX devices: (count, platform)."""
    local = jax.local_devices()
    return len(local), local[0].platform
