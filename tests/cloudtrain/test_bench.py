"""``cloudtrain bench``: the verdicts on synthetic timings, the JSON ``cost`` reads, the CLI's refusals.

The timings are what the runtime's ``cloudtrain-bench.json`` holds (``runtime_result``), so
the same parsing and verdict code runs as on a real bench. The real runs are in
``tests/cloudtrain/test_bench_local.py`` (``-m multiprocess``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cloudtrain import bench
from cloudtrain.cli.bench_command import table
from cloudtrain.cost.throughput import MeasuredScaling, parse_throughput


def runtime_result(
    *,
    pipeline: float,
    ceiling: float,
    replicas: int = 1,
    hosts: int = 1,
    reads_files: bool = False,
    precision: dict[str, Any] | None = None,
    **switches: Any,
) -> dict[str, Any]:
    """What the chief's ``cloudtrain-bench.json`` holds for one run."""
    speed = {"prefetch": True, "parallel_map": True, "cache_train": False, "steps_per_execution": 1}
    speed.update(switches)
    return {
        "name": "demo",
        "replicas": replicas,
        "hosts": hosts,
        "per_replica_batch": 16,
        "global_batch": 16 * replicas,
        "strategy": "one-device" if replicas == 1 else "multi-worker",
        "accelerator": "cpu",
        "device_kind": "cpu",
        "steps": 100,
        "speed": {name: {"value": value, "reason": "test"} for name, value in speed.items()},
        "reads_files": reads_files,
        "pipeline": {"examples_per_sec": pipeline},
        "ceiling": {"examples_per_sec": ceiling},
        "precision": precision or {"supported": False, "detail": "not supported here: cpu devices"},
    }


def measured(**fields: Any) -> bench.Measurement:
    return bench.Measurement.from_runtime(runtime_result(**fields))


@pytest.mark.parametrize(
    ("one", "many", "replicas", "efficiency"),
    [
        (1000.0, 2000.0, 2, 1.0),  # linear
        (1000.0, 1800.0, 2, 0.9),  # 90 % of linear
        (1000.0, 6000.0, 8, 0.75),  # 8 replicas, 6x faster
        (1000.0, 500.0, 2, 0.25),  # distributed is slower than one device
    ],
)
def test_scaling_efficiency_is_throughput_n_over_n_times_throughput_1(
    one: float, many: float, replicas: int, efficiency: float
) -> None:
    assert bench.scaling_efficiency(one, many, replicas) == pytest.approx(efficiency)


def test_an_input_bound_job_is_told_so_with_the_fixes_that_apply() -> None:
    # The device could do 1000 examples/s; the input gives it 400: it waits 60 % of each step.
    run = measured(pipeline=400.0, ceiling=1000.0, hosts=2, replicas=2, prefetch=False)

    verdict = bench.input_verdict(run)

    assert verdict.kind == "input-bound"
    assert "waits for input 60% of each step" in verdict.detail
    assert "before adding hardware" in verdict.detail
    fixes = " ".join(verdict.fixes)
    assert "training.prefetch: true" in fixes  # prefetch was off
    assert "parallel_map" not in fixes  # already on
    assert "shard by FILE" in fixes  # two hosts read everything
    assert "training.cache: true" in fixes


def test_a_compute_bound_job_needs_no_input_fix() -> None:
    # Pre-batched tensors are no faster than the real input: the device is the limit.
    verdict = bench.input_verdict(measured(pipeline=990.0, ceiling=1000.0))

    assert (verdict.kind, verdict.fixes) == ("compute-bound", ())
    assert "the device is busy" in verdict.detail


@pytest.mark.parametrize(
    ("pipeline", "kind"),
    [
        (1000.0, "compute-bound"),  # no wait at all
        (960.0, "compute-bound"),  # 4 %: under the profiler's 5 %
        (940.0, "partly input-bound"),  # 6 %
        (810.0, "partly input-bound"),  # 19 %
        (800.0, "input-bound"),  # 20 %: the profiler's "highly input-bound"
        (1100.0, "compute-bound"),  # timing noise: the ceiling came out below the pipeline
    ],
)
def test_input_thresholds(pipeline: float, kind: str) -> None:
    assert bench.input_verdict(measured(pipeline=pipeline, ceiling=1000.0)).kind == kind


def test_reading_files_suggests_more_files_not_file_sharding() -> None:
    fixes = " ".join(
        bench.input_verdict(measured(pipeline=100.0, ceiling=1000.0, reads_files=True, hosts=2)).fixes
    )
    assert "more files" in fixes
    assert "shard by FILE" not in fixes


@pytest.mark.parametrize(
    ("many", "kind"),
    [
        (1900.0, "scales well"),  # 0.95
        (1400.0, "scales"),  # 0.70
        (1100.0, "scales poorly"),  # 0.55
        (900.0, "slower distributed"),  # fewer examples/s than one replica
    ],
)
def test_scaling_verdicts(many: float, kind: str) -> None:
    one = measured(pipeline=1000.0, ceiling=1000.0)
    verdict = bench.scaling_verdict(one, measured(pipeline=many, ceiling=many, replicas=2, hosts=2))
    assert verdict.kind == kind
    assert (verdict.fixes == ()) == (kind == "scales well")


