"""submit / attach / status / logs / cancel / wait against loopback AWS with the real boto3 clients.

S3 and CloudWatch Logs are moto servers; SageMaker is the loopback fake, which validates
every request against botocore's service model and refuses duplicate names.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from cloudtrain import api
from cloudtrain.api import plan
from cloudtrain.errors import CredentialsError, ProviderError
from cloudtrain.progress import Progress
from cloudtrain.providers import sagemaker
from cloudtrain.providers.sagemaker import upload as s3
from cloudtrain.providers.sagemaker.clients import AwsClients
from cloudtrain.providers.sagemaker.job import STOP_TAG, SageMakerJob
from cloudtrain.specfile import load_spec
from tests.cloudtrain.providers.fakes.sagemaker_aws import BUCKET, LoopbackAws
from tests.cloudtrain.providers.fakes.sagemaker_service import SPOT_SCRIPT

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "binary_classifier" / "job.yaml"


def submit(aws: LoopbackAws, *overrides: str, clients: AwsClients | None = None) -> SageMakerJob:
    planned, packed = api.pack_code(plan(load_spec(EXAMPLE, overrides), "sagemaker").with_run("r1"))
    return sagemaker.submit(
        planned, sagemaker.provider.render(planned), packed, clients=clients or aws.clients()
    )


def bucket_keys(aws: LoopbackAws) -> list[str]:
    return [obj["Key"] for obj in aws.client("s3").list_objects_v2(Bucket=BUCKET).get("Contents", [])]


def test_submit_uploads_the_code_and_creates_the_job(aws: LoopbackAws) -> None:
    job = submit(aws)
    assert sagemaker.owns(job.id)
    assert job.id == f"arn:aws:sagemaker:us-east-1:123456789012:training-job/{job.request['TrainingJobName']}"
    [key] = bucket_keys(aws)
    code_uri = job.request["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3Uri"]
    assert code_uri == f"s3://{BUCKET}/{key}"
    stored = aws.sagemaker.jobs[job.request["TrainingJobName"]].request
    assert stored["Environment"] == job.request["Environment"]  # the fake keeps what moto drops


def test_a_job_on_managed_mlflow_reads_its_mlflow_run_back(aws: LoopbackAws) -> None:
    arn = "arn:aws:sagemaker:us-east-1:123456789012:mlflow-app/app-team"
    tracked = submit(aws, f"tracking={{uri: '{arn}'}}")
    assert aws.sagemaker.jobs[tracked.name].request["MlflowConfig"]["MlflowResourceArn"] == arn
    assert tracked.mlflow_run() == {"experiment_id": "1", "run_id": f"run-of-{tracked.name}"}
    assert submit(aws).mlflow_run() is None


def test_resubmit_attaches_to_the_existing_job_and_uploads_nothing(aws: LoopbackAws) -> None:
    first = submit(aws)
    s3_puts_before = bucket_keys(aws)
    second = submit(aws)
    assert second.id == first.id
    listed = aws.client("sagemaker").list_training_jobs(NameContains="binary-classifier")[
        "TrainingJobSummaries"
    ]
    assert [job["TrainingJobArn"] for job in listed] == [first.id]
    assert aws.sagemaker.count("CreateTrainingJob") == 2  # the second was refused: ResourceInUse
    assert bucket_keys(aws) == s3_puts_before


def test_changed_spec_is_a_new_job(aws: LoopbackAws) -> None:
    assert submit(aws).id != submit(aws, "training.epochs=4").id
    assert len(aws.sagemaker.jobs) == 2


def test_throttling_is_retried_with_bounded_backoff(aws: LoopbackAws) -> None:
    aws.sagemaker.fail("CreateTrainingJob", "ThrottlingException", times=3)
    job = submit(aws, clients=aws.clients())
    assert aws.sagemaker.count("CreateTrainingJob") == 4
    assert len(aws.sleeps) == 3
    assert all(0 < delay <= 4.0 for delay in aws.sleeps)  # botocore: at most 1, 2, then 4 s
    assert job.status().state == "pending"


def test_server_errors_are_retried(aws: LoopbackAws) -> None:
    aws.sagemaker.fail("DescribeTrainingJob", "InternalFailure", times=2, status=500)
    job = submit(aws)
    assert job.status().state == "pending"
    assert len(aws.sleeps) == 2


def test_transient_errors_that_outlast_every_attempt_fail_in_one_line(aws: LoopbackAws) -> None:
    aws.sagemaker.fail("CreateTrainingJob", "ThrottlingException", times=10)
    with pytest.raises(ProviderError) as caught:
        submit(aws, clients=aws.clients(attempts=3))
    assert (
        str(caught.value)
        == "AWS create_training_job failed: ThrottlingException: Injected ThrottlingException."
    )
    assert len(aws.sleeps) == 2


@pytest.mark.parametrize(
    ("code", "hint"),
    [
        ("AccessDeniedException", "Grant the caller (and sagemaker.role) the missing permission"),
        ("ResourceLimitExceeded", "Request a higher quota for this instance type"),
    ],
)
def test_permanent_errors_fail_at_once_with_the_fix(aws: LoopbackAws, code: str, hint: str) -> None:
    aws.sagemaker.fail("CreateTrainingJob", code)
    with pytest.raises(ProviderError) as caught:
        submit(aws)
    assert f"create_training_job failed: {code}" in str(caught.value)
    assert hint in str(caught.value)
    assert "\n" not in str(caught.value)
    assert aws.sleeps == []


def test_rejected_request_reports_sagemakers_validation_message(aws: LoopbackAws) -> None:
    planned, packed = api.pack_code(plan(load_spec(EXAMPLE), "sagemaker").with_run("r1"))
    request = sagemaker.provider.render(planned) | {"TrainingJobName": "bad_name"}
    with pytest.raises(ProviderError, match=r"ValidationException: .*TrainingJobName"):
        sagemaker.submit(planned, request, packed, clients=aws.clients())


def test_wait_reports_every_state_until_success(aws: LoopbackAws) -> None:
    job = submit(aws)
    seen = []
    final = job.wait(poll_s=7.0, on_status=seen.append)
    assert [s.provider_state for s in seen] == [
        "InProgress/Starting",
        "InProgress/Downloading",
        "InProgress/Training",
        "Completed/Completed",
    ]
    assert [s.state for s in seen] == ["pending", "pending", "running", "succeeded"]
    assert final.done and aws.sleeps == [7.0, 7.0, 7.0]


def test_spot_interruption_waits_and_resumes(aws: LoopbackAws) -> None:
    aws.sagemaker.script(SPOT_SCRIPT)
    job = submit(aws, "resources.spot=true")
    seen = []
    final = job.wait(poll_s=1.0, on_status=seen.append)
    interrupted = next(s for s in seen if s.provider_state == "InProgress/Interrupted")
    assert interrupted.state == "pending"
    assert "spot capacity reclaimed" in interrupted.detail
    assert "InProgress/Restarting" in [s.provider_state for s in seen]
    assert final.state == "succeeded"


def test_failure_reason_is_in_the_detail(aws: LoopbackAws) -> None:
    aws.sagemaker.script(
        [("InProgress", "Training", "Training in progress."), ("Failed", "Failed", "Training job failed")],
        failure_reason="AlgorithmError: ValueError: bad shape, exit code: 1",
    )
    final = submit(aws).wait(poll_s=1.0)
    assert (final.state, final.provider_state) == ("failed", "Failed/Failed")
    assert "AlgorithmError: ValueError: bad shape" in final.detail


def test_resubmit_after_a_failure_is_a_retry_under_the_next_attempt_name(aws: LoopbackAws) -> None:
    aws.sagemaker.script([("Failed", "Failed", "Training job failed")], failure_reason="AlgorithmError")
    first = submit(aws)
    assert first.wait(poll_s=1.0).state == "failed"
    aws.sagemaker.script([("InProgress", "Training", "Training in progress.")])
    second = submit(aws)
    assert second.id == f"{first.id}-r2"
    assert submit(aws).id == second.id  # the retry is running: attach, do not create a third


def test_cancel_stops_the_job_and_it_ends_cancelled(aws: LoopbackAws) -> None:
    job = submit(aws)
    assert job.status().state == "pending"
    job.cancel()
    again = sagemaker.attach(job.id, clients=aws.clients())  # another process: only the ARN
    assert again.status().state == "cancelling"
    assert again.status() == again.status()
    final = again.status()
    assert (final.state, final.provider_state) == ("cancelled", "Stopped/Stopped")
    assert {"Key": STOP_TAG, "Value": "true"} in aws.sagemaker.tags[job.id]


def test_stop_from_outside_cloudtrain_is_a_failure(aws: LoopbackAws) -> None:
    job = submit(aws)
    job.status()
    aws.client("sagemaker").stop_training_job(TrainingJobName=job.name)
    final = job.wait(poll_s=1.0)
    assert final.state == "failed"
    assert final.detail.startswith("Stopped because it was stopped outside cloudtrain.")


def test_max_runtime_exceeded_is_a_failure_with_the_fix(aws: LoopbackAws) -> None:
    aws.sagemaker.script([("InProgress", "Training", ""), ("Stopped", "MaxRuntimeExceeded", "")])
    final = submit(aws).wait(poll_s=1.0)
    assert final.state == "failed"
    assert "raise limits.max_runtime" in final.detail


def test_logs_are_merged_by_time_and_prefixed_by_host(aws: LoopbackAws) -> None:
    job = submit(aws)
    aws.put_logs(f"{job.name}/algo-1-1700000000", [(1000, "epoch 1"), (3000, "epoch 2")])
    aws.put_logs(f"{job.name}/algo-2-1700000000", [(2000, "worker ready")])
    aws.put_logs("some-other-job/algo-1-1700000000", [(1500, "not ours")])
    assert list(job.logs()) == ["[algo-1] epoch 1", "[algo-2] worker ready", "[algo-1] epoch 2"]


def test_logs_before_the_job_logged_anything_are_empty(aws: LoopbackAws) -> None:
    assert list(submit(aws).logs()) == []


def test_follow_streams_new_lines_until_the_job_ends(aws: LoopbackAws) -> None:
    job = submit(aws)
    aws.put_logs(f"{job.name}/algo-1-1700000000", [(1000, "starting")])
    pending = iter([(2000, "epoch 1"), (3000, "epoch 2")])

    def sleep_and_log(seconds: float) -> None:
        """Between polls, the job writes one more line to a new stream of a restarted host."""
        aws.sleeps.append(seconds)
        line = next(pending, None)
        if line is not None:
            aws.put_logs(f"{job.name}/algo-1-17000000{line[0]}", [line])

    followed = list(
        sagemaker.attach(job.id, clients=aws.clients(sleep=sleep_and_log, log_poll_s=2.0)).logs(True)
    )
    assert followed == ["[algo-1] starting", "[algo-1] epoch 1", "[algo-1] epoch 2"]
    assert set(aws.sleeps) == {2.0}


def test_upload_reports_progress_and_skips_an_existing_bundle(
    aws: LoopbackAws, capsys: pytest.CaptureFixture[str]
) -> None:
    planned, packed = api.pack_code(plan(load_spec(EXAMPLE), "sagemaker").with_run("r1"))
    clients = aws.clients()
    seen: list[Progress] = []
    assert s3.upload_bundle(clients, packed, planned.bundle, progress=seen.append) is True
    assert seen[0] == Progress("upload", packed.name, done=0, total=packed.size)
    assert seen[-1] == Progress("upload", packed.name, done=packed.size, total=packed.size)
    assert capsys.readouterr() == ("", "")  # the library draws nothing; the CLI draws the bar
    reported = len(seen)
    assert s3.upload_bundle(clients, packed, planned.bundle, progress=seen.append) is False
    assert len(seen) == reported  # nothing sent, nothing reported
    head = aws.client("s3").head_object(Bucket=BUCKET, Key=s3.split_uri(planned.bundle)[1])
    assert head["Metadata"] == {"sha256": packed.sha256}


def test_unknown_job_is_a_clear_error(aws: LoopbackAws) -> None:
    job = sagemaker.attach(
        "arn:aws:sagemaker:us-east-1:123456789012:training-job/missing", clients=aws.clients()
    )
    with pytest.raises(
        ProviderError, match="describe_training_job failed: ValidationException: Requested resource"
    ):
        job.status()


@pytest.mark.parametrize(
    ("job_id", "owned"),
    [
        ("arn:aws:sagemaker:eu-west-1:123456789012:training-job/churn-0123456789", True),  # a job ARN
        ("arn:aws-cn:sagemaker:cn-north-1:123456789012:training-job/churn", True),  # another partition
        ("arn:aws:sagemaker:eu-west-1:123456789012:processing-job/churn", False),  # not a training job
        ("projects/p/locations/us-central1/customJobs/123", False),  # Vertex
        ("churn-0123456789", False),  # a bare name could be anyone's
    ],
)
def test_owns(job_id: str, owned: bool) -> None:
    assert sagemaker.owns(job_id) is owned


def test_attach_takes_the_region_from_the_arn() -> None:
    job = sagemaker.attach("arn:aws:sagemaker:eu-west-1:123456789012:training-job/churn")
    assert repr(job) == "SageMakerJob(id='arn:aws:sagemaker:eu-west-1:123456789012:training-job/churn')"
    assert job._aws.region == "eu-west-1"
    with pytest.raises(ProviderError, match="is not a SageMaker training-job ARN"):
        sagemaker.attach("churn")


def test_missing_credentials_say_how_to_configure(aws: LoopbackAws, monkeypatch: pytest.MonkeyPatch) -> None:
    aws.install(monkeypatch)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    job = sagemaker.attach("arn:aws:sagemaker:us-east-1:123456789012:training-job/churn")
    with pytest.raises(CredentialsError, match=r"\$ aws configure"):
        job.status()


def test_unreachable_endpoint_is_retried_then_reported(
    aws: LoopbackAws, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER", closed)
    clients = aws.clients(attempts=2)
    job = sagemaker.attach("arn:aws:sagemaker:us-east-1:123456789012:training-job/churn", clients=clients)
    with pytest.raises(
        ProviderError, match=r"^AWS describe_training_job failed: Could not connect .* Check the network\.$"
    ):
        job.status()
    assert len(aws.sleeps) == 1


def test_no_secret_from_the_environment_reaches_the_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI-not-a-real-secret")
    planned, _ = api.pack_code(plan(load_spec(EXAMPLE), "sagemaker").with_run("r1"))
    assert "wJalrXUtnFEMI" not in json.dumps(sagemaker.provider.render(planned))


def test_missing_bucket_says_how_to_create_it(aws: LoopbackAws) -> None:
    with pytest.raises(ProviderError) as caught:
        submit(aws, "sagemaker.storage_root=s3://no-such-bucket/run")
    assert str(caught.value) == (
        "S3 bucket 'no-such-bucket' does not exist. Create it (aws s3 mb s3://no-such-bucket), "
        "or set sagemaker.storage_root to a bucket you own."
    )
    assert aws.sagemaker.count("CreateTrainingJob") == 0
