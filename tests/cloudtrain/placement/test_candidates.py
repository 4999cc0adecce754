"""Candidates: each one a spec and a plan of its own, the global batch and learning rate held; plan, cost and
validate show and check them all, and a bad candidate is one line naming it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from cloudtrain import api
from cloudtrain.errors import SpecError
from cloudtrain.placement.resolve import resolve
from cloudtrain.spec import JobSpec
from tests.conftest import Result

SECTIONS = {"vertex": {"project": "my-project"}, "sagemaker": {"role": "arn:aws:iam::123456789012:role/R"}}


def spec(candidates: list[dict[str, object]], **fields: object) -> JobSpec:
    return JobSpec(
        name="demo",
        code={"module": "trainer.task"},
        resources={"accelerator": "a100-40gb", "per_host": 8},
        training={"per_replica_batch": 16, "learning_rate": {"base": 0.001, "scaling": "linear"}},
        storage={"root": "gs://bucket/demo"},
        **SECTIONS,
        placement=candidates,
        **fields,
    )


def test_every_shape_keeps_the_global_batch_and_the_learning_rate() -> None:
    candidates = resolve(
        spec(
            [
                {"provider": "vertex", "region": "us-central1"},  # 1 × 8 A100, as the spec says
                {"provider": "vertex", "region": "us-central1", "per_host": 4, "hosts": 2},  # 2 × 4
                {
                    "provider": "sagemaker",
                    "region": "us-east-1",
                    "accelerator": "a10g",
                    "per_host": 4,
                    "storage_root": "s3://bucket/demo",
                },  # 4 A10G
            ]
        )
    )
    assert [(c.plan.replicas, c.plan.per_replica_batch, c.plan.global_batch) for c in candidates] == [
        (8, 16, 128),
        (8, 16, 128),
        (4, 32, 128),  # half the replicas: twice the batch each
    ]
    assert {c.plan.learning_rate for c in candidates} == {
        0.008
    }  # the spec's 0.001, scaled for its 8 replicas


def test_a_shape_that_cannot_split_the_global_batch_is_named() -> None:
    with pytest.raises(SpecError) as refused:
        resolve(
            spec(
                [
                    {"provider": "vertex"},
                    {"provider": "vertex", "accelerator": "l4", "per_host": 1, "hosts": 3},
                ]
            )
        )
    [problem] = refused.value.problems
    assert problem.startswith(
        "placement.candidates[1] (vertex (accelerator=l4, per_host=1, hosts=3)): training.global_batch: 128 does not divide over 3 replicas"
    )


def test_cheapest_first_orders_by_the_worst_case() -> None:
    candidates = [{"provider": "vertex", "region": "us-central1"}, {"provider": "local"}]
    listed = resolve(spec(candidates))
    cheapest = api.in_order(spec({"order": "cheapest", "candidates": candidates}), listed)
    assert [c.plan.provider for c in cheapest] == ["local", "vertex"]  # this machine costs nothing


@pytest.mark.parametrize(
    ("candidates", "message"),
    [
        (
            [{"provider": "vertx"}],
            "placement.candidates[0].provider: 'vertx' is not valid. Did you mean 'vertex'?",
        ),
        (
            [{"provider": "kubernetes"}],
            "placement.candidates[0].provider: kubernetes has no kubernetes: section in the spec",
        ),
        (
            [{"provider": "vertex", "region": "us-central1"}] * 2,
            "placement.candidates: candidates[1] (vertex us-central1) is candidates[0] again",
        ),
        ([{"provider": "vertex"}] * 21, "placement.candidates: 21 candidates; name 1 to 20"),
        (
            [{"provider": "vertex", "hots": 2}],
            "placement.candidates[0].hots: unknown field. Did you mean 'hosts'?",
        ),
        (
            [{"provider": "vertex", "region": "Mars"}],
            "placement.candidates[0].region: 'Mars' is not a region",
        ),
    ],
)
def test_a_bad_candidate_is_one_line_naming_it(candidates: list[dict[str, object]], message: str) -> None:
    with pytest.raises(SpecError) as refused:
        spec(candidates)
    assert any(problem.startswith(message) for problem in refused.value.problems), refused.value.problems


def test_a_region_a_provider_does_not_train_in_is_refused_with_its_candidate() -> None:
    with pytest.raises(SpecError) as refused:
        resolve(spec([{"provider": "vertex", "region": "us-centrl1"}]))
    assert refused.value.problems[0].startswith(
        "placement.candidates[0] (vertex us-centrl1): vertex.region: 'us-centrl1'"
    )


def test_plan_cost_and_validate_show_every_candidate(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    placement = Path(__file__).resolve().parents[3] / "examples" / "placement" / "job.yaml"
    plan = json.loads(run_cli("plan", str(placement), "--json").out)
    assert [(c["candidate"], c["provider"], c["region"], c["global_batch"]) for c in plan["candidates"]] == [
        (0, "vertex", "us-central1", 32),
        (1, "sagemaker", "us-east-1", 32),
        (2, "vertex", "europe-west4", 32),
    ]
    shown = run_cli("cost", str(placement)).out
    assert "placement (listed): tried in this order" in shown
    assert "2   vertex      europe-west4" in shown
    valid = run_cli("validate", str(placement))
    assert (valid.code, valid.out.split(";")[0]) == (
        0,
        f"{placement} is valid on every candidate of its placement (3)",
    )
