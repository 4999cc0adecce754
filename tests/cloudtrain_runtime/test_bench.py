"""The runtime's bench mode (``CLOUDTRAIN_BENCH``): the real entrypoint times the module's training.

Each run is the real ``python -m cloudtrain_runtime`` on a tiny model, as ``cloudtrain bench``
starts it on every replica; the verdicts drawn from these numbers are tested in
``tests/cloudtrain/test_bench.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cloudtrain_runtime import bench
from cloudtrain_runtime.errors import ConfigError
from tests.cloudtrain_runtime.harness import launch, runtime_config

STEPS = 20


def _bench(tmp_path: Path, module: str) -> dict[str, Any]:
    config = runtime_config(tmp_path, module=module, replicas=1, hosts=1)
    run = launch(1, config, tmp_path, env={bench.BENCH_ENV: str(STEPS)})
    assert run.ok, run.explain()
    return dict(json.loads((run.results_dir / bench.BENCH_FILE).read_text()))


@pytest.mark.multiprocess
def test_bench_times_the_module_after_a_warm_up_and_exports_nothing(tmp_path: Path) -> None:
    found = _bench(tmp_path, "regression")

    assert (found["replicas"], found["global_batch"], found["strategy"]) == (1, 16, "one-device")
    assert found["speed"]["steps_per_execution"]["value"] == 16  # the switches training would use
    for side in ("pipeline", "ceiling"):
        measured = found[side]
        assert measured["examples_per_sec"] > 0
        assert measured["warmup_steps"] >= STEPS  # compilation happens in the untimed first epoch
        assert measured["measured_steps"] >= STEPS
        assert measured["measured_examples"] == measured["measured_steps"] * 16
    assert found["precision"]["supported"] is False
    assert found["precision"]["detail"].startswith("not supported here: cpu devices")
    assert found["reads_files"] is False
    assert not (tmp_path / "out" / "model").exists()
    assert not (tmp_path / "out" / "cloudtrain-result.json").exists()


@pytest.mark.multiprocess
def test_a_slow_input_runs_far_below_the_compute_ceiling(tmp_path: Path) -> None:
    found = _bench(tmp_path, "slow_input")

    # 32 ms of reading per step against a one-layer model: the cached batch is many times faster.
    assert found["pipeline"]["examples_per_sec"] * 3 < found["ceiling"]["examples_per_sec"]


@pytest.mark.parametrize(
    ("value", "steps"),
    [
        ("", None),  # not set: train
        ("200", 200),
        ("1000000", 1_000_000),  # MAX_STEPS
    ],
)
def test_requested_steps(value: str, steps: int | None) -> None:
    assert bench.requested_steps({bench.BENCH_ENV: value}) == steps


@pytest.mark.parametrize("value", ["0", "-5", "ten", "1.5", "1000001", "²"])
def test_a_bad_step_count_is_refused(value: str) -> None:
    with pytest.raises(ConfigError) as raised:
        bench.requested_steps({bench.BENCH_ENV: value})
    assert (
        str(raised.value)
        == f"CLOUDTRAIN_BENCH must be the number of steps to time, 1 to 1000000. Received: {value!r}"
    )


def test_cpu_devices_get_no_precision_comparison() -> None:
    policy, reason = bench.precision_policy(None, "cpu")  # the GPU query is never made for a CPU
    assert policy is None
    assert reason.startswith("not supported here: cpu devices")
