"""Kill a worker after epoch 2, restart the job, and resume from the backups at epoch 2."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.cloudtrain_runtime.harness import launch, runtime_config

pytestmark = pytest.mark.multiprocess


def test_killed_worker_job_resumes_at_the_epoch_after_its_last_backup(tmp_path: Path) -> None:
    config = runtime_config(tmp_path, epochs=4)

    killed = launch(2, config, tmp_path, env={"CLOUDTRAIN_FAULT": "worker:1@epoch:2"})
    resumed = launch(2, config, tmp_path)

    # worker 1 killed itself; the harness then killed the blocked chief (no heartbeat wait)
    assert killed.returncodes == [-signal.SIGKILL, -signal.SIGKILL], killed.explain()
    assert "epoch 2/4" in killed.outputs[0] and "epoch 3/4" not in killed.outputs[0]
    assert resumed.ok, resumed.explain()
    assert resumed.result["resumed_from_epoch"] == 2
    assert resumed.result["epochs_run"] == [3, 4]
    assert len(resumed.result["history"]["loss"]) == 2
    assert sorted(p.name for p in (tmp_path / "backup").iterdir()) == []
