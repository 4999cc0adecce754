"""Strategy selection from the real cluster shape, and impossible requests as clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from cloudtrain_runtime import rules, strategy
from cloudtrain_runtime.cluster import ClusterInfo
from cloudtrain_runtime.config import from_dict
from cloudtrain_runtime.errors import ConfigError
from tests.cloudtrain_runtime.harness import runtime_config


@pytest.mark.parametrize(
    ("backend", "hosts", "devices", "kind", "expected"),
    [
        ("tensorflow", 1, 1, "cpu", "one-device"),  # one device: default strategy
        ("tensorflow", 1, 8, "gpu", "mirrored"),  # 1 host × 8 GPUs
        ("tensorflow", 4, 8, "gpu", "multi-worker"),  # 4 hosts × 8 GPUs
        ("tensorflow", 2, 1, "cpu", "multi-worker"),  # 2 hosts even with one device each
        ("tensorflow", 1, 8, "tpu", "tpu"),  # TPU slice
        ("jax", 2, 4, "cpu", "keras-data-parallel"),  # Keras on JAX
    ],
)
def test_auto(backend: str, hosts: int, devices: int, kind: str, expected: str) -> None:
    choice = strategy.decide(
        "auto", keras_backend=backend, num_hosts=hosts, devices_per_host=devices, device_kind=kind
    )
    assert choice.name == expected
    assert rules.CLASSES[expected] in choice.reason


def test_auto_with_a_layout_map_on_jax_is_model_parallel() -> None:
    choice = strategy.decide(
        "auto", keras_backend="jax", num_hosts=1, devices_per_host=4, device_kind="cpu", layout_map=True
    )
    assert choice == strategy.Choice(
        "keras-model-parallel", "1 host × 4 cpu, Keras on JAX: keras.distribution.ModelParallel"
    )


def test_multi_worker_on_gpus_uses_nccl_in_the_reason() -> None:
    choice = strategy.decide(
        "auto", keras_backend="tensorflow", num_hosts=2, devices_per_host=8, device_kind="gpu"
    )
    assert "NCCL" in choice.reason


def test_explicit_possible_strategy_wins() -> None:
    choice = strategy.decide(
        "multi-worker", keras_backend="tensorflow", num_hosts=1, devices_per_host=2, device_kind="cpu"
    )
    assert choice.name == "multi-worker" and "as planned" in choice.reason


@pytest.mark.parametrize(
    ("hosts", "devices", "kind", "reason"),
    [
        (2, 8, "gpu", "2 hosts × 8 gpu: MultiWorkerMirroredStrategy (NCCL all-reduce)"),  # GPUs: NCCL
        (2, 1, "cpu", "2 hosts × 1 cpu: MultiWorkerMirroredStrategy (ring all-reduce)"),  # CPUs: ring
        (1, 4, "gpu", "1 host × 4 gpu: MirroredStrategy"),  # one host
        (1, 8, "tpu", "1 host × 8 tpu: TPUStrategy"),  # a TPU slice
        (1, 1, "cpu", "1 host × 1 cpu: the default strategy"),  # one device
    ],
)
def test_the_logged_reason_names_the_cluster_shape(hosts: int, devices: int, kind: str, reason: str) -> None:
    choice = strategy.decide(
        "auto", keras_backend="tensorflow", num_hosts=hosts, devices_per_host=devices, device_kind=kind
    )
    assert choice.reason == reason


@pytest.mark.parametrize(
    ("requested", "backend", "hosts", "devices", "kind", "message"),
    [
        ("tpu", "tensorflow", 1, 1, "gpu", "no TPU is attached"),
        ("mirrored", "tensorflow", 2, 4, "gpu", "runs on one host, but the cluster has 2"),
        ("one-device", "tensorflow", 1, 4, "gpu", "1 of 4 devices"),
        ("mirrored", "tensorflow", 1, 8, "tpu", "cannot drive a TPU"),
        ("keras-data-parallel", "tensorflow", 1, 1, "cpu", "needs training.keras_backend: jax"),
        ("multi-worker", "jax", 2, 1, "cpu", "needs training.keras_backend: tensorflow"),
        ("keras-model-parallel", "jax", 1, 4, "cpu", "training.layout_map is empty"),
    ],
)
def test_impossible_strategy_is_a_clear_error(
    requested: str, backend: str, hosts: int, devices: int, kind: str, message: str
) -> None:
    with pytest.raises(ConfigError) as err:
        strategy.decide(
            requested, keras_backend=backend, num_hosts=hosts, devices_per_host=devices, device_kind=kind
        )
    assert (
        message in str(err.value)
        and requested in str(err.value)
        and "training.strategy: auto" in str(err.value)
    )


def test_a_tpu_cluster_of_several_hosts_is_refused() -> None:
    with pytest.raises(
        ConfigError, match=r"^A TPU job runs on one host \(one slice\), but the cluster has 2\."
    ):
        strategy.decide(
            "auto", keras_backend="tensorflow", num_hosts=2, devices_per_host=4, device_kind="tpu"
        )


def test_replica_count_must_match_the_plan() -> None:
    config = from_dict(runtime_config(Path("/x"), replicas=4), "test")
    info = ClusterInfo("tf_config", "worker", 0, 0, True, ("a:1", "b:1"), Path("/"), devices_per_host=1)
    with pytest.raises(ConfigError, match=r"expects 4 replicas .* has 2 \(2 hosts × 1 devices\)"):
        strategy.check_replicas(config, 2, info)


def test_layout_map_keys_must_match_full_weight_paths() -> None:
    paths = ["functional/dense/kernel", "functional/dense/bias"]
    strategy.check_layout_map({".*dense/kernel": (None, "model")}, paths)
    # regression: 'dense/kernel' matches nothing under re.fullmatch and trained fully replicated
    with pytest.raises(ConfigError, match=r"keys \['dense/kernel'\] match no weight.*'\.\*dense/kernel'"):
        strategy.check_layout_map({"dense/kernel": (None, "model")}, paths)
