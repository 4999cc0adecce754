"""Two emulated SageMaker hosts: the runtime builds TF_CONFIG itself and uses the /opt/ml paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cloudtrain_runtime.harness import launch_sagemaker, runtime_config

pytestmark = pytest.mark.multiprocess


def test_two_sagemaker_hosts_train_and_export_from_algo_1(tmp_path: Path) -> None:
    # The config's storage URIs are s3://; SageMaker replaces them with its fixed paths.
    config = runtime_config(
        tmp_path,
        epochs=2,
        backup_dir="s3://b/p/backup",
        tensorboard_dir="s3://b/p/logs",
        export_dir="s3://b/p/model",
    )

    run = launch_sagemaker(2, config, tmp_path)

    assert run.ok, run.explain()
    assert "MultiWorkerMirroredStrategy" in run.outputs[0]
    assert run.result["replicas"] == 2 and run.result["epochs_run"] == [1, 2]
    algo_1, algo_2 = tmp_path / "algo-1" / "opt/ml", tmp_path / "algo-2" / "opt/ml"
    assert run.result["export"] == str(algo_1 / "model" / "runtime-test" / "1")
    assert (algo_1 / "model" / "runtime-test" / "1" / "saved_model.pb").is_file()
    assert not (algo_2 / "model").exists()  # SageMaker tars every host's /opt/ml/model together
    assert (algo_1 / "checkpoints").is_dir()  # per-task backups, emptied after success
    assert not (tmp_path / "s3").exists()
