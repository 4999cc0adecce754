"""The ``cloudtrain`` commands on SageMaker, end to end: dry run, submit, status, logs, cancel.

The real entry point runs in-process with the environment a user would have: dummy
credentials and botocore's ``AWS_ENDPOINT_URL_*`` variables pointing at loopback AWS.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes import sagemaker_model
from fakes.sagemaker_aws import BUCKET, LoopbackAws

from cloudtrain.cli import main

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "binary_classifier" / "job.yaml"


def cloudtrain(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run the CLI; returns exit code, stdout, stderr."""
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    captured = capsys.readouterr()
    return int(exit_info.value.code or 0), captured.out, captured.err


def test_dry_run_prints_a_request_botocore_accepts(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cloudtrain(capsys, "submit", str(EXAMPLE), "--provider", "sagemaker", "--dry-run")
    assert code == 0
    request = json.loads(out)
    assert sagemaker_model.problems("CreateTrainingJob", request) == []
    assert request["ResourceConfig"] == {
        "InstanceType": "ml.g4dn.xlarge",
        "InstanceCount": 2,
        "VolumeSizeInGB": 100,
    }
    assert "Plan: 2 × ml.g4dn.xlarge" in err


def test_submit_status_logs_cancel(aws: LoopbackAws, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cloudtrain(capsys, "submit", str(EXAMPLE), "--provider", "sagemaker")
    assert code == 0
    job_id = out.strip()
    assert job_id.startswith("arn:aws:sagemaker:us-east-1:123456789012:training-job/binary-classifier-")
    assert cloudtrain(capsys, "submit", str(EXAMPLE), "--provider", "sagemaker")[1].strip() == job_id
    assert len(aws.sagemaker.jobs) == 1
    assert len(aws.client("s3").list_objects_v2(Bucket=BUCKET)["Contents"]) == 1  # uploaded once

    # The fake moves one step per describe; the re-submit above described the job once.
    assert (
        cloudtrain(capsys, "status", job_id)[1]
        == "pending (InProgress/Downloading): Downloading input data\n"
    )
    name = job_id.rsplit("/", 1)[1]
    aws.put_logs(f"{name}/algo-1-1700000000", [(0, "epoch 1/3")])
    assert cloudtrain(capsys, "logs", job_id)[1] == "[algo-1] epoch 1/3\n"

    code, _, err = cloudtrain(capsys, "cancel", job_id)
    assert (code, err) == (0, f"Cancellation requested for {job_id}\n")
    code, out, _ = cloudtrain(capsys, "status", job_id, "--json")
    assert json.loads(out)["state"] == "cancelling"
    assert json.loads(cloudtrain(capsys, "status", job_id, "--json")[1])["state"] == "cancelled"


def test_cancel_of_an_ended_job_is_one_error_line(
    aws: LoopbackAws, capsys: pytest.CaptureFixture[str]
) -> None:
    job_id = cloudtrain(capsys, "submit", str(EXAMPLE), "--provider", "sagemaker")[1].strip()
    aws.sagemaker.jobs[job_id.rsplit("/", 1)[1]].position = 3  # Completed
    code, _, err = cloudtrain(capsys, "cancel", job_id)
    assert code == 1
    assert err == (
        "Error: AWS stop_training_job failed: ValidationException: "
        "The training job is in status Completed and cannot be stopped.\n"
    )


def test_missing_credentials_show_the_command(aws: LoopbackAws, monkeypatch, capsys) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    code, _, err = cloudtrain(capsys, "submit", str(EXAMPLE), "--provider", "sagemaker")
    assert code == 1
    assert "Error: No usable AWS credentials. Run:\n  $ aws configure\n" in err
    assert "Traceback" not in err
