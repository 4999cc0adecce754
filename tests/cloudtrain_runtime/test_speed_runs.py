"""The speed switches end to end: spec, plan, the entrypoint's log and its throughput JSON.

A real entrypoint process trains the regression trainer (10 steps of 16 examples per
epoch) with the switches set in the spec, four steps per execution among them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cloudtrain.api import plan
from cloudtrain.container import runtime_config_json
from cloudtrain.spec import JobSpec
from tests.cloudtrain_runtime.harness import launch

pytestmark = pytest.mark.multiprocess

SWITCHES = {
    "steps_per_execution": 4,
    "jit_compile": False,
    "cache": True,
    "prefetch": False,
    "parallel_map": False,
}


def test_switches_set_in_the_spec_are_logged_and_the_throughput_counts_real_steps(tmp_path: Path) -> None:
    spec = JobSpec(
        name="speed",
        code={"module": "regression"},
        training={"epochs": 7, "per_replica_batch": 16, "learning_rate": {"base": 0.01}, **SWITCHES},
    )
    config = json.loads(runtime_config_json(plan(spec, "local")))
    config.update(
        backup_dir=str(tmp_path / "backup"),
        tensorboard_dir=str(tmp_path / "logs"),
        export_dir=str(tmp_path / "out" / "model"),
    )

    run = launch(1, config, tmp_path)

    assert run.ok, run.explain()
    set_in_spec = "(set in the spec)"
    assert (
        f"speed: steps_per_execution=4 {set_in_spec}, jit_compile=off {set_in_spec}, "
        f"cache_train=on {set_in_spec}, cache_validation=on {set_in_spec}, prefetch=off {set_in_spec}, "
        f"parallel_map=off {set_in_spec}"
    ) in run.outputs[0]
    assert run.result["speed"]["steps_per_execution"] == {"value": 4, "reason": "set in the spec"}
    throughput = run.result["throughput"]
    # 70 steps in 7 epochs of 10; epochs 6 and 7 start after the first epoch and 50 steps.
    assert (throughput["warmup_steps"], throughput["measured_steps"]) == (50, 20)
    assert throughput["measured_examples"] == 20 * 16
    assert throughput["examples_per_sec"] == throughput["measured_examples"] / throughput["measured_seconds"]
    assert json.loads((tmp_path / "out" / "cloudtrain-throughput.json").read_text()) == throughput
