"""The provider's notice mid-epoch: one backup of the step every replica agrees on, exit 75, resume at that step; on JAX, the last epoch.

A ``preempt@step:N`` fault gives the last host SIGTERM after step N (and SIGKILL after the
grace). The replicas agree at the next step boundary, the chief backs that step up and
every replica exits 75; the restart resumes there, and ends with the weights an
uninterrupted run of the same seed gives.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cloudtrain_runtime import manifests
from tests.cloudtrain_runtime.harness import exported_weights, launch, runtime_config

pytestmark = pytest.mark.multiprocess

RECLAIMED = 75
# 160 rows, global batch 32: 5 steps an epoch; the notice after step 7 (epoch 2, batch 2)
# is agreed on after step 8, so the backup is after 1 epoch and 3 batches.
NOTICE = {"CLOUDTRAIN_FAULT": "preempt@step:7", "CLOUDTRAIN_GRACE_S": "60"}


def _interrupted_and_whole(tmp_path: Path, processes: int, env: dict[str, str], **overrides: object) -> None:
    config = runtime_config(tmp_path / "noticed", module="noticed", epochs=3, **overrides)
    whole = runtime_config(tmp_path / "whole", module="noticed", epochs=3, **overrides)

    noticed = launch(processes, config, tmp_path / "noticed", env={**env, **NOTICE})
    assert noticed.returncodes == [RECLAIMED] * processes, noticed.explain()
    assert "backup on notice after epoch 1 and 3 batches" in noticed.outputs[0]
    newest = manifests.slots(tmp_path / "noticed" / "backup")[0]
    taken = manifests.read(newest)
    assert (taken.epoch, taken.batch, taken.step) == (1, 3, 8)
    assert (newest / "cloudtrain-rng.json").is_file()

    resumed = launch(processes, config, tmp_path / "noticed", env=env)
    reference = launch(processes, whole, tmp_path / "whole", env=env)

    assert resumed.ok, resumed.explain()
    assert reference.ok, reference.explain()
    _, second = resumed.result["attempts"]
    assert second["resumed_from_epoch"] == 1
    history = json.loads((tmp_path / "noticed" / "out" / "cloudtrain-history.json").read_text())
    # epoch 2 trained its 2 last steps after the resume: none of the 8 before the notice was redone
    assert [(r["epoch"], r["attempt"], r["steps"]) for r in history["epochs"]] == [
        (1, 1, 5),
        (2, 2, 2),
        (3, 2, 5),
    ]
    mine, theirs = exported_weights(resumed.result["export"]), exported_weights(reference.result["export"])
    assert mine.keys() == theirs.keys()
    for name, values in mine.items():
        np.testing.assert_allclose(values, theirs[name], rtol=0, atol=1e-6, err_msg=name)


def test_two_hosts_preempted_mid_epoch_resume_at_the_agreed_step(tmp_path: Path) -> None:
    _interrupted_and_whole(tmp_path, 2, {})


def test_mirrored_run_preempted_mid_epoch_resumes_at_its_step(tmp_path: Path) -> None:
    _interrupted_and_whole(tmp_path, 1, {"CLOUDTRAIN_CPU_DEVICES": "2"}, hosts=1, devices_per_host=2)


def test_keras_on_jax_refuses_the_step_backup_and_resumes_from_the_last_epoch(tmp_path: Path) -> None:
    config = runtime_config(
        tmp_path,
        keras_backend="jax",
        strategy="keras-data-parallel",
        hosts=1,
        replicas=1,
        per_replica_batch=32,
    )
    env = {"CLOUDTRAIN_CPU_DEVICES": "1"}

    noticed = launch(1, config, tmp_path, env={**env, **NOTICE})
    assert noticed.returncodes == [RECLAIMED], noticed.explain()
    assert (
        "the provider's notice came: a step-level backup needs Keras 3 on TensorFlow; on jax this run "
        "resumes from its last epoch's backup"
    ) in noticed.outputs[0]
    assert [manifests.read(slot).batch for slot in manifests.slots(tmp_path / "backup")] == [0]  # epoch 1's

    resumed = launch(1, config, tmp_path, env=env)
    assert resumed.ok, resumed.explain()
    assert resumed.result["attempts"][1]["resumed_from_epoch"] == 1
