"""A replica planned with a GPU that sees none, on this CPU machine, as the real entrypoint runs it.

Not emulated (no ``CLOUDTRAIN_CPU_DEVICES``): the runtime stops before the strategy exists
with one line naming the shape, what TensorFlow sees and the likely cause. With
``allow_cpu_fallback`` it trains on the CPU with the plan's devices and says so; with the
local provider's emulation it trains as before. Doctor reports the same verdict.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cloudtrain_runtime.harness import launch, runtime_config

pytestmark = pytest.mark.multiprocess

NO_GPU = {"CUDA_VISIBLE_DEVICES": ""}  # none here anyway; the same on a machine with GPUs

SHORTFALL = re.compile(
    r"cloudtrain-runtime: error: Planned 1 × t4 per host, but TensorFlow sees 0 GPUs \((.+)\)\. "
    r"Likely cause: (.+) To train on the CPU on purpose, set resources\.allow_cpu_fallback: true\."
)


def _gpu_plan(tmp_path: Path, per_host: int = 1, **changes: object) -> dict[str, object]:
    return runtime_config(
        tmp_path, accelerator="t4", devices_per_host=per_host, replicas=per_host, hosts=1, epochs=1, **changes
    )


def test_a_replica_planned_with_a_gpu_that_sees_none_stops_before_training(tmp_path: Path) -> None:
    run = launch(1, _gpu_plan(tmp_path), tmp_path, env=NO_GPU)

    assert run.returncodes == [2], run.explain()
    last = run.outputs[0].strip().splitlines()[-1]
    found = SHORTFALL.fullmatch(last)
    assert found, last
    assert "CUDA_VISIBLE_DEVICES=''" in found[1]
    assert "strategy=" not in run.outputs[0] and "epoch 1/1" not in run.outputs[0]  # before the strategy


def test_with_the_fallback_switch_it_trains_on_the_cpu_and_says_so(tmp_path: Path) -> None:
    run = launch(1, _gpu_plan(tmp_path, 2, allow_cpu_fallback=True), tmp_path, env=NO_GPU)

    assert run.ok, run.explain()
    assert re.search(
        r"^warning: Planned 2 × t4 per host, but TensorFlow sees 0 GPUs \(.+\)\. Training on the CPU "
        r"instead, as resources\.allow_cpu_fallback allows: 2 logical CPU device\(s\) per host, global "
        r"batch 32 as planned\.$",
        run.outputs[0],
        re.MULTILINE,
    ), run.outputs[0]
    assert (run.result["strategy"], run.result["replicas"], run.result["global_batch"]) == ("mirrored", 2, 32)
    assert run.result["throughput"]["accelerator"] == "cpu"  # measured where it really ran


def test_devices_emulated_by_the_local_provider_train_as_before(tmp_path: Path) -> None:
    run = launch(1, _gpu_plan(tmp_path), tmp_path, env={"CLOUDTRAIN_CPU_DEVICES": "1"})

    assert run.ok, run.explain()
    assert "Planned" not in run.outputs[0]
    assert run.result["replicas"] == 1


def test_doctor_fails_the_plan_devices_check_with_the_fix(tmp_path: Path) -> None:
    config = tmp_path / "plan.json"
    config.write_text(json.dumps(_gpu_plan(tmp_path)))
    env = {"HOME": str(tmp_path), "CLOUDTRAIN_ROOT": str(tmp_path), **NO_GPU}
    env.update({name: os.environ[name] for name in ("PATH", "PYTHONPATH") if name in os.environ})
    done = subprocess.run(
        [sys.executable, "-m", "cloudtrain_runtime", "doctor", "--config", str(config), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    checks = {row["check"]: row for row in json.loads(done.stdout)}
    assert done.returncode == 1, done.stderr[-2000:]
    found = checks["plan-devices"]
    assert found["status"] == "fail"
    assert found["detail"].startswith("Planned 1 × t4 per host, but TensorFlow sees 0 GPUs (")
    assert found["fix"].startswith("Likely cause: ")
