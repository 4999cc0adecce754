"""Run ids and ``stage``: the idempotency key is (request, run id), on the real clients and the fakes.

Submitting the same spec and code attaches to the job it created, so a scheduled retrain
of unchanged code would silently train nothing; a run id tells the runs apart. ``stage``
uploads the code and renders the request for another orchestrator, creating no job.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import boto3
import pytest

import cloudtrain
from cloudtrain.errors import SpecError
from cloudtrain.provider.base import attached
from tests.cloudtrain.providers.fakes.sagemaker_aws import LoopbackAws
from tests.cloudtrain.providers.fakes.vertex_jobservice import FakeJobService


@pytest.mark.usefixtures("fake_gcs", "fake_logging")
def test_vertex_a_new_run_id_is_a_new_job_and_the_same_one_attaches(
    example_job: Path, fake_vertex: FakeJobService
) -> None:
    monday = cloudtrain.submit(example_job, "vertex", run_id="monday")
    tuesday = cloudtrain.submit(example_job, "vertex", run_id="tuesday")
    retried = cloudtrain.submit(example_job, "vertex", run_id="monday")
    assert monday.id != tuesday.id
    assert retried.id == monday.id
    assert [attached(job) for job in (monday, tuesday, retried)] == [False, False, True]
    assert len(fake_vertex.jobs) == 2
    labels = {job.labels["cloudtrain_run"] for job in fake_vertex.jobs.values()}
    assert labels == {"monday", "tuesday"}


def test_sagemaker_a_new_run_id_is_a_new_job_and_the_same_one_attaches(
    example_job: Path, aws: LoopbackAws
) -> None:
    monday = cloudtrain.submit(example_job, "sagemaker", run_id="monday")
    tuesday = cloudtrain.submit(example_job, "sagemaker", run_id="tuesday")
    retried = cloudtrain.submit(example_job, "sagemaker", run_id="monday")
    assert monday.id != tuesday.id
    assert retried.id == monday.id
    assert [attached(job) for job in (monday, tuesday, retried)] == [False, False, True]
    assert len(aws.sagemaker.jobs) == 2
    assert monday.outputs.model != tuesday.outputs.model  # each run has its own model.tar.gz


def test_stage_uploads_the_code_renders_the_request_and_creates_no_job(
    example_job: Path, aws: LoopbackAws
) -> None:
    staged = cloudtrain.stage(example_job, "sagemaker", run_id="nightly-1")
    bucket, key = staged.plan.bundle.removeprefix("s3://").split("/", 1)  # type: ignore[union-attr]
    s3 = boto3.client("s3", region_name="us-east-1")
    assert s3.head_object(Bucket=bucket, Key=key)["ContentLength"] == staged.bundle.size
    assert aws.sagemaker.jobs == {}
    assert {"Key": "cloudtrain:run", "Value": "nightly-1"} in staged.request["Tags"]
    assert staged.outputs.model.endswith(f"/{staged.request['TrainingJobName']}/output/model.tar.gz")
    job = staged.submit()
    assert job.id.endswith(f"/{staged.request['TrainingJobName'].lower()}")


@pytest.mark.parametrize("run_id", ["Monday", "", "a/b", "x" * 64, "-leading"])
def test_a_bad_run_id_is_a_spec_error_before_anything_is_contacted(example_job: Path, run_id: str) -> None:
    with pytest.raises(SpecError, match=r"^run_id: .* is not a run id\. Use 1-63 lowercase letters"):
        cloudtrain.stage(example_job, "sagemaker", run_id=run_id)


def test_local_the_same_run_id_attaches_until_that_run_fails_or_is_cancelled(
    example_job: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    shutil.copytree(example_job.parent, project, ignore=shutil.ignore_patterns("outputs"))
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path / "home"))
    started: list[cloudtrain.Job] = []

    def submit(run_id: str | None = None) -> str:
        started.append(cloudtrain.submit(project / "job.yaml", "local", run_id=run_id))
        return started[-1].id

    try:
        monday = submit("monday")
        assert submit("monday") == monday
        assert submit("tuesday") != monday
        plain = submit()
        assert plain not in (monday, started[2].id)
        assert submit() != plain  # no run id: a new run every time, as a script started twice
        assert started[3].request and started[4].request
        assert started[3].request["run_id"] != started[4].request["run_id"]
        started[0].cancel()
        assert started[0].wait(poll_s=0.2).state == "cancelled"
        assert submit("monday") != monday  # a cancelled run is not reused
    finally:
        for job in started:
            job.cancel()
