"""A placement on this machine: each candidate emulated as its provider, refused as its provider would refuse it.

The candidates of ``examples/placement/job.yaml`` are Vertex AI us-central1, SageMaker
us-east-1 and Vertex AI europe-west4. A refused candidate starts no replica (its job ends
as the service's would), so only the one that takes the run trains.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from cloudtrain.placement.trail import Trail
from cloudtrain.providers.local.job import local_home
from tests.conftest import Result

EMULATED = ("--provider", "local", "--emulate", "placement", "--no-wait")
REFUSE_TWO = ("--fault", "capacity@vertex:us-central1", "--fault", "quota@sagemaker:us-east-1")


def statuses() -> list[str]:
    """The state recorded by every local run made here."""
    return [
        json.loads((run / "status.json").read_text())["state"]
        for run in sorted((local_home() / "runs").iterdir())
    ]


def test_every_candidate_refused_fails_with_one_line_per_attempt_and_nothing_running(
    placed: Path, run_cli: Callable[..., Result]
) -> None:
    faults = ("--fault", "capacity@vertex:us-central1", "--fault", "capacity@sagemaker:us-east-1")
    result = run_cli("submit", str(placed), *EMULATED, *faults, "--fault", "capacity@vertex:europe-west4")
    assert result.code == 1
    summary = result.err.split("Error: No candidate could start the run. Attempts:\n")[1]
    tried = [line for line in summary.splitlines() if ": failed, capacity" in line]
    assert [line.split()[:3] for line in tried] == [
        ["0", "vertex", "us-central1"],
        ["1", "sagemaker", "us-east-1"],
        ["2", "vertex", "europe-west4"],
    ]
    assert (
        "CapacityError: Unable to provision requested ML compute capacity" in result.err
    )  # SageMaker's words
    assert statuses() == ["failed"] * 3  # each job ended; none is left running


def test_a_quota_refused_at_the_create_is_skipped_as_quota(
    placed: Path, run_cli: Callable[..., Result]
) -> None:
    """Without the preflight, the emulated SageMaker refuses the create as ResourceLimitExceeded."""
    faults = ("--fault", "quota@vertex:us-central1", "--fault", "quota@sagemaker:us-east-1")
    result = run_cli(
        "submit",
        str(placed),
        *EMULATED,
        *faults,
        "--fault",
        "capacity@vertex:europe-west4",
        "--no-quota-check",
    )
    assert result.code == 1
    assert (
        "1 sagemaker us-east-1 ml.g4dn.xlarge: refused, quota (ResourceLimitExceeded): The account-level service limit 'ml.g4dn.xlarge for training job usage' is 0 Instances"
        in result.err
    )
    assert (
        "0 vertex us-central1 n1-standard-8: refused, quota (RESOURCE_EXHAUSTED): The following quota metrics exceed quota limits: aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"
        in result.err
    )
    assert statuses() == ["failed"]  # the refused creates made no job at all


def test_the_preflight_skips_a_candidate_without_quota_before_anything_is_sent(
    placed: Path, run_cli: Callable[..., Result]
) -> None:
    result = run_cli("submit", str(placed), *EMULATED, *REFUSE_TWO, "--fault", "capacity@vertex:europe-west4")
    assert (
        "1 sagemaker us-east-1 ml.g4dn.xlarge: skipped, quota (preflight): ml.g4dn.xlarge for training job usage in us-east-1: needs 2 instances, the limit is 0"
        in result.err
    )
    assert statuses() == ["failed", "failed"]  # candidates 0 and 2; nothing was sent for 1


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        (
            "capacity@vertex:asia-east1",
            "--fault capacity@vertex:asia-east1: no candidate runs there. Candidates: ",
        ),
        ("quota@local:local", "--fault quota@local:local: no candidate runs there."),
    ],
)
def test_a_refusal_that_names_no_candidate_is_refused(
    placed: Path, run_cli: Callable[..., Result], fault: str, message: str
) -> None:
    result = run_cli("submit", str(placed), *EMULATED, "--fault", fault)
    assert result.code == 2
    assert message in result.err
    assert not (local_home() / "runs").exists()


def test_refusals_need_an_emulated_placement(placed: Path, run_cli: Callable[..., Result]) -> None:
    result = run_cli("submit", str(placed), "--provider", "local", "--fault", "capacity@vertex:us-central1")
    assert result.code == 2
    assert "--fault" in result.err


@pytest.mark.multiprocess
def test_the_run_trains_on_the_third_candidate_and_the_trail_says_why(
    placed: Path, run_cli: Callable[..., Result]
) -> None:
    result = run_cli(
        "submit",
        str(placed),
        "--provider",
        "local",
        "--emulate",
        "placement",
        *REFUSE_TWO,
        "--run-id",
        "placed-1",
    )
    assert result.code == 0, result.err
    trail = Trail.of_run("placed-1")
    assert [(a.candidate, a.outcome, a.reason) for a in trail.attempts] == [
        (0, "submitted", ""),
        (0, "failed", "capacity"),
        (1, "skipped", "quota"),
        (2, "submitted", ""),
        (2, "started", ""),
    ]
    assert sorted(statuses()) == ["failed", "succeeded"]
    model = (
        local_home() / "buckets" / "gcs" / "my-bucket-europe-west4" / "placed" / "runs" / "placed-1" / "model"
    )
    assert (
        model / "saved_model.pb"
    ).is_file()  # exported by the europe-west4 candidate, under the one run id
