"""Pick the distribution strategy for the real cluster and devices, then create it.

The plan already resolved ``auto`` from the spec, but only the replica sees the
hardware it got, so the choice is made again here by the same rules (``rules``), and
an impossible one is an error rather than a silently wrong run:

- TPU → ``TPUStrategy``;
- several hosts → ``MultiWorkerMirroredStrategy`` (NCCL all-reduce on GPUs);
- one host, several devices → ``MirroredStrategy``;
- one device → the default strategy;
- Keras on JAX → ``keras.distribution.DataParallel`` or ``ModelParallel`` (a LayoutMap
  from the spec on a ``batch`` × ``model`` DeviceMesh).

Example:
>>> decide("auto", keras_backend="tensorflow", num_hosts=2, devices_per_host=1, device_kind="cpu")
Choice(name='multi-worker', reason='2 hosts × 1 cpu: MultiWorkerMirroredStrategy (ring all-reduce)')
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from cloudtrain_runtime import rules
from cloudtrain_runtime.cluster import ClusterInfo
from cloudtrain_runtime.config import RuntimeConfig
from cloudtrain_runtime.errors import ConfigError


@dataclass(frozen=True)
class Choice:
    """The strategy to create and the one-line reason, as logged at start."""

    name: str
    reason: str


def decide(
    requested: str,
    *,
    keras_backend: str,
    num_hosts: int,
    devices_per_host: int,
    device_kind: str,
    layout_map: bool = False,
    spec: str | None = None,
) -> Choice:
    """The strategy for this cluster: ``requested`` when possible, else derived from the hardware.

    ``requested`` is the plan's strategy and ``spec`` what the spec asked for. The reason
    says where the choice came from: the rule that resolves ``auto`` when the spec said
    ``auto``, "set in the spec" for an explicit one, "as planned" when ``spec`` is unknown.

    Raises:
        ConfigError: when ``requested`` cannot run on this backend or hardware.
    """
    setup = rules.Setup(
        requested,
        keras_backend=keras_backend,
        hosts=num_hosts,
        devices_per_host=devices_per_host,
        kind=device_kind,
        layout_map=layout_map,
    )
    verdict = rules.decide(setup)
    if verdict.broken:
        raise ConfigError(verdict.text("cluster"))
    assert verdict.strategy is not None  # every fact is known here
    if verdict.rule == "requested" and spec != requested:
        resolved = rules.decide(dataclasses.replace(setup, strategy="auto"))
        auto_agrees = spec == "auto" and resolved.strategy == verdict.strategy
        verdict = resolved if auto_agrees else dataclasses.replace(verdict, rule="planned")
    return Choice(verdict.strategy or requested, verdict.text("cluster"))


def check_replicas(config: RuntimeConfig, replicas: int, cluster: ClusterInfo) -> None:
    """The plan's replica count must be what the cluster really has, or the batch is wrong.

    Raises:
        ConfigError: naming both counts.
    """
    if replicas != config.replicas:
        raise ConfigError(
            f"The plan expects {config.replicas} replicas (global batch {config.global_batch}), but "
            f"this cluster has {replicas} ({cluster.num_hosts} hosts × {cluster.devices_per_host} "
            "devices). Fix resources.hosts/per_host in the spec, or the machine type."
        )


def create_tensorflow(choice: Choice, tf: ModuleType, device_kind: str) -> Any:
    """Create the tf.distribute strategy; call before any other TensorFlow op."""
    if choice.name == "multi-worker":
        implementation = "NCCL" if device_kind == "gpu" else "AUTO"
        options = tf.distribute.experimental.CommunicationOptions(
            implementation=getattr(tf.distribute.experimental.CommunicationImplementation, implementation)
        )
        return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    if choice.name == "mirrored":
        kind = device_kind.upper()
        return tf.distribute.MirroredStrategy([d.name for d in tf.config.list_logical_devices(kind)])
    if choice.name == "tpu":
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="local")
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    return tf.distribute.get_strategy()


def initialize_jax(cluster: ClusterInfo, keras: ModuleType) -> None:
    """Join the JAX processes of a multi-host job; the chief's address coordinates."""
    if cluster.num_hosts > 1:
        keras.distribution.initialize(
            job_addresses=",".join(cluster.hosts),
            num_processes=cluster.num_hosts,
            process_id=cluster.rank,
        )


def create_keras_distribution(choice: Choice, config: RuntimeConfig, keras: ModuleType) -> Any:
    """Create and install the keras.distribution for Keras on JAX (global devices).

    Each process feeds its own shard of the input (see ``data``), so the distribution's
    own dataset sharding is switched off.
    """
    devices = keras.distribution.list_devices()
    if choice.name == "keras-model-parallel":
        distribution = _model_parallel(config, keras, devices)
    else:
        distribution = keras.distribution.DataParallel(devices=devices)
    distribution.auto_shard_dataset = False
    keras.distribution.set_distribution(distribution)
    return distribution


def _model_parallel(config: RuntimeConfig, keras: ModuleType, devices: list[str]) -> Any:
    model = config.model_parallel
    problem = rules.model_axis_problem(model, len(devices))
    if problem:
        raise ConfigError(problem)
    mesh = keras.distribution.DeviceMesh(
        shape=(len(devices) // model, model), axis_names=rules.MESH_AXES, devices=devices
    )
    layout_map = keras.distribution.LayoutMap(mesh)
    for pattern, axes in config.layout_map.items():
        # Keys are matched with re.fullmatch against the full path (model/dense/kernel).
        layout_map[pattern] = tuple(axes)
    return keras.distribution.ModelParallel(layout_map=layout_map, batch_dim_name="batch")


def check_layout_map(layout_map: Mapping[str, object], paths: Iterable[str]) -> None:
    """Every layout-map key must match a weight, or the model silently trains replicated.

    Keras matches keys with ``re.fullmatch`` against the full weight path
    (``functional/dense/kernel``), so ``dense/kernel`` matches nothing and raises no error
    (keras 3.15.1, keras/src/distribution/distribution_lib.py, ``LayoutMap``).

    Raises:
        ConfigError: naming the keys that match nothing and some real paths.
    """
    paths = list(paths)
    unmatched = [key for key in layout_map if not any(re.fullmatch(key, path) for path in paths)]
    if unmatched:
        raise ConfigError(
            f"training.layout_map keys {unmatched} match no weight of the model; keys are regular "
            f"expressions matched against full paths such as {paths[:3]}. Prefix them with '.*', "
            "e.g. '.*dense/kernel'."
        )
