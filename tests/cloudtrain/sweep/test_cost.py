"""What a sweep costs: the cost table and the budget guard price every trial, as the longest one."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from cloudtrain import api, cost
from cloudtrain.api import plan
from cloudtrain.cost import budget

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "tuning" / "job.yaml"
SWEEP = (
    "tuning.max_trials=40",
    "tuning.parallel_trials=4",
    "tuning.parameters.epochs={type: int, min: 1, max: 6}",
)
# The same job without the sweep, at its longest trial's epochs: what one trial costs.
ONE_TRIAL = ("tuning=null", "training.epochs=6")


def options(*overrides: str) -> dict[tuple[str, str, bool], cost.CostOption]:
    found = cost.estimate(api.as_spec(EXAMPLE, overrides), throughput="400@t4")
    return {(o.provider, o.machine_type, o.spot): o for o in found}


def test_a_40_trial_sweep_is_priced_on_both_clouds_as_40_of_its_longest_trial() -> None:
    sweep, single = options(*SWEEP), options(*ONE_TRIAL)
    assert {provider for provider, _, _ in sweep} >= {"vertex", "sagemaker"}
    assert sweep.keys() == single.keys()
    for key, option in sweep.items():
        one = single[key]
        assert option.usd == pytest.approx(None if one.usd is None else one.usd * 40)
        assert option.hours == pytest.approx(one.hours * 10)  # 40 trials, 4 at a time
        assert option.billed_hours == pytest.approx(one.billed_hours * 40)


def test_the_budget_guard_prices_the_worst_case_of_every_trial() -> None:
    planned = plan(api.as_spec(EXAMPLE, SWEEP), "vertex")
    one = plan(api.as_spec(EXAMPLE, ONE_TRIAL), "vertex")
    check = budget.check_budget(planned, None)
    assert check.worst is not None and check.usd == pytest.approx(40 * budget.worst_case(one).usd)
    assert "40 trials" in check.note
    expected = budget.expected_cost(planned)
    assert expected is not None and expected.usd == pytest.approx(check.usd)
    # A trial of the sweep is one job: priced alone.
    assert budget.check_budget(planned.with_hparams({"epochs": 2}), None).usd == pytest.approx(
        budget.worst_case(one).usd
    )


def test_submit_refuses_an_over_budget_sweep_with_the_numbers(run_cli: Any) -> None:
    sets = [word for override in SWEEP for word in ("--set", override)]
    result = run_cli("submit", str(EXAMPLE), "--provider", "vertex", *sets, "--set", "limits.max_cost_usd=10")
    assert result.code == 3
    assert (
        "Error: The worst-case cost $33.58 (40 trials × 1 × n1-standard-8 on-demand for all of "
        "limits.max_runtime, 1.0h) exceeds limits.max_cost_usd=10." in result.err
    )


KUBERNETES = ("kubernetes.node_type=g4dn.xlarge", "kubernetes.region=us-east-1")


def test_cost_never_ranks_a_provider_that_runs_no_sweeps(run_cli: Any) -> None:
    # regression: Kubernetes (no TunesJobs) was ranked for a sweep it refuses to run
    args = ["cost", str(EXAMPLE), *(a for o in KUBERNETES for a in ("--set", o))]
    for priced in (run_cli(*args, "-t", "400@t4"), run_cli(*args)):
        assert priced.code == 0, priced.err
        table = priced.out.split("\nNote: ", 1)[0]
        assert not re.search(r"\bkubernetes\b|[^.]g4dn\.xlarge", table)
        assert (
            "Note: kubernetes: left out: it runs no hyperparameter sweeps (tuning:); local, vertex, sagemaker do."
            in priced.out
        )
    asked = run_cli(*args, "-t", "400@t4", "--provider", "kubernetes")
    assert (asked.code, asked.errors) == (
        2,
        [
            "tuning: kubernetes runs no hyperparameter sweeps. Use --provider local or vertex or sagemaker, "
            "or remove the tuning section."
        ],
    )
    # the same job without its sweep is priced on Kubernetes
    one = run_cli(*args, "--set", "tuning=null", "-t", "400@t4")
    assert re.search(r"\bkubernetes\b.* g4dn\.xlarge", one.out.split("\nNote: ", 1)[0])
