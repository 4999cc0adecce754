"""``cloudtrain cost``: the ranked table, --json, --plot, filters and the exact error lines."""

from __future__ import annotations

import json
import os
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
    assert {row[1] for row in rows} == {"vertex", "sagemaker"}
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
            "of the cloudtrain-throughput.json a run wrote.",
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
