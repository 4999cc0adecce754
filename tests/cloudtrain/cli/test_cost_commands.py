"""``cloudtrain cost``: the ranked table, --json, --plot, filters and the exact error lines."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = str(REPO / "examples" / "binary_classifier" / "job.yaml")
Run = Callable[..., Result]


def test_table_covers_both_providers_with_a_date_on_every_price(
    run_cli: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # every column fits
    result = run_cli("cost", EXAMPLE, "--throughput", "1200@a100-40gb")
    assert result.code == 0, result.err
    rows = [line.split() for line in result.out.splitlines()[2:] if line.lstrip()[:1].isdigit()]
    assert {row[1] for row in rows} == {"vertex", "sagemaker", "kubernetes"}
    for row in rows:
        if "unknown" not in row:
            assert any(cell[:4] == "2026" or cell[:4] == "2021" for cell in row), row
    assert "cheapest" in result.out.splitlines()[2]
    assert "est. = estimate: Vertex = Compute Engine list × 1.15" in result.out


def test_table_fits_a_narrow_terminal_keeping_what_and_how_much(
    run_cli: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    out = run_cli("cost", EXAMPLE, "--throughput", "1200@a100-40gb").out
    table = out[: out.index("\n\n")].splitlines()
    assert all(len(line) <= 80 for line in table)
    assert table[0].split() == ["#", "provider", "shape", "capacity", "time", "USD"]


def test_json_has_null_for_unknown_prices_and_the_formula_for_estimates(run_cli: Run) -> None:
    result = run_cli("cost", EXAMPLE, "--throughput", "1200@a100-40gb", "--json")
    data = json.loads(result.out)
    options = data["options"]
    assert data["work_examples"] == 1536
    unknown = [o for o in options if o["price"] is None]
    assert unknown and all(o["usd"] is None and o["usd_per_hour"] is None for o in unknown)
    vertex = next(o for o in options if o["provider"] == "vertex" and o["usd"] is not None)
    assert vertex["price"]["is_estimate"] is True and "× 1.15" in vertex["price"]["formula"]
    assert data["assumptions"]["spot_interruption_overhead"] == 0.1


def test_filters_and_provider(run_cli: Run) -> None:
    result = run_cli(
        "cost", EXAMPLE, "-t", "1200@a100-40gb", "--provider", "sagemaker", "--max-cost", "0.005", "--json"
    )
    options = json.loads(result.out)["options"]
    assert options and all(o["provider"] == "sagemaker" and o["usd"] <= 0.005 for o in options)


def test_plot_writes_a_png(run_cli: Run, tmp_path: Path) -> None:
    target = tmp_path / "cost.png"
    result = run_cli("cost", EXAMPLE, "-t", "1200@a100-40gb", "--plot", str(target))
    assert result.code == 0, result.err
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"Note: Plot written to {target}" in result.out


@pytest.mark.parametrize(
    ("args", "error", "code"),
    [
        (
            ("-t", "1200"),
            "--throughput '1200' is neither RATE@ACCELERATOR nor a file. Pass --throughput "
            "EXAMPLES_PER_SEC@ACCELERATOR (e.g. 1200@a100-40gb, measured on one device), or the path "
            "of the cloudtrain-throughput.json a run wrote (its run folder, or the root's latest.json).",
            2,
        ),
        (("-t", "5@h100"), "throughput accelerator 'h100' is unknown. Did you mean 'h100-80gb'?", 2),
        (
            ("-t", "5@t4", "--region", "mars-1"),
            "--region 'mars-1' has no prices in the catalog. Valid regions: eu-west-1, europe-west4, "
            "us-central1, us-east-1.",
            2,
        ),
        (
            ("-t", "5@t4", "--spot-discount", "1.5"),
            "spot discount must be at least 0 and below 1 (0.6 = 60% off). Received: 1.5.",
            2,
        ),
    ],
)
def test_bad_input_is_one_error_line(run_cli: Run, args: tuple[str, ...], error: str, code: int) -> None:
    result = run_cli("cost", EXAMPLE, *args)
    assert (result.code, result.errors) == (code, [error])


def test_missing_examples_per_epoch_says_what_to_set(run_cli: Run) -> None:
    result = run_cli("cost", EXAMPLE, "-t", "5@t4", "--set", "training.examples_per_epoch=null")
    assert result.errors == [
        "training.examples_per_epoch is needed to estimate time and cost. "
        "Set training.examples_per_epoch (or training.steps_per_epoch)."
    ]


# regression: piped output fell back to 80 columns and lost region, accelerator and the marks
def test_piped_cost_keeps_every_column(repo: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    with (tmp_path / "cost.txt").open("w") as file:
        subprocess.run(
            [sys.executable, "-m", "cloudtrain", "cost", EXAMPLE, "-t", "100@t4"],
            stdout=file,
            env=env,
            check=True,
        )
    lines = (tmp_path / "cost.txt").read_text().splitlines()
    assert lines[0].split() == [
        "#", "provider", "region", "shape", "accel", "dev", "capacity", "eff", "time", "USD", "USD/h",
        "price", "as", "of", "marks",
    ]  # fmt: skip
    rows = [line.split() for line in lines[2 : lines.index("")]]
    # Each row names its region and accelerator, so a T4 and a V100 row never read the same.
    assert all(row[2] in ("us-central1", "us-east-1") for row in rows)
    assert {"t4", "v100"} <= {row[6] for row in rows}  # after "2 × machine"
    assert any(row[-1].endswith("pareto") for row in rows) and "cheapest," in rows[0]


# regression: -t was required, so there was no plain price list (sky show-gpus)
def test_without_a_throughput_every_shape_is_listed_with_its_price_per_hour(
    run_cli: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    result = run_cli("cost", EXAMPLE)
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].split() == ["accel", "dev", "provider", "region", "shape", "on-demand", "USD/h", "spot", "USD/h", "flex", "USD/h", "reservation", "USD/h", "price", "as", "of"]  # fmt: skip
    rows = [line.split() for line in lines[2 : lines.index("")]]
    # 2 × ml.g4dn.xlarge at $0.736/h each; SageMaker publishes no spot price: the on-demand bound;
    # it has no flex-start and takes no reservations (a training plan instead)
    assert ["t4", "2", "sagemaker", "us-east-1", "2", "×", "ml.g4dn.xlarge", "$1.47", "≤", "$1.47", "-", "-"] in [
        row[:12] for row in rows
    ]  # fmt: skip
    # on Vertex AI, side by side: on-demand, spot, flex-start (serves L4, not T4; its rate unknown)
    # and a reservation, already paid for: $0 more, holding the on-demand rate
    assert ["t4", "2", "vertex", "us-central1", "2", "×", "n1-standard-8", "$1.68", "$0.7107", "-", "$0", "(holds", "$1.68)"] in [
        row[:13] for row in rows
    ]  # fmt: skip
    assert ["unknown", "$0"] in [row[9:11] for row in rows if row[:3] == ["l4", "2", "vertex"]]
    assert (
        "Flex on Vertex AI: unknown: Vertex AI bills flex-start at Dynamic Workload Scheduler prices"
        in result.out
    )
    accelerators = [row[0] for row in rows]
    assert accelerators == sorted(accelerators, key=accelerators.index)  # grouped by accelerator
    assert {"cpu", "t4", "v100", "l4", "a10g", "a100-40gb"} <= set(accelerators)
    assert "For time and total cost, give a measured speed: -t RATE@ACCELERATOR" in result.out


def test_the_price_list_as_json_has_null_for_unknown_prices(run_cli: Run) -> None:
    data = json.loads(run_cli("cost", EXAMPLE, "--provider", "vertex", "--json").out)
    assert data["replicas"] == 2
    prices = data["prices"]
    assert {row["provider"] for row in prices} == {"vertex"}
    unknown = [row for row in prices if row["price"] is None]
    assert unknown and all(row["on_demand_usd_per_hour"] is None for row in unknown)
    t4 = next(row for row in prices if row["machine_type"] == "n1-standard-8" and row["accelerator"] == "t4")
    assert t4["hosts"] == 2 and t4["spot_usd_per_hour"] < t4["on_demand_usd_per_hour"]


def test_filters_that_need_a_total_say_so_without_a_throughput(run_cli: Run) -> None:
    result = run_cli("cost", EXAMPLE, "--max-cost", "3", "--plot", "x.png")
    assert (result.code, result.errors) == (
        2,
        [
            "--max-cost and --plot need the time and total cost of each option, so a measured speed: add "
            "--throughput RATE@ACCELERATOR (e.g. -t 300@t4) or a run's cloudtrain-throughput.json."
        ],
    )


# regression: the init spec had no examples_per_epoch, so cost refused it
def test_a_new_project_is_priced_with_and_without_a_throughput(run_cli: Run, tmp_path: Path) -> None:
    assert run_cli("init", str(tmp_path / "proj")).code == 0
    job = str(tmp_path / "proj" / "job.yaml")
    assert run_cli("cost", job).code == 0
    ranked = run_cli("cost", job, "-t", "300@cpu", "--json")
    assert ranked.code == 0, ranked.err
    assert json.loads(ranked.out)["work_basis"] == "256 examples/epoch × 5 epochs"


def test_the_documented_price_list_is_what_cost_prints(
    run_cli: Run, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    block = re.search(
        r"\n```\n\$ cloudtrain cost examples/binary_classifier/job.yaml\n(.*?)\n\.\.\.\n```",
        (repo / "docs" / "cost.md").read_text(),
        re.DOTALL,
    )
    assert block is not None
    monkeypatch.chdir(repo)
    monkeypatch.delenv("COLUMNS", raising=False)  # as piped: every column
    shown = run_cli("cost", "examples/binary_classifier/job.yaml").out.splitlines()
    assert shown[: len(block.group(1).splitlines())] == block.group(1).splitlines()
