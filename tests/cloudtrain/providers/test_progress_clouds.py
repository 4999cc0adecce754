"""A running cloud job's progress, read back from its storage: Vertex AI, SageMaker and Kubernetes.

Each job is submitted by the real CLI to its loopback fake (Vertex's JobService, the fake
SageMaker, the fake Kubernetes API server); a record the runtime's own ``progress.record``
builds is then put where the chief writes it (Cloud Storage in gcp-storage-emulator, S3 in
moto): beside the run's result, and on SageMaker in the checkpoint folder SageMaker syncs
while the job runs. ``status``, ``status --json``, ``list`` and ``training_progress`` read
it through the real job handle, and price the time left at the hourly price the job
carries from submit.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from google.cloud import storage

from cloudtrain import api
from cloudtrain.cost.inputs import prices
from cloudtrain.uris import sibling
from cloudtrain_runtime import progress
from tests.cloudtrain.providers.fakes.kubernetes_api import FakeKubernetes
from tests.cloudtrain.providers.fakes.sagemaker_aws import LoopbackAws
from tests.cloudtrain.providers.fakes.vertex_jobservice import FakeJobService
from tests.conftest import Result

EXAMPLE = str(Path(__file__).resolve().parents[3] / "examples" / "binary_classifier" / "job.yaml")
Run = Callable[..., Result]
RECORD_FILE = "cloudtrain-progress.json"
# Training on: epoch 3 of 30, 120 of 400 steps, 2 steps/s: 11,080 steps, about 1 h 32 min, left.
STEPS_LEFT = 27 * 400 + 280


def record() -> bytes:
    """What the chief writes at epoch 3, step 120 of 400, at 2 steps/s, now."""
    written = progress.record(
        epoch=3,
        epochs=30,
        step=120,
        steps_per_epoch=400,
        steps_per_s=2.0,
        global_batch=64,
        loss=0.41,
        wall_s=1800.0,
        attempt=1,
        now=time.time(),
    )
    return json.dumps(written).encode()


def gcs_put(uri: str, data: bytes) -> None:
    bucket, _, name = uri.removeprefix("gs://").partition("/")
    storage.Client().bucket(bucket).blob(name).upload_from_string(data)


def hourly(provider: str, region: str, machine_type: str, accelerator: str, hosts: int) -> float:
    """The catalog's on-demand price of ``hosts`` hosts, to the cent as the job carries it."""
    price = prices().lookup(provider, region, machine_type, accelerator)
    assert price is not None and price.on_demand is not None
    return round(price.on_demand * hosts, 2)


def succeeded(result: Result) -> str:
    assert result.code == 0, result.err
    return result.out


def check_shown(run_cli: Run, job_id: str, rate: float) -> None:
    """``status``, ``status --json``, ``list`` and the API show the record, and the cost to finish at ``rate``."""
    found = api.training_progress(job_id)
    assert found is not None and (found.epoch, found.step, found.steps_left) == (3, 120, STEPS_LEFT)
    assert found.examples_per_s == 128.0 and found.billed
    assert found.eta_s is not None and 0 < STEPS_LEFT / 2.0 - found.eta_s < 60
    assert found.to_finish_usd == pytest.approx(found.eta_s / 3600 * rate, rel=1e-2)

    shown = succeeded(run_cli("status", job_id)).splitlines()
    (line,) = [text for text in shown if text.startswith("progress: ")]
    assert line.startswith("progress: epoch 3/30, step 120/400, 128 examples/s, loss 0.41, ETA ")
    assert line.endswith(" to finish") and ", ~$" in line

    as_json = json.loads(succeeded(run_cli("status", job_id, "--json")))["progress"]
    assert (as_json["epoch"], as_json["steps_left"], as_json["billed"]) == (3, STEPS_LEFT, True)
    assert as_json["to_finish_usd"] == pytest.approx(as_json["eta_s"] / 3600 * rate, rel=1e-2)

    (listed_job,) = [job for job in json.loads(succeeded(run_cli("list", "--json"))) if job["id"] == job_id]
    assert listed_job["progress"].keys() == as_json.keys()  # the same dict as status --json
    assert (listed_job["progress"]["epoch"], listed_job["progress"]["steps_left"]) == (3, STEPS_LEFT)
    assert listed_job["progress"]["to_finish_usd"] == pytest.approx(as_json["to_finish_usd"], rel=1e-2)

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COLUMNS", "250")
        listed = succeeded(run_cli("list"))
    (row,) = [text for text in listed.splitlines() if " 3/30 ETA " in text]
    assert " ~$" in row


