"""Keras on JAX: 2 processes joined by keras.distribution.initialize, DataParallel over both."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cloudtrain_runtime.harness import launch, runtime_config

pytestmark = pytest.mark.multiprocess


def test_two_process_data_parallel_trains_and_exports(tmp_path: Path) -> None:
    config = runtime_config(tmp_path, keras_backend="jax", strategy="keras-data-parallel")

    run = launch(2, config, tmp_path, env={"CLOUDTRAIN_CPU_DEVICES": "1"})

    assert run.ok, run.explain()
    assert run.result["strategy"] == "keras-data-parallel"
    assert run.result["replicas"] == 2 and run.result["global_batch"] == 32
    losses = run.result["history"]["loss"]
    assert len(losses) == 3 and losses[-1] < losses[0]
    assert (Path(run.result["export"]) / "saved_model.pb").is_file()
    assert "keras.distribution.DataParallel" in run.outputs[0]


def test_model_parallel_shards_the_layout_map_over_four_devices(tmp_path: Path) -> None:
    layout_map = {
        ".*dense/kernel": [None, "model"],
        ".*dense/bias": ["model"],
        ".*dense_1/kernel": ["model", None],
    }
    config = runtime_config(
        tmp_path,
        keras_backend="jax",
        strategy="keras-model-parallel",
        layout_map=layout_map,
        model_parallel=2,
        hosts=1,
        replicas=4,
        per_replica_batch=8,
        devices_per_host=4,
    )

    run = launch(1, config, tmp_path, env={"CLOUDTRAIN_CPU_DEVICES": "4"})

    assert run.ok, run.explain()
    assert run.result["strategy"] == "keras-model-parallel" and run.result["replicas"] == 4
    assert "keras.distribution.ModelParallel" in run.outputs[0]
    assert (Path(run.result["export"]) / "saved_model.pb").is_file()
