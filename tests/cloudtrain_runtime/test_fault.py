"""Kill a worker after epoch 2, restart the job, resume from the backups at epoch 2, and keep one curve."""

from __future__ import annotations

import json
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
    # regression: the result kept only the last attempt's epochs (issue "the result file merges attempts")
    assert resumed.result["epochs_run"] == [1, 2, 3, 4]
    assert len(resumed.result["history"]["loss"]) == 4
    first, second = resumed.result["attempts"]
    assert (first["epochs"], second["epochs"], second["resumed_from_epoch"]) == ([1, 2], [3, 4], 2)
    assert second["lost_s"] > 0 and resumed.result["time_lost_s"] == second["lost_s"]
    throughput = resumed.result["throughput"]
    assert set(throughput["by_attempt"]) == {"1", "2"}  # each attempt's own measurement, kept
    rates = [rate for rate in throughput["by_attempt"].values() if rate]
    assert throughput["attempts_measured"] == [int(a) for a, rate in throughput["by_attempt"].items() if rate]
    if rates:  # over both attempts: between the two
        assert min(rates) <= throughput["examples_per_sec"] <= max(rates)
    history = json.loads((tmp_path / "out" / "cloudtrain-history.json").read_text())
    assert [(r["epoch"], r["attempt"]) for r in history["epochs"]] == [(1, 1), (2, 1), (3, 2), (4, 2)]
    walls = [r["wall_s"] for r in history["epochs"]]
    assert walls == sorted(walls) and walls[2] - walls[1] > second["lost_s"]  # the gap shows the loss
    assert sorted(p.name for p in (tmp_path / "backup").iterdir()) == []  # its history too: published
