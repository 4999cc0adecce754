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
    assert "keras.distribution.DataParallel" in run.outputs[0] or "keras-data-parallel" in run.outputs[0]
