"""Process setup that must happen before TensorFlow or JAX start: backend, devices, TF_CONFIG.

``CLOUDTRAIN_CPU_DEVICES=N`` (set only by the local provider) emulates N devices per
host on the CPU: TensorFlow gets N logical CPU devices, configured before any op
runs; JAX gets ``--xla_force_host_platform_device_count=N``, which XLA reads when JAX
is first imported. So 2 hosts × 2 devices really runs 4 replicas.
"""

from __future__ import annotations

import json
import os
from collections.abc import MutableMapping
from types import ModuleType

from cloudtrain_runtime.cluster import ClusterInfo
from cloudtrain_runtime.config import RuntimeConfig
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
    if count is not None:
        flags = env.get("XLA_FLAGS", "")
        env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={count}".strip()


def configure_tensorflow(tf: ModuleType, env: MutableMapping[str, str] | None = None) -> tuple[int, str]:
    """Create emulated CPU devices if asked, and count this host's devices.

    Must run before any TensorFlow op: logical devices cannot change once the runtime
    is initialised.

    Returns:
        (devices per host, device kind: ``gpu`` or ``cpu``).
    """
    env = os.environ if env is None else env
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        return len(gpus), "gpu"
    count = cpu_devices(env)
    if count is not None and count > 1:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * count)
    return count or 1, "cpu"


def jax_devices(jax: ModuleType) -> tuple[int, str]:
    """This process's JAX devices: (count, platform)."""
    local = jax.local_devices()
    return len(local), local[0].platform
