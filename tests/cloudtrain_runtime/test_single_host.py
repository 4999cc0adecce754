"""One host, several devices: MirroredStrategy over 2 logical CPU devices, in script mode.

Runs examples/script_mode exactly as its job.yaml plans it (CLOUDTRAIN_CPU_DEVICES=2
is what the local provider sets), so the script contract is exercised end to end.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cloudtrain.api import plan
from cloudtrain.container import runtime_config_json
from cloudtrain.specfile import load_spec
from tests.cloudtrain_runtime.harness import launch

pytestmark = pytest.mark.multiprocess

SCRIPT_MODE = Path(__file__).resolve().parents[2] / "examples" / "script_mode"


def test_script_mode_trains_on_two_logical_devices_with_mirrored_strategy(tmp_path: Path) -> None:
    config = json.loads(runtime_config_json(plan(load_spec(SCRIPT_MODE / "job.yaml"), "local")))
    config.update(
        backup_dir=str(tmp_path / "backup"),
        tensorboard_dir=str(tmp_path / "logs"),
        export_dir=str(tmp_path / "out" / "model"),
    )

    run = launch(1, config, tmp_path, code_dir=SCRIPT_MODE, env={"CLOUDTRAIN_CPU_DEVICES": "2"})

    assert run.ok, run.explain()
    assert run.result["strategy"] == "mirrored" and run.result["replicas"] == 2
    assert run.result["global_batch"] == 32
    assert run.result["history"]["val_binary_accuracy"][-1] >= 0.9
    assert "MirroredStrategy" in run.outputs[0]
    assert (Path(run.result["export"]) / "saved_model.pb").is_file()