def test_scaling_names_fewer_steps_per_call_and_an_input_bound_replica() -> None:
    one = measured(pipeline=700.0, ceiling=1000.0, steps_per_execution=16)
    many = measured(pipeline=700.0, ceiling=700.0, replicas=2, hosts=2, steps_per_execution=1)

    fixes = " ".join(bench.scaling_verdict(one, many).fixes)

    assert "Fix the input first" in fixes
    assert "1 replica ran 16 steps per call and 2 ran 1" in fixes


def test_mixed_precision_is_not_measured_where_unsupported() -> None:
    verdict = bench.precision_verdict(measured(pipeline=1.0, ceiling=1.0))
    assert (verdict.kind, verdict.detail) == ("not measured", "not supported here: cpu devices")


@pytest.mark.parametrize(
    ("on", "job_policy", "kind", "fixes"),
    [
        (1500.0, "float32", "faster", ("Set training.mixed_precision: bf16.",)),  # 1.5x: turn it on
        (1500.0, "mixed_bfloat16", "faster", ()),  # already on
        (1020.0, "float32", "no gain", ()),  # 2 %: no gain worth the numerics
    ],
)
def test_mixed_precision_on_vs_off(on: float, job_policy: str, kind: str, fixes: tuple[str, ...]) -> None:
    precision = {
        "supported": True,
        "detail": "GPU compute capability 9.0: bfloat16 Tensor Cores",
        "job_policy": job_policy,
        "policy": "mixed_bfloat16",
        "on": {"examples_per_sec": on},
        "off": {"examples_per_sec": 1000.0},
    }
    verdict = bench.precision_verdict(measured(pipeline=1.0, ceiling=1.0, precision=precision))
    assert (verdict.kind, verdict.fixes) == (kind, fixes)


def test_the_json_is_a_throughput_file_cost_reads(tmp_path: Path) -> None:
    result = bench.summarize(
        "demo",
        [
            runtime_result(pipeline=1000.0, ceiling=1000.0),
            runtime_result(pipeline=1500.0, ceiling=1500.0, replicas=2, hosts=2),
        ],
        accelerator="t4",
    )
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(result.to_json()))

    throughput = parse_throughput(str(path))

    # The 1-replica rate per device, and the 2-replica scaling measured beside it (not folded in):
    # the cost table applies it to the layout bench ran and carries it to the others.
    assert (throughput.examples_per_sec, throughput.accelerator) == (1000.0, "cpu")
    assert throughput.scaling == MeasuredScaling(replicas=2, hosts=2, efficiency=0.75)
    assert result.to_json()["scaling_efficiency"] == 0.75


def test_emulated_devices_are_noted() -> None:
    found = [runtime_result(pipeline=1.0, ceiling=1.0)]
    assert "The spec asks for t4" in bench.summarize("demo", found, accelerator="t4").notes[0]
    assert bench.summarize("demo", found, accelerator="cpu").notes == ()


def test_table_has_a_row_per_replica_count_and_every_verdict() -> None:
    result = bench.summarize(
        "demo",
        [
            runtime_result(pipeline=400.0, ceiling=1000.0),
            runtime_result(pipeline=600.0, ceiling=1000.0, replicas=2, hosts=2),
        ],
    )
    lines = table(result, width=250).splitlines()
    assert lines[0].split()[:2] == ["replicas", "strategy"]
    assert lines[2].split()[:3] == ["1", "one-device", "16"]
    assert lines[3].split()[:3] == ["2", "multi-worker", "32"]
    assert lines[3].split()[-2:] == ["40%", "0.75"]  # input wait, efficiency
    assert [line.split()[0] for line in lines[5:] if not line.startswith(" ")] == [
        "input",
        "scaling",
        "precision",
    ]


# regression: bench printed its rows and verdicts at their full length whatever the terminal
@pytest.mark.parametrize("width", [100, 60])
def test_table_fits_the_terminal_keeping_speed_wait_and_efficiency(width: int) -> None:
    result = bench.summarize(
        "demo",
        [
            runtime_result(pipeline=400.0, ceiling=1000.0),
            runtime_result(pipeline=600.0, ceiling=1000.0, replicas=2, hosts=2),
        ],
        accelerator="t4",
    )
    lines = table(result, width=width).splitlines()
    assert all(len(line) <= width for line in lines)
    assert {"replicas", "pipeline", "wait", "efficiency"} <= set(lines[0].split())
    assert "600 ex/s" in lines[3] and lines[3].split()[-2:] == ["40%", "0.75"]


def test_plot_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    result = bench.summarize(
        "demo",
        [
            runtime_result(pipeline=1000.0, ceiling=1200.0),
            runtime_result(pipeline=1600.0, ceiling=1800.0, replicas=2),
        ],
    )
    path = bench.plot(result, tmp_path / "bench.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_script_mode_is_refused_before_anything_runs(run_cli, repo: Path) -> None:
    result = run_cli("bench", str(repo / "examples" / "script_mode" / "job.yaml"))
    assert result.code == 2
    assert result.errors == [
        "code: cloudtrain bench times a managed module (code.module with build_model and make_dataset); "
        "a script runs its own loop, which it cannot time."
    ]
