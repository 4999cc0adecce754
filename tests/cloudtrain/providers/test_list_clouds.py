"""``cloudtrain list`` and ``status`` on the clouds, end to end: estimate at submit beside the actual cost.

The jobs are submitted by the real CLI to the loopback Vertex JobService and SageMaker;
the fakes then report the job's times (Vertex) or billable seconds (SageMaker) and the
dollars are checked against the catalog's own price row.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import timestamp_pb2

from cloudtrain.cost.inputs import prices
from tests.cloudtrain.providers.fakes.sagemaker_aws import LoopbackAws
from tests.cloudtrain.providers.fakes.vertex_jobservice import FakeJobService
from tests.conftest import Result

EXAMPLE = str(Path(__file__).resolve().parents[3] / "examples" / "binary_classifier" / "job.yaml")
T0 = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
Run = Callable[..., Result]


def listed(run_cli: Run, *args: str) -> list[dict[str, Any]]:
    result = run_cli("list", "--json", *args)
    assert result.code == 0, result.err
    return json.loads(result.out)


def status_fields(run_cli: Run, reference: str) -> dict[str, str]:
    """``status``'s rows by field, on a terminal wide enough that no value folds."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COLUMNS", "200")
        result = run_cli("status", reference)
    assert result.code == 0, result.err
    rows = [line.split(maxsplit=1) for line in result.out.splitlines()[1:] if line.strip()]
    return {row[0]: row[1] for row in rows if len(row) == 2}


def hourly(provider: str, region: str, machine_type: str, accelerator: str) -> float:
    price = prices().lookup(provider, region, machine_type, accelerator)
    assert price is not None and price.on_demand is not None
    return price.on_demand


@pytest.fixture
def vertex_job(
    run_cli: Run, fake_vertex: FakeJobService, fake_gcs: str, monkeypatch: pytest.MonkeyPatch
) -> str:
    """The example submitted to Vertex, then run for 10 min 1 s on its 2 replicas."""
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-project")
    job_id = run_cli("submit", EXAMPLE, "--provider", "vertex").out.strip()
    fake_vertex.set_state(job_id, "JOB_STATE_SUCCEEDED")
    job = fake_vertex.jobs[job_id]
    for field, minutes in (("start_time", 1), ("end_time", 11 + 1 / 60)):
        stamp = timestamp_pb2.Timestamp()
        stamp.FromDatetime(T0 + timedelta(minutes=minutes))
        setattr(job, field, stamp)
    return job_id


def test_vertex_job_shows_its_worst_case_estimate_and_what_it_cost(run_cli: Run, vertex_job: str) -> None:
    (job,) = [job for job in listed(run_cli) if job["provider"] == "vertex"]
    assert (job["id"], job["state"], job["shape"], job["billed"]) == (
        vertex_job,
        "succeeded",
        "2 × n1-standard-8",
        True,
    )
    assert job["estimate"]["basis"] == "worst-case" and job["estimate"]["usd"] > 0
    assert job["progress"] is None  # ended: no progress
    # 601 s on each of 2 replicas, billed in 30-second increments: 630 s each.
    rate = hourly("vertex", "us-central1", "n1-standard-8", "t4")
    assert job["cost"]["billed_s"] == 630 and job["cost"]["hosts"] == 2
    assert job["cost"]["usd"] == pytest.approx(630 / 3600 * rate * 2)
    assert job["cost"]["usd"] < job["estimate"]["usd"]

    fields = status_fields(run_cli, "binary-classifier")
    assert fields["estimate"].startswith("≤ $") and fields["estimate"].endswith("(worst-case, at submit)")
    assert fields["cost"].endswith("(2 × 630 s billed, start to end × replicas)")


def test_sagemaker_job_shows_billable_seconds_priced_with_its_instances(
    run_cli: Run, aws: LoopbackAws
) -> None:
    job_id = run_cli("submit", EXAMPLE, "--provider", "sagemaker", "--set", "resources.spot=true").out.strip()
    fake = aws.sagemaker.jobs[job_id.rsplit("/", 1)[1]]
    fake.training_s, fake.billable_s = 1000, 400
    while fake.step[0] != "Completed":
        fake.advance()
    (job,) = listed(run_cli, "--provider", "sagemaker")
    assert (job["id"], job["state"], job["shape"]) == (job_id, "succeeded", "2 × ml.g4dn.xlarge")
    assert job["estimate"]["basis"] == "worst-case"
    rate = hourly("sagemaker", "us-east-1", "ml.g4dn.xlarge", "t4")
    assert (job["cost"]["billed_s"], job["cost"]["hosts"]) == (400, 2)
    assert job["cost"]["usd"] == pytest.approx(400 / 3600 * rate * 2)
    assert job["cost"]["measure"] == "BillableTimeInSeconds, managed spot saved 60%"
    assert (
        "2 × 400 s billed, BillableTimeInSeconds, managed spot saved 60%"
        in status_fields(run_cli, job_id)["cost"]
    )


def test_a_throughput_at_submit_is_the_stored_estimate(run_cli: Run, aws: LoopbackAws) -> None:
    run_cli("submit", EXAMPLE, "--provider", "sagemaker", "--throughput", "1200@t4")
    (job,) = listed(run_cli, "--provider", "sagemaker")
    assert job["estimate"]["basis"] == "throughput"
    assert job["cost"] is None  # not ended yet


def test_a_cloud_that_fails_is_skipped_and_the_rest_is_listed(
    run_cli: Run, vertex_job: str, fake_vertex: FakeJobService
) -> None:
    fake_vertex.fail("ListCustomJobs", grpc.StatusCode.PERMISSION_DENIED)
    result = run_cli("list")
    assert result.code == 0
    assert "vertex: skipped: " in result.err and "roles/aiplatform.user" in result.err
    fake_vertex.fail("ListCustomJobs", grpc.StatusCode.PERMISSION_DENIED)
    asked = run_cli("list", "--provider", "vertex")
    assert asked.code == 1 and "roles/aiplatform.user" in asked.err
    assert "Traceback" not in asked.err


def test_asking_vertex_without_a_project_says_how_to_set_one(run_cli: Run) -> None:
    result = run_cli("list", "--provider", "vertex")
    assert result.code == 2
    assert "vertex.project is required to list jobs" in result.err and "GOOGLE_CLOUD_PROJECT" in result.err