def test_a_running_vertex_job_shows_its_progress_from_cloud_storage(
    run_cli: Run, fake_vertex: FakeJobService, fake_gcs: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-project")
    job_id = succeeded(run_cli("submit", EXAMPLE, "--provider", "vertex")).strip()
    fake_vertex.set_state(job_id, "JOB_STATE_RUNNING")
    assert api.training_progress(job_id) is None  # nothing written yet
    assert json.loads(succeeded(run_cli("status", job_id, "--json")))["progress"] is None

    gcs_put(sibling(api.attach(job_id).outputs.result, RECORD_FILE), record())
    check_shown(run_cli, job_id, hourly("vertex", "us-central1", "n1-standard-8", "t4", 2))


def test_a_running_sagemaker_job_shows_its_progress_from_the_synced_checkpoint_folder(
    run_cli: Run, aws: LoopbackAws
) -> None:
    aws.sagemaker.script(
        [("InProgress", "Training", "Training image download completed. Training in progress.")]
    )
    job_id = succeeded(run_cli("submit", EXAMPLE, "--provider", "sagemaker")).strip()
    assert api.training_progress(job_id) is None  # nothing written yet
    backup = api.attach(job_id).outputs.backup
    assert backup.startswith("s3://")  # CheckpointConfig.S3Uri, synced while the job runs
    bucket, _, prefix = backup.removeprefix("s3://").partition("/")
    aws.client("s3").put_object(Bucket=bucket, Key=f"{prefix}/{RECORD_FILE}", Body=record())
    check_shown(run_cli, job_id, hourly("sagemaker", "us-east-1", "ml.g4dn.xlarge", "t4", 2))


@pytest.mark.usefixtures("fake_gcs")
def test_a_running_kubernetes_job_shows_its_progress_from_the_storage_root(
    run_cli: Run, fake_cluster: FakeKubernetes
) -> None:
    job_id = succeeded(run_cli("submit", EXAMPLE, "--provider", "kubernetes", "--no-wait")).strip()
    ((namespace, name),) = fake_cluster.jobsets
    fake_cluster.pods_for(namespace, name)
    assert api.training_progress(job_id) is None  # nothing written yet

    gcs_put(sibling(api.attach(job_id).outputs.result, RECORD_FILE), record())
    check_shown(run_cli, job_id, hourly("kubernetes", "us-central1", "n1-standard-8", "t4", 2))


def test_a_kubernetes_job_on_s3_reads_what_the_sidecar_copied_out(
    run_cli: Run, fake_cluster: FakeKubernetes, aws: LoopbackAws
) -> None:
    root = "kubernetes.storage_root=s3://my-bucket/binary-classifier"
    job_id = succeeded(
        run_cli("submit", EXAMPLE, "--provider", "kubernetes", "--set", root, "--no-wait")
    ).strip()
    ((namespace, name),) = fake_cluster.jobsets
    fake_cluster.pods_for(namespace, name)
    result = api.attach(job_id).outputs.result
    assert result.startswith("s3://my-bucket/binary-classifier/")
    bucket, _, key = sibling(result, RECORD_FILE).removeprefix("s3://").partition("/")
    aws.client("s3").put_object(Bucket=bucket, Key=key, Body=record())
    found = api.training_progress(job_id)
    assert found is not None and (found.epoch, found.steps_left) == (3, STEPS_LEFT)


def test_a_record_that_is_not_json_reads_as_none(
    run_cli: Run, fake_vertex: FakeJobService, fake_gcs: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A half-written or foreign file never stops ``status``: it shows the state without progress."""
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-project")
    job_id = succeeded(run_cli("submit", EXAMPLE, "--provider", "vertex")).strip()
    fake_vertex.set_state(job_id, "JOB_STATE_RUNNING")
    gcs_put(sibling(api.attach(job_id).outputs.result, RECORD_FILE), b'{"epoch": 3')
    shown: dict[str, Any] = json.loads(succeeded(run_cli("status", job_id, "--json")))
    assert (shown["state"], shown["progress"]) == ("running", None)
    (listed,) = json.loads(succeeded(run_cli("list", "--json")))
    assert (listed["state"], listed["progress"]) == ("running", None)


@pytest.mark.usefixtures("no_google_credentials", "fake_gcs")
def test_a_kubernetes_job_whose_bucket_this_machine_cannot_read_shows_its_state_without_progress(
    run_cli: Run, fake_cluster: FakeKubernetes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cluster answers, the bucket does not (no Google credentials here): ``status`` still works."""
    job_id = succeeded(run_cli("submit", EXAMPLE, "--provider", "kubernetes", "--no-wait")).strip()
    ((namespace, name),) = fake_cluster.jobsets
    fake_cluster.pods_for(namespace, name)
    monkeypatch.delenv("STORAGE_EMULATOR_HOST")
    shown = json.loads(succeeded(run_cli("status", job_id, "--json")))
    assert (shown["state"], shown["progress"]) == ("running", None)
