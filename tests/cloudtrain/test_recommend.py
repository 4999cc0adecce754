"""``bench``'s options: priced from what bench measured, marked measured or extrapolated, as ``cost`` ranks them.

The bench results are what the runtime writes (``test_bench.runtime_result``) judged by
``bench.summarize``; real benches of the example are in test_bench_local.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from cloudtrain import bench
from cloudtrain.cli.bench_command import options_table
from cloudtrain.cost.inputs import EXTRAPOLATED, MEASURED
from cloudtrain.cost.option import CostOption
from cloudtrain.cost.throughput import parse_throughput
from cloudtrain.cost.units import dollars, duration
from cloudtrain.errors import SpecError
from cloudtrain.recommend import Recommendation, Target, load_target, recommend
from cloudtrain.specfile import load_spec
from tests.cloudtrain.test_bench import runtime_result
from tests.conftest import Result


def measured(one: float, two: float, accelerator: str = "t4") -> bench.BenchResult:
    """A bench of the example: 1 replica, then 2 hosts of 1 device, on ``accelerator``."""
    runs = [
        {**runtime_result(pipeline=one, ceiling=one), "accelerator": accelerator},
        {**runtime_result(pipeline=two, ceiling=two, replicas=2, hosts=2), "accelerator": accelerator},
    ]
    return bench.summarize("binary-classifier", runs, accelerator=accelerator)


def by_layout(advice: Recommendation) -> dict[tuple[str, str, str, str], CostOption]:
    return {(o.provider, o.label, o.accelerator, o.capacity): o for o in advice.estimate.options}


def test_the_measured_layout_keeps_its_efficiency_and_the_others_carry_it_over(example_job: Path) -> None:
    advice = recommend(measured(100.0, 150.0), load_spec(example_job, ()))
    options = by_layout(advice)

    two_hosts = options["vertex", "2 × n1-standard-8", "t4", "on-demand"]
    assert (two_hosts.efficiency.kind, two_hosts.efficiency.value) == (MEASURED, 0.75)
    assert two_hosts.examples_per_sec == pytest.approx(2 * 100.0 * 0.75)
    assert two_hosts.speed_kind == "measured"
    one_host = options["vertex", "1 × n1-standard-16", "t4", "on-demand"]  # both T4s in one host (PCIe)
    assert one_host.efficiency.kind == EXTRAPOLATED
    assert one_host.efficiency.value == pytest.approx(min(1.0, 0.80 * 0.75 / 0.60))
    a100 = options["vertex", "1 × a2-highgpu-2g", "a100-40gb", "on-demand"]
    assert a100.speed_kind == "relative speed"
    assert a100.efficiency.kind == EXTRAPOLATED
    assert advice.per_epoch(two_hosts) == (two_hosts.hours / 3, two_hosts.usd / 3)


def test_cost_throughput_of_the_bench_json_ranks_as_bench_does(
    example_job: Path, tmp_path: Path, run_cli: Callable[..., Result]
) -> None:
    result = measured(100.0, 150.0)
    saved = tmp_path / "bench.json"
    saved.write_text(json.dumps(result.to_json()))

    code, out, err = run_cli("cost", str(example_job), "--throughput", str(saved), "--json")

    assert code == 0, err
    advice = recommend(result, load_spec(example_job, ()))
    priced = json.loads(out)
    assert priced["throughput"]["examples_per_sec"] == 100.0  # the 1-replica run's, per device
    assert priced["options"] == [option.to_dict() for option in advice.estimate.options]


def test_the_table_marks_what_was_measured(example_job: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # a terminal wide enough for every column
    advice = recommend(measured(100.0, 150.0), load_spec(example_job, ()), target=Target(6, "compare.json"))
    text = options_table(advice)
    lines = text.splitlines()
    assert lines[0].startswith(
        "options for 3 epochs, cheapest first (m measured by this bench, x extrapolated"
    )
    option = by_layout(advice)["vertex", "2 × n1-standard-8", "t4", "spot"]
    row = next(
        line
        for line in lines
        if " vertex " in line and "2 × n1-standard-8" in line and " spot " in line and " t4 " in line
    )
    hours, usd = advice.per_epoch(option)
    assert usd is not None
    expected = ["150 m", "0.75 m", duration(hours * 3600), dollars(usd), duration(hours * 6 * 3600)]
    assert [cell.strip() for cell in row.split("   ") if cell.strip()][5:10] == expected, row
    assert "to target: compare.json." in lines


def test_a_cpu_measurement_prices_only_what_it_can_convert_and_says_why(example_job: Path) -> None:
    advice = recommend(measured(1000.0, 600.0, accelerator="cpu"), load_spec(example_job, ()))
    assert {o.accelerator for o in advice.estimate.options} == {"cpu"}
    assert any("no relative speed to cpu" in note for note in advice.estimate.notes)
    slower = by_layout(advice)["vertex", "2 × n1-standard-8", "cpu", "on-demand"]
    assert slower.efficiency.value == pytest.approx(0.3)  # 600 / (2 × 1000)


def write_comparison(path: Path, runs: list[dict[str, object]]) -> Path:
    path.write_text(json.dumps({"metric": "val_accuracy", "target": {"value": 0.95}, "runs": runs}))
    return path


def test_the_target_comes_from_the_compared_run_of_the_specs_shape(example_job: Path, tmp_path: Path) -> None:
    spec = load_spec(example_job, ())
    found = write_comparison(
        tmp_path / "compare.json",
        [
            {"label": "one", "replicas": 1, "reached_target": {"epoch": 3}},
            {"label": "two", "replicas": 2, "reached_target": {"epoch": 5}},
        ],
    )
    target = load_target(found, spec)
    assert target.epochs == 5 and target.source.startswith("two reached val_accuracy 0.95 in 5 epochs")
    advice = recommend(measured(100.0, 150.0), spec, target=target)
    option = advice.estimate.options[0]
    assert advice.to_target(option) == pytest.approx(tuple(v * 5 for v in advice.per_epoch(option)))


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ("[]", "not a compare --json file (expected a JSON object)"),
        ("{", "not a compare --json file"),
        (
            '{"runs": [{"label": "two", "replicas": 2, "reached_target": null}]}',
            "no run of 2 replicas that reached",
        ),
        (
            '{"runs": [{"label": "one", "replicas": 1, "reached_target": {"epoch": 3}}]}',
            "no run of 2 replicas",
        ),
    ],
)
def test_a_target_file_without_the_specs_run_is_refused(
    example_job: Path, tmp_path: Path, content: str, error: str
) -> None:
    (tmp_path / "compare.json").write_text(content)
    with pytest.raises(SpecError, match=re.escape(error)):
        load_target(tmp_path / "compare.json", load_spec(example_job, ()))


@pytest.mark.parametrize(
    ("runs", "error"),
    [
        ([{}], "not a bench result (each run needs pipeline_examples_per_sec, replicas, hosts)"),
        (
            [{"pipeline_examples_per_sec": "fast", "replicas": 1, "hosts": 1}],
            "the rate must be examples per second",
        ),
        (
            [{"pipeline_examples_per_sec": 1e400, "replicas": 1, "hosts": 1}],
            "the rate must be examples per second",
        ),
        ([{"pipeline_examples_per_sec": 5.0, "replicas": 2, "hosts": 1}], "first run is on 1 replica"),
        (
            [{"pipeline_examples_per_sec": 5.0, "replicas": True, "hosts": 1}],
            "not a bench result",
        ),  # a boolean
        (["1 replica"], "not a bench result"),
    ],
)
def test_a_damaged_bench_file_is_one_error_naming_it(tmp_path: Path, runs: list[object], error: str) -> None:
    path = tmp_path / "bench.json"
    path.write_text(json.dumps({"accelerator": "t4", "runs": runs}).replace("Infinity", "1e400"))
    with pytest.raises(SpecError, match=re.escape(error)):
        parse_throughput(str(path))
