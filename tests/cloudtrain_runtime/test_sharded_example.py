"""examples/sharded_tfrecords on 2 processes: input sharded by FILE, throughput measured."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cloudtrain.api import plan
from cloudtrain.container import runtime_config_json
from cloudtrain.specfile import load_spec
from tests.cloudtrain_runtime.harness import launch

pytestmark = pytest.mark.multiprocess

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sharded_tfrecords"


def test_sharded_tfrecords_train_with_file_sharding(tmp_path: Path) -> None:
    code = tmp_path / "code"
    shutil.copytree(EXAMPLE, code, ignore=shutil.ignore_patterns("data", "outputs"))
    config = json.loads(runtime_config_json(plan(load_spec(code / "job.yaml"), "local")))
    config.update(
        backup_dir=str(tmp_path / "backup"),
        tensorboard_dir=str(tmp_path / "logs"),
        export_dir=str(tmp_path / "out" / "model"),
    )

    run = launch(2, config, tmp_path, code_dir=code)

    assert run.ok, run.explain()
    chief = run.outputs[0]
    assert "input: the train dataset reads files, sharded by FILE over 2 hosts" in chief
    assert "falls back to DATA" not in chief
    assert len(sorted((code / "data").glob("train-*.tfrecord"))) == 8
    assert run.result["global_batch"] == 64
    assert run.result["history"]["val_binary_accuracy"][-1] >= 0.9
    throughput = run.result["throughput"]
    assert throughput["examples_per_sec"] > 0 and throughput["measured_steps"] == 3 * 128 - 128
    assert (throughput["replicas"], throughput["accelerator"]) == (2, "cpu")
    assert json.loads((tmp_path / "out" / "cloudtrain-throughput.json").read_text()) == throughput
