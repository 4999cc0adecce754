"""The ``cloudtrain`` commands on SageMaker, end to end: dry run, submit, status, logs, cancel.

The real entry point runs in-process with the environment a user would have: dummy
credentials and botocore's ``AWS_ENDPOINT_URL_*`` variables pointing at loopback AWS.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cloudtrain.providers.fakes import sagemaker_model
from tests.cloudtrain.providers.fakes.sagemaker_aws import BUCKET, LoopbackAws
from tests.conftest import Result

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "binary_classifier" / "job.yaml"


def test_dry_run_prints_a_request_botocore_accepts(run_cli: Callable[..., Result]) -> None:
    code, out, err = run_cli("submit", str(EXAMPLE), "--provider", "sagemaker", "--dry-run")
    assert code == 0
    request = json.loads(out)
    assert sagemaker_model.problems("CreateTrainingJob", request) == []
    assert request["ResourceConfig"] == {
        "InstanceType": "ml.g4dn.xlarge",
        "InstanceCount": 2,
        "VolumeSizeInGB": 100,
    }
    assert "Plan: 2 × ml.g4dn.xlarge" in err


def test_submit_status_logs_cancel(aws: LoopbackAws, run_cli: Callable[..., Result]) -> None:
    code, out, _ = run_cli("submit", str(EXAMPLE), "--provider", "sagemaker")
    assert code == 0
    job_id = out.strip()
    assert job_id.startswith("arn:aws:sagemaker:us-east-1:123456789012:training-job/binary-classifier-")
    again = run_cli("submit", str(EXAMPLE), "--provider", "sagemaker")
    assert again.out.strip() == job_id
    assert f"Attached to {job_id}, which an earlier submit" in again.err  # said, not silent
    assert len(aws.sagemaker.jobs) == 1
    assert len(aws.client("s3").list_objects_v2(Bucket=BUCKET)["Contents"]) == 1  # uploaded once

    # The fake moves one step per describe; the re-submit above described the job once.
    status = run_cli("status", job_id).out.splitlines()
    assert status[0] == "pending (InProgress/Downloading): Downloading input data"
    assert any(line.split()[:2] == ["shape", "2"] for line in status[1:] if line.strip())
    name = job_id.rsplit("/", 1)[1]
    aws.put_logs(f"{name}/algo-1-1700000000", [(0, "epoch 1/3")])
    assert run_cli("logs", job_id).out == "[algo-1] epoch 1/3\n"

    aws.sagemaker.jobs[name].position = 1  # cancel looks first, which moves it on to Training
    code, _, err = run_cli("cancel", job_id)
    assert (code, err) == (0, f"Cancellation requested for {job_id}\n")
    code, out, _ = run_cli("status", job_id, "--json")
    assert json.loads(out)["state"] == "cancelling"
    assert json.loads(run_cli("status", job_id, "--json").out)["state"] == "cancelled"


def test_cancel_of_an_ended_job_says_so_and_stops_nothing(
    aws: LoopbackAws, run_cli: Callable[..., Result]
) -> None:
    job_id = run_cli("submit", str(EXAMPLE), "--provider", "sagemaker").out.strip()
    job = aws.sagemaker.jobs[job_id.rsplit("/", 1)[1]]
    job.position = 3  # Completed
    code, _, err = run_cli("cancel", job_id)
    assert code == 0
    assert err.startswith(f"{job_id} already finished: succeeded (Completed")
    assert err.endswith(". Nothing to cancel.\n")


def test_missing_credentials_show_the_command(aws: LoopbackAws, monkeypatch, run_cli) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    code, _, err = run_cli("submit", str(EXAMPLE), "--provider", "sagemaker")
    assert code == 1
    assert "Error: No usable AWS credentials. Run:\n  $ aws configure\n" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("reference", ["", "   "])
def test_an_empty_reference_stops_no_job(
    aws: LoopbackAws, run_cli: Callable[..., Result], reference: str
) -> None:
    # regression: with one job present, `cloudtrain cancel ""` exited 0 and stopped it
    job_id = run_cli("submit", str(EXAMPLE), "--provider", "sagemaker").out.strip()
    for command in ("cancel", "status"):
        result = run_cli(command, reference)
        assert result.code == 2
        assert result.errors[0].startswith(f"No job given: the job reference {reference!r} is empty.")
    assert aws.sagemaker.jobs[job_id.rsplit("/", 1)[1]].step[0] == "InProgress"  # never stopped


def test_the_job_commands_find_a_job_by_its_run_id_through_the_run_tag(
    aws: LoopbackAws, run_cli: Callable[..., Result]
) -> None:
    job_id = run_cli("submit", str(EXAMPLE), "--provider", "sagemaker", "--run-id", "nightly-42").out.strip()
    run_cli("submit", str(EXAMPLE), "--provider", "sagemaker", "--run-id", "nightly-43")  # another run's job

    result = run_cli("status", "nightly-42", "--json")
    assert result.code == 0, result.err
    shown = json.loads(result.out)
    assert (shown["id"], shown["run"]) == (job_id, "nightly-42")
    searches = [params["SearchExpression"] for name, params in aws.sagemaker.calls if name == "Search"]
    run_filter = {"Name": "Tags.cloudtrain:run", "Operator": "Equals", "Value": "nightly-42"}
    assert {
        "Filters": [run_filter]
    } in searches  # SageMaker filters by the run tag (the fake checks the model)
