"""``cloudtrain bench`` end to end: the example on 1 and 2 local replicas, its JSON fed to ``cost``.

Real processes: the local provider starts the runtime's bench mode as one replica, then
as 2 (MultiWorkerMirroredStrategy on loopback), and the CLI judges what they measured.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result

pytestmark = pytest.mark.multiprocess


def test_bench_runs_one_and_two_replicas_and_its_json_feeds_cost(
    run_cli: Callable[..., Result], example_job: Path, tmp_path: Path
) -> None:
    outputs = example_job.parent / "outputs"
    before = sorted(outputs.rglob("*")) if outputs.exists() else []
    plot = tmp_path / "bench.png"

    code, out, err = run_cli("bench", str(example_job), "--steps", "30", "--json", "--plot", str(plot))

    assert code == 0, err
    found = json.loads(out)
    runs = found["runs"]
    assert [(run["replicas"], run["hosts"], run["strategy"]) for run in runs] == [
        (1, 1, "one-device"),
        (2, 2, "multi-worker"),
    ]
    assert [run["global_batch"] for run in runs] == [16, 32]  # the per-replica batch is fixed
    one, two = (run["pipeline_examples_per_sec"] for run in runs)
    assert found["scaling_efficiency"] == pytest.approx(two / (2 * one))
    assert (found["examples_per_sec"], found["devices"], found["accelerator"]) == (two, 2, "cpu")
    assert found["input"]["verdict"] in ("compute-bound", "partly input-bound", "input-bound")
    assert found["scaling"]["detail"].startswith(f"scaling efficiency {found['scaling_efficiency']:.2f}")
    assert found["precision"]["verdict"] == "not measured"
    assert "The spec asks for t4" in found["notes"][0]
    lines = err.splitlines()
    assert [line for line in lines if line.startswith("bench: ") and ": " not in line[7:]] == [
        "bench: 1 replica(s) (run 1 of 2)...",
        "bench: 2 replica(s) (run 2 of 2)...",
    ]
    assert "bench: 1 replica(s): succeeded (run 1 of 2)..." in lines  # each job's state as it changes
    assert plot.read_bytes()[:4] == b"\x89PNG"
    assert (
        sorted(outputs.rglob("*")) if outputs.exists() else []
    ) == before  # the job's own outputs untouched

    saved = tmp_path / "bench.json"
    saved.write_text(out)
    code, out, err = run_cli("cost", str(example_job), "--throughput", str(saved), "--json")

    assert code == 0, err
    priced = json.loads(out)
    assert priced["throughput"]["examples_per_sec"] == pytest.approx(one)  # the 1-replica run, per device
    assert priced["throughput"]["accelerator"] == "cpu"
    # bench's own options are the same ranking, with the measured efficiency on the layout it ran
    recommended = [
        {k: v for k, v in o.items() if "epoch" not in k} for o in found["recommendation"]["options"]
    ]
    assert recommended == priced["options"] and recommended
    ran = [o for o in recommended if (o["hosts"], o["devices_per_host"], o["accelerator"]) == (2, 1, "cpu")]
    assert ran and all(o["scaling_kind"] == "measured" for o in ran)
    assert all(o["scaling_efficiency"] == pytest.approx(found["scaling_efficiency"]) for o in ran)
