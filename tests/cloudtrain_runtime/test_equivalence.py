"""One replica equals N: with a reshuffled dataset and the same global batch, the same weights.

A one-device run, one process with 2 logical devices (MirroredStrategy) and 2 processes
(MultiWorkerMirroredStrategy), global batch 32 each, learning rate unscaled.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.cloudtrain_runtime.harness import exported_weights, launch, runtime_config

pytestmark = pytest.mark.multiprocess


def test_one_device_mirrored_and_multi_worker_give_the_same_weights(tmp_path: Path) -> None:
    one = runtime_config(tmp_path / "one", module="shuffled", per_replica_batch=32, replicas=1, hosts=1)
    mirrored = runtime_config(tmp_path / "mirrored", module="shuffled", hosts=1, devices_per_host=2)
    workers = runtime_config(tmp_path / "workers", module="shuffled")

    runs = [
        launch(1, one, tmp_path / "one"),
        launch(1, mirrored, tmp_path / "mirrored", env={"CLOUDTRAIN_CPU_DEVICES": "2"}),
        launch(2, workers, tmp_path / "workers"),
    ]

    for run in runs:
        assert run.ok, run.explain()
    assert [run.result["strategy"] for run in runs] == ["one-device", "mirrored", "multi-worker"]
    reference = runs[0].result["weights_l1"]
    assert [run.result["weights_l1"] for run in runs] == pytest.approx([reference] * 3, rel=1e-6)
    one_weights, *others = [exported_weights(run.result["export"]) for run in runs]
    for weights in others:  # every variable, element by element
        assert weights.keys() == one_weights.keys()
        for name, values in weights.items():
            np.testing.assert_allclose(values, one_weights[name], rtol=1e-6, atol=1e-7, err_msg=name)
