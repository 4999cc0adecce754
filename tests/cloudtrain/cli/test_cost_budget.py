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
    from tests.cloudtrain.providers.fakes.sagemaker_aws import LoopbackAws

    with LoopbackAws() as services:
        services.install(monkeypatch)
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


def test_without_throughput_the_worst_case_is_shown_on_a_dry_run(run_cli: Run) -> None:
    result = submit(run_cli, "--dry-run")
    assert result.code == 0
    # 2 hosts × $0.736/h × the example's limits.max_runtime of 1 h = $1.472
    assert result.err.splitlines()[:2] == [
        "Worst case: 2 × ml.g4dn.xlarge on-demand in us-east-1 for all of limits.max_runtime (1.0h): "
        "$1.47 (list, price as of 2026-09-25)",
        "Budget: the worst case is over limits.max_cost_usd=0.01; submit refuses without --force.",
    ]


def test_unknown_price_is_never_checked_as_a_number() -> None:
    spec = load_spec(
        EXAMPLE, ["resources.accelerator=h200-141gb", "resources.per_host=8", "resources.hosts=1"]
    )
    check = budget.check_budget(plan(spec, "sagemaker"), "100@a100-40gb")
    assert check.option is not None and check.option.usd is None and not check.over
    assert check.lines()[-1] == (
        "Budget: the price is unknown, so the cost cannot be checked against limits.max_cost_usd "
        "(submit --strict-budget refuses such a job)."
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


# regression: the refusal suggested --throughput, and a throughput measured on this machine's CPU
# was then refused the same way for a GPU job
def test_a_throughput_that_cannot_be_scaled_is_not_suggested_again(run_cli: Run, tmp_path: Path) -> None:
    measured = tmp_path / "cloudtrain-throughput.json"
    measured.write_text(json.dumps({"examples_per_sec": 900.0, "replicas": 1, "accelerator": "cpu"}))
    args = ("--provider", "sagemaker", "--set", "limits.max_runtime=24h", "--throughput", str(measured))
    result = run_cli("submit", EXAMPLE, *args)
    assert result.code == 3
    assert result.errors == [
        "The worst-case cost $35.33 (2 × ml.g4dn.xlarge on-demand for all of limits.max_runtime, 1.0d) exceeds "
        "limits.max_cost_usd=5. The throughput given was measured on cpu, which catalog/speeds.csv does not "
        "relate to t4. For a tighter estimate, give a speed measured on t4: --throughput 1200@t4 (examples/s "
        "of one device), or the cloudtrain-throughput.json of a run on t4. Or lower limits.max_runtime, "
        "raise the limit (--set limits.max_cost_usd=36), or pass --force to submit anyway."
    ]


def test_no_relative_speed_is_said_not_guessed_and_the_worst_case_is_checked() -> None:
    spec = load_spec(EXAMPLE, ["resources.accelerator=cpu", "limits.max_cost_usd=0.01"])
    check = budget.check_budget(plan(spec, "sagemaker"), "1@t4")
    assert check.option is None and check.over
    assert check.lines() == [
        "Budget: no estimate: no relative speed between t4 and cpu (catalog/speeds.csv). "
        "Measure on cpu, or pass --speeds FILE to cloudtrain cost.",
        # 2 × ml.m5.2xlarge at 4 × the ml.m5.large price ($0.115/h) for the example's 1 h
        "Worst case: 2 × ml.m5.2xlarge on-demand in us-east-1 for all of limits.max_runtime (1.0h): "
        "$0.9200 (est., price as of 2026-08-11)",
        "Budget: the worst case is over limits.max_cost_usd=0.01; submit refuses without --force.",
    ]


# Without a throughput: 2 × ml.g4dn.xlarge at $0.736/h for all of limits.max_runtime=24h = $35.33.
WORST = (
    "The worst-case cost $35.33 (2 × ml.g4dn.xlarge on-demand for all of limits.max_runtime, 1.0d) exceeds "
    "limits.max_cost_usd=5. For a tighter estimate, give a speed measured on t4: --throughput 1200@t4 "
    "(examples/s of one device), or the cloudtrain-throughput.json of a run on t4. Or lower "
    "limits.max_runtime, raise the limit (--set limits.max_cost_usd=36), or pass --force to submit anyway."
)
STRICT = (
    "limits.max_cost_usd=5 cannot be checked: the price of this shape is unknown, and --strict-budget refuses "
    "a job it cannot check. Compare shapes with known prices: cloudtrain cost JOB --throughput ...; or pass "
    "--force to submit anyway."
)
UNKNOWN_PRICE = ("resources.accelerator=h200-141gb", "resources.per_host=8", "resources.hosts=1")


def test_without_throughput_the_worst_case_over_the_limit_is_refused(run_cli: Run) -> None:
    result = run_cli("submit", EXAMPLE, "--provider", "sagemaker", "--set", "limits.max_runtime=24h")
    assert (result.code, result.errors) == (3, [WORST])
    assert "Traceback" not in result.err


def test_the_worst_case_of_a_spot_job_uses_the_spot_price(run_cli: Run) -> None:
    args = ("--set", "resources.spot=true", "--set", "limits.max_runtime=24h", "--dry-run")
    result = run_cli("submit", EXAMPLE, "--provider", "vertex", *args)
    assert result.code == 0
    # 2 × n1-standard-8 with a T4 at the spot $0.35535/h for 24 h
    assert result.err.splitlines()[0] == (
        "Worst case: 2 × n1-standard-8 spot in us-central1 for all of limits.max_runtime (1.0d): "
        "$17.06 (est., price as of 2026-07-30)"
    )


def test_a_worst_case_within_the_limit_submits(run_cli: Run, aws: Any) -> None:
    result = run_cli("submit", EXAMPLE, "--provider", "sagemaker", "--json")
    assert result.code == 0, result.err
    assert "Budget: within limits.max_cost_usd=5 even if every host runs that long." in result.err


def test_force_submits_over_the_worst_case(run_cli: Run, aws: Any) -> None:
    args = ("--set", "limits.max_runtime=24h", "--force", "--json")
    result = run_cli("submit", EXAMPLE, "--provider", "sagemaker", *args)
    assert result.code == 0, result.err
    assert json.loads(result.out)["provider"] == "sagemaker"


def test_an_unknown_price_is_refused_only_when_strict(run_cli: Run) -> None:
    overrides = [arg for item in UNKNOWN_PRICE for arg in ("--set", item)]
    strict = run_cli("submit", EXAMPLE, "--provider", "sagemaker", *overrides, "--strict-budget")
    assert (strict.code, strict.errors) == (3, [STRICT])
    check = budget.check_budget(plan(load_spec(EXAMPLE, UNKNOWN_PRICE), "sagemaker"), None)
    assert check.worst is not None and check.worst.usd is None and check.unchecked
    budget.enforce_budget(check)  # not strict: said, not refused
    with pytest.raises(BudgetError):
        budget.enforce_budget(check, strict=True)
    budget.enforce_budget(check, strict=True, force=True)


def test_python_api_checks_the_worst_case_and_strictness_too() -> None:
    with pytest.raises(BudgetError) as over:
        api.submit(load_spec(EXAMPLE, ["limits.max_runtime=24h"]), "sagemaker")
    with pytest.raises(BudgetError) as strict:
        api.submit(load_spec(EXAMPLE, UNKNOWN_PRICE), "sagemaker", strict_budget=True)
    assert (str(over.value), str(strict.value)) == (WORST, STRICT)


def test_without_a_limit_nothing_is_checked_or_shown() -> None:
    check = budget.check_budget(plan(load_spec(EXAMPLE, ["limits.max_cost_usd=null"]), "sagemaker"), None)
    assert (check.lines(), check.over, check.unchecked) == ([], False, False)
