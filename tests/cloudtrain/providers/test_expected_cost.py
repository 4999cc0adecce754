"""The cost expected at submit travels with the job: Vertex labels, SageMaker tags, never its identity.

A billed request carries the estimate (``api.prepare``: from a measured throughput, else
the worst case); it is left out of the request hash and the job name, so the same job
submitted after a price change, or with ``--throughput``, still attaches to itself.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from google.cloud import aiplatform_v1
from google.protobuf import json_format

from cloudtrain import api
from cloudtrain.cost import budget
from cloudtrain.errors import SpecError
from cloudtrain.planning import FROM_THROUGHPUT, WORST_CASE, ExpectedCost
from cloudtrain.providers import vertex
from cloudtrain.specfile import load_spec
from tests.cloudtrain.providers.fakes import sagemaker_model

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "binary_classifier" / "job.yaml"
# The modules, not the ``render`` functions their packages export under the same name.
vertex_render = importlib.import_module("cloudtrain.providers.vertex.render")
sagemaker_render = importlib.import_module("cloudtrain.providers.sagemaker.render")
SETTINGS = ("vertex.project=my-project", "sagemaker.role=arn:aws:iam::123456789012:role/Training")


def prepared(provider: str, *overrides: str, throughput: str | None = None) -> api.Submission:
    return api.prepare(load_spec(EXAMPLE, (*SETTINGS, *overrides)), provider, throughput=throughput)


def test_a_vertex_request_carries_the_worst_case_in_labels_the_service_accepts() -> None:
    submission = prepared("vertex")
    worst = budget.worst_case(submission.plan).usd
    hourly = budget.hourly_usd(submission.plan)
    assert worst is not None and hourly is not None
    labels = submission.request["labels"]
    assert labels["cloudtrain_estimate_cents"] == str(round(worst * 100))
    assert labels["cloudtrain_estimate"] == WORST_CASE
    assert labels["cloudtrain_hourly_cents"] == str(round(hourly * 100))
    message = aiplatform_v1.CustomJob.pb(aiplatform_v1.CustomJob())
    json_format.ParseDict(submission.request, message, ignore_unknown_fields=False)
    assert vertex_render.estimate_from_labels(dict(message.labels)) == ExpectedCost(
        round(worst, 2), WORST_CASE, round(hourly, 2)
    )


def test_the_hourly_price_is_every_host_at_the_planned_rate() -> None:
    """The price of an hour of the running job: the worst case is that rate over limits.max_runtime."""
    planned = prepared("vertex").plan
    worst = budget.worst_case(planned)
    hourly = budget.hourly_usd(planned)
    assert worst.usd is not None and hourly is not None
    assert hourly == pytest.approx(worst.usd / (worst.billed_s / 3600))
    assert budget.hourly_usd(prepared("local").plan) is None  # not billed


def test_a_sagemaker_request_carries_it_in_tags_botocore_accepts() -> None:
    submission = prepared("sagemaker", throughput="1200@t4")
    tags = submission.request["Tags"]
    found = sagemaker_render.estimate_from_tags(tags)
    assert found is not None and found.basis == FROM_THROUGHPUT
    expected = budget.check_budget(submission.plan, "1200@t4").option
    assert expected is not None and expected.usd is not None
    assert found.usd == float(f"{expected.usd:.2f}")
    assert found.usd_per_hour == float(f"{expected.usd_per_hour:.2f}")  # the same rate, whatever the basis
    assert sagemaker_model.problems("CreateTrainingJob", submission.request) == []


@pytest.mark.parametrize("provider", ["vertex", "sagemaker"])
def test_the_estimate_is_not_part_of_the_jobs_identity(provider: str) -> None:
    """Same spec and code, a throughput given or not: the same job (Vertex hash label, SageMaker name)."""
    worst, measured = prepared(provider), prepared(provider, throughput="1200@t4")
    assert worst.plan.estimate != measured.plan.estimate
    if provider == "vertex":
        assert (
            worst.request["labels"]["cloudtrain_request"] == measured.request["labels"]["cloudtrain_request"]
        )
        assert vertex.request_hash(worst.request) == worst.request["labels"]["cloudtrain_request"]
    else:
        assert worst.request["TrainingJobName"] == measured.request["TrainingJobName"]


def test_an_unbilled_provider_gets_no_estimate() -> None:
    submission = prepared("local")
    assert submission.plan.estimate is None
    assert "cloudtrain_estimate" not in str(submission.request)


def test_a_shape_without_a_price_gets_no_estimate() -> None:
    planned = api.plan(load_spec(EXAMPLE, SETTINGS), "vertex")
    unpriced = planned.with_estimate(None)
    assert budget.expected_cost(planned, settings=_no_prices()) is None
    assert (
        "cloudtrain_estimate"
        not in vertex.provider.render(
            unpriced.with_bundle(f"{planned.storage.code}/x.tar.gz").with_run("r1")
        )["labels"]
    )


def test_validate_counts_the_estimate_labels_against_the_limit() -> None:
    """64 labels at most: a spec that leaves no room for cloudtrain's own is refused before any upload."""
    room = vertex_render.MAX_LABELS - 6  # job, run, request, estimate cents and basis, hourly cents
    labels = [f"vertex.labels.l{i}=v" for i in range(room + 1)]
    with pytest.raises(SpecError, match=r"vertex\.labels"):
        api.validate(load_spec(EXAMPLE, (*SETTINGS, *labels)), "vertex")
    api.validate(load_spec(EXAMPLE, (*SETTINGS, *labels[:room])), "vertex")


@pytest.mark.parametrize(
    "tags",
    [
        [
            {"Key": "cloudtrain:estimate-usd", "Value": "lots"},
            {"Key": "cloudtrain:estimate", "Value": "worst-case"},
        ],
        [
            {"Key": "cloudtrain:estimate-usd", "Value": "nan"},
            {"Key": "cloudtrain:estimate", "Value": "worst-case"},
        ],
        [
            {"Key": "cloudtrain:estimate-usd", "Value": "-1"},
            {"Key": "cloudtrain:estimate", "Value": "worst-case"},
        ],
        [{"Key": "cloudtrain:estimate-usd", "Value": "1.00"}],
    ],
)
def test_edited_tags_read_as_no_estimate(tags: list[dict[str, str]]) -> None:
    assert sagemaker_render.estimate_from_tags(tags) is None


@pytest.mark.parametrize(
    "labels",
    [
        {"cloudtrain_estimate_cents": "1e3", "cloudtrain_estimate": "worst-case"},
        {"cloudtrain_estimate_cents": "12"},
        {
            "cloudtrain_estimate_cents": "²",
            "cloudtrain_estimate": "worst-case",
        },  # a digit to isdigit(), not to int()
    ],
)
def test_edited_labels_read_as_no_estimate(labels: dict[str, str]) -> None:
    assert vertex_render.estimate_from_labels(labels) is None


def _no_prices() -> object:
    from cloudtrain.cost.inputs import CostSettings, PriceCatalog

    return CostSettings(prices=PriceCatalog([]))
