"""A provider installed from another package appears everywhere, with no edit to cloudtrain.

``toycloud`` (tests/cloudtrain/providers/plugin/) is installed by the ``toycloud`` fixture
as a distribution whose entry point sits in the ``cloudtrain.providers`` group, with its
own catalog rows. Each test drives the real CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cloudtrain.providers import registry
from tests.conftest import Result

pytestmark = pytest.mark.usefixtures("toycloud")

RunCli = Callable[..., Result]


def test_it_is_a_provider_choice_of_every_command(run_cli: RunCli, example_job: Path) -> None:
    assert "toycloud" in registry.names()
    assert "toycloud" in run_cli("submit", "--help").out
    wrong = run_cli("plan", str(example_job), "--provider", "toycloudd")
    assert wrong.code == 2
    assert "'toycloud'" in wrong.err


def test_plan_uses_its_catalog_rows_and_region(run_cli: RunCli, example_job: Path) -> None:
    result = run_cli("plan", str(example_job), "--provider", "toycloud", "--json")
    planned = json.loads(result.out)
    assert planned["provider"] == "toycloud"
    assert planned["region"] == "toy-east-1"
    assert planned["machine"]["machine_type"] == "toy-t4-1"  # the example asks for 1 × T4 per host
    assert planned["image"] == "registry.toy/tensorflow:2.21-gpu"
    assert planned["replicas"] == 2


def test_its_own_checks_and_limits_reach_validate(run_cli: RunCli, example_job: Path) -> None:
    result = run_cli(
        "validate",
        str(example_job),
        "--provider",
        "toycloud",
        "--set",
        "resources.hosts=5",
        "--set",
        "limits.max_runtime=3d",
    )
    assert result.code == 2
    assert result.errors == [
        "limits.max_runtime: 3d exceeds the 2-day maximum for training on Toy Cloud (limits.max_runtime). "
        "Set limits.max_runtime to 2d or less.",
        "resources.hosts: Toy Cloud runs at most 4 hosts.",
    ]


def test_render_and_dry_run_print_its_request(run_cli: RunCli, example_job: Path) -> None:
    rendered = json.loads(run_cli("render", str(example_job), "--provider", "toycloud").out)
    dry_run = json.loads(run_cli("submit", str(example_job), "--provider", "toycloud", "--dry-run").out)
    assert rendered == dry_run
    assert rendered["machine"] == "toy-t4-1"
    assert rendered["hosts"] == 2


def test_submit_then_status_finds_the_owner_from_the_id(run_cli: RunCli, example_job: Path) -> None:
    job_id = run_cli("submit", str(example_job), "--provider", "toycloud", "--no-wait").out.strip()
    assert job_id.startswith("toy:")
    assert run_cli("status", job_id).out.strip() == "queued (QUEUED)"
    assert run_cli("status", job_id, "--json").out.strip() == json.dumps(
        {
            "id": job_id,
            "state": "running",
            "provider_state": "RUNNING",
            "detail": "",
            "done": False,
            "backup_kept": None,
        }
    )


def test_a_fresh_process_finds_it_through_the_entry_point(example_job: Path) -> None:
    planned = subprocess.run(
        [sys.executable, "-m", "cloudtrain", "plan", str(example_job), "--provider", "toycloud", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(planned.stdout)["machine"]["machine_type"] == "toy-t4-1"


def test_cost_prices_it_beside_the_built_in_clouds(
    run_cli: RunCli, example_job: Path, tmp_path: Path
) -> None:
    args = ("cost", str(example_job), "--throughput", "1200@t4")
    options = json.loads(run_cli(*args, "--json").out)["options"]
    toy = [option for option in options if option["provider"] == "toycloud"]
    assert {option["region"] for option in toy} == {"toy-east-1"}
    assert {option["machine_type"] for option in toy} >= {"toy-t4-1"}
    assert "toycloud" in run_cli(*args).out
    plot = tmp_path / "cost.png"
    assert run_cli(*args, "--plot", str(plot)).code == 0
    assert plot.stat().st_size > 0
