"""Nothing trained is thrown away: a kill during the export restarts at the export."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.cloudtrain_runtime.harness import launch, runtime_config

pytestmark = pytest.mark.multiprocess


def test_chief_killed_during_export_restarts_at_the_export(tmp_path: Path) -> None:
    config = runtime_config(tmp_path, epochs=2, run_id="r1")

    # The harness's cluster has workers only: worker 0 is the chief.
    killed = launch(2, config, tmp_path, env={"CLOUDTRAIN_FAULT": "worker:0@export"})
    kept = sorted(p.name for p in (tmp_path / "backup" / "verified" / "epoch-000002").iterdir())
    resumed = launch(2, config, tmp_path)

    assert killed.returncodes[0] == -signal.SIGKILL, killed.explain()
    assert "epoch 2/2" in killed.outputs[0]
    assert "training_metadata.json" in kept and "cloudtrain-manifest.json" in kept  # the backup outlived fit
    assert resumed.ok, resumed.explain()
    # regression: a restart after the last epoch left "history": {} and "epochs_run": []
    assert resumed.result["epochs_run"] == [1, 2] and resumed.result["resumed_from_epoch"] == 2
    assert len(resumed.result["history"]["loss"]) == 2
    assert [a["epochs"] for a in resumed.result["attempts"]] == [[1, 2], []]
    assert "final_val_mae=" in resumed.outputs[0]
    marker = json.loads((tmp_path / "out" / "cloudtrain-complete.json").read_text())
    assert (marker["export"], marker["run"]) == (resumed.result["export"], "r1")
    assert sorted(p.name for p in (tmp_path / "backup").iterdir()) == []
    assert not list((tmp_path / "out").glob("*.partial"))
