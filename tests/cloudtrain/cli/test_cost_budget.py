"""The budget guard on submit: the estimate shown, over-budget refused (exit 3), --force passes.

The forced submit reaches the SageMaker loopback (moto for S3 and Logs, the fake
SageMaker service) through the real boto3 clients, exactly as a user's would.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cloudtrain import api
from cloudtrain.cost import budget
from cloudtrain.errors import BudgetError
from cloudtrain.planning import plan
from cloudtrain.specfile import load_spec
from tests.conftest import Result

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = str(REPO / "examples" / "binary_classifier" / "job.yaml")
Run = Callable[..., Result]
# 1 example/s per T4 × 2 devices × 0.60 (Ethernet between hosts) = 1.2 examples/s; 1,536 examples
# take 1,280 s; 2 × ml.g4dn.xlarge at $0.736/h for 1,280 s = $0.5234 (prices.csv, 2026-09-25).
OVER = (
    "The estimated cost $0.5234 (2 × ml.g4dn.xlarge on-demand, 21.3m) exceeds limits.max_cost_usd=0.01. "
    "Raise the limit (--set limits.max_cost_usd=1), compare cheaper options with cloudtrain cost JOB "
    "--throughput ..., or pass --force to submit anyway."
)


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.syspath_prepend(str(REPO / "tests" / "cloudtrain" / "providers"))
    from fakes.sagemaker_aws import LoopbackAws

    with LoopbackAws() as services:
        for name, value in services.env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
        monkeypatch.delenv("AWS_PROFILE", raising=False)
        yield services


def submit(run_cli: Run, *args: str) -> Result:
    return run_cli("submit", EXAMPLE, "--provider", "sagemaker", "--set", "limits.max_cost_usd=0.01", *args)


def test_over_budget_submit_is_refused_with_exit_3(run_cli: Run) -> None:
    result = submit(run_cli, "--throughput", "1@t4")
    assert (result.code, result.errors) == (3, [OVER])
    assert "Estimate: 2 × ml.g4dn.xlarge (2 × t4) on-demand in us-east-1: 21.3m at 1 examples/s" in result.err


def test_force_submits_over_budget(run_cli: Run, aws: Any) -> None:
    result = submit(run_cli, "--throughput", "1@t4", "--force", "--json")
    assert result.code == 0, result.err
    job_id = json.loads(result.out)["id"]
    assert job_id.startswith("arn:aws:sagemaker:us-east-1:123456789012:training-job/binary-classifier")
    assert "Budget: over limits.max_cost_usd=0.01; submit refuses without --force." in result.err


def test_dry_run_shows_the_estimate_and_the_verdict(run_cli: Run) -> None:
    result = submit(run_cli, "--throughput", "1@t4", "--dry-run")
    assert result.code == 0
    assert json.loads(result.out)["ResourceConfig"]["InstanceCount"] == 2
    assert "$0.5234 (list, price as of 2026-09-25)" in result.err
    assert "Budget: over limits.max_cost_usd=0.01; submit refuses without --force." in result.err


def test_without_throughput_the_budget_cannot_be_checked_and_says_how(run_cli: Run) -> None:
    result = submit(run_cli, "--dry-run")
    assert result.code == 0
    assert (
        "Budget: limits.max_cost_usd=0.01 cannot be checked: no throughput is known. Pass --throughput "
        "RATE@ACCELERATOR (e.g. --throughput 1200@a100-40gb, or the cloudtrain-throughput.json of a run)."
    ) in result.err.splitlines()


def test_unknown_price_is_never_checked_as_a_number() -> None:
    spec = load_spec(
        EXAMPLE, ["resources.accelerator=h200-141gb", "resources.per_host=8", "resources.hosts=1"]
    )
    check = budget.check_budget(plan(spec, "sagemaker"), "100@a100-40gb")
    assert check.option is not None and check.option.usd is None and not check.over
    assert check.lines()[-1] == (
        "Budget: the price is unknown, so the cost cannot be checked against limits.max_cost_usd."
    )


def test_local_submits_show_no_budget_lines(run_cli: Run) -> None:
    result = run_cli("submit", EXAMPLE, "--dry-run", "--throughput", "1@t4")
    assert result.code == 0
    assert "Budget" not in result.err and "Estimate" not in result.err


def test_python_api_refuses_before_anything_is_packed_or_sent() -> None:
    with pytest.raises(BudgetError) as error:
        api.submit(load_spec(EXAMPLE, ["limits.max_cost_usd=0.01"]), "sagemaker", throughput="1@t4")
    assert str(error.value) == OVER
    assert error.value.exit_code == 3


def test_no_relative_speed_is_said_not_guessed() -> None:
    spec = load_spec(EXAMPLE, ["resources.accelerator=cpu", "limits.max_cost_usd=0.01"])
    check = budget.check_budget(plan(spec, "sagemaker"), "1@t4")
    assert (check.option, check.over) == (None, False)
    assert check.lines() == [
        "Budget: no estimate: no relative speed between t4 and cpu (catalog/speeds.csv). "
        "Measure on cpu, or pass --speeds FILE to cloudtrain cost."
    ]
