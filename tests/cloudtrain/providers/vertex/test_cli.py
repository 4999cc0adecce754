"""The CLI end to end on Vertex: dry run, then submit, status, logs, cancel and a repeated submit,
against the fake JobService, the fake Cloud Logging and gcp-storage-emulator on loopback."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from google.cloud import aiplatform_v1, storage
from google.protobuf import json_format

from tests.cloudtrain.providers.fakes.vertex_jobservice import FakeJobService
from tests.cloudtrain.providers.fakes.vertex_logging import FakeLogging
from tests.cloudtrain.providers.fakes.vertex_storage import BUCKET
from tests.conftest import Result

EXAMPLE = str(Path(__file__).resolve().parents[4] / "examples" / "binary_classifier" / "job.yaml")


@pytest.fixture
def run(run_cli: Callable[..., Result]) -> Callable[..., Result]:
    """The CLI through its real entry point; every command here must succeed."""

    def succeeded(*args: str) -> Result:
        result = run_cli(*args)
        assert result.code == 0, result.err
        return result

    return succeeded


def test_dry_run_prints_a_custom_job_the_api_accepts(run: Callable[..., Result]) -> None:
    result = run("submit", EXAMPLE, "--provider", "vertex", "--dry-run")
    body = json.loads(result.out)
    json_format.ParseDict(
        body, aiplatform_v1.CustomJob.pb(aiplatform_v1.CustomJob()), ignore_unknown_fields=False
    )
    assert [pool["replicaCount"] for pool in body["jobSpec"]["workerPoolSpecs"]] == [1, 1]
    assert "Plan:" in result.err


def test_render_prints_the_same_body_as_the_dry_run(run: Callable[..., Result]) -> None:
    rendered = run("render", EXAMPLE, "--provider", "vertex").out
    dry_run = run("submit", EXAMPLE, "--provider", "vertex", "--dry-run").out
    assert json.loads(rendered) == json.loads(dry_run)


@pytest.mark.usefixtures("fake_gcs")
def test_submit_status_cancel_and_resubmit(run: Callable[..., Result], fake_vertex: FakeJobService) -> None:
    job_id = run("submit", EXAMPLE, "--provider", "vertex").out.strip()
    assert list(fake_vertex.jobs) == [job_id]
    (created,) = fake_vertex.calls("CreateCustomJob")
    bundle = created.custom_job.job_spec.worker_pool_specs[0].container_spec.env[0].value
    blob = storage.Client().bucket(BUCKET).get_blob(bundle.removeprefix(f"/gcs/{BUCKET}/"))
    assert blob is not None

    assert run("status", job_id).out.splitlines()[0] == "queued (JOB_STATE_PENDING)"
    fake_vertex.set_state(job_id, "JOB_STATE_RUNNING")  # cancel looks first: it is not done
    assert run("cancel", job_id).err.strip() == f"Cancellation requested for {job_id}"
    shown = json.loads(run("status", job_id, "--json").out)
    assert {key: shown[key] for key in ("id", "state", "provider_state", "detail", "done")} == {
        "id": job_id,
        "state": "cancelled",
        "provider_state": "JOB_STATE_CANCELLED",
        "detail": "",
        "done": True,
    }

    fake_vertex.set_state(job_id, "JOB_STATE_RUNNING")
    assert run("submit", EXAMPLE, "--provider", "vertex").out.strip() == job_id
    assert len(fake_vertex.calls("CreateCustomJob")) == 1
    assert storage.Client().bucket(BUCKET).get_blob(blob.name).generation == blob.generation


@pytest.mark.usefixtures("fake_gcs")
def test_logs_command_prints_replica_prefixed_lines(
    run: Callable[..., Result], fake_vertex: FakeJobService, fake_logging: FakeLogging
) -> None:
    job_id = run("submit", EXAMPLE, "--provider", "vertex").out.strip()
    fake_logging.write("my-project", job_id.rsplit("/", 1)[1], "workerpool1-0", "Epoch 3/3 - loss: 0.21")
    assert run("logs", job_id).out.splitlines() == ["[worker-0] Epoch 3/3 - loss: 0.21"]


@pytest.mark.usefixtures("fake_gcs")
def test_wait_exits_zero_when_the_job_succeeds(
    run: Callable[..., Result], fake_vertex: FakeJobService
) -> None:
    job_id = run("submit", EXAMPLE, "--provider", "vertex").out.strip()
    result = run("wait", job_id, "--poll", "0")
    created = fake_vertex.jobs[job_id].create_time.astimezone().strftime("%Y-%m-%d %H:%M:%S")
    assert result.err.splitlines() == [
        f"queued (JOB_STATE_PENDING): provisioning its machines, since {created}",  # why it waits
        "running (JOB_STATE_RUNNING)",
        "succeeded (JOB_STATE_SUCCEEDED)",
    ]


@pytest.mark.usefixtures("fake_gcs")
def test_ctrl_c_on_wait_leaves_the_cloud_job_running_and_says_how_to_cancel_it(
    run: Callable[..., Result], fake_vertex: FakeJobService
) -> None:
    # regression: a bare "Aborted." (the real command in a subprocess, sent SIGINT)
    job_id = run("submit", EXAMPLE, "--provider", "vertex").out.strip()
    fake_vertex.set_state(job_id, "JOB_STATE_RUNNING")
    waiting = subprocess.Popen(
        [sys.executable, "-m", "cloudtrain", "wait", job_id, "--poll", "1"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert waiting.stderr is not None
    assert waiting.stderr.readline() == "running (JOB_STATE_RUNNING)\n"  # it is following
    waiting.send_signal(signal.SIGINT)
    _, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 130
    assert err.splitlines() == [
        f"Stopped following {job_id}; it still runs on Vertex AI. Stop it with: cloudtrain cancel {job_id}"
    ]
    assert fake_vertex.calls("CancelCustomJob") == []


@pytest.mark.usefixtures("fake_gcs")
def test_cancel_of_an_ended_job_says_so_in_one_line_and_sends_nothing(
    run: Callable[..., Result], run_cli: Callable[..., Result], fake_vertex: FakeJobService
) -> None:
    # regression: cancelling a finished job advised enabling the Vertex AI API
    job_id = run("submit", EXAMPLE, "--provider", "vertex").out.strip()
    fake_vertex.set_state(job_id, "JOB_STATE_SUCCEEDED")
    result = run_cli("cancel", job_id)
    assert (result.code, result.out) == (0, "")
    assert result.err.splitlines() == [
        f"{job_id} already finished: succeeded (JOB_STATE_SUCCEEDED). Nothing to cancel."
    ]
    assert fake_vertex.calls("CancelCustomJob") == []


@pytest.mark.usefixtures("fake_gcs")
def test_submit_draws_the_upload_bar_of_a_large_bundle_on_stderr(
    run: Callable[..., Result], fake_vertex: FakeJobService, tmp_path: Path
) -> None:
    example = Path(EXAMPLE).parent
    shutil.copy(example / "job.yaml", tmp_path / "job.yaml")
    shutil.copytree(example / "trainer", tmp_path / "trainer")
    # Incompressible, so the bundle stays above the CLI's 8 MiB bar threshold.
    (tmp_path / "vocabulary.bin").write_bytes(random.Random(0).randbytes(9 * 2**20))
    result = run("submit", str(tmp_path / "job.yaml"), "--provider", "vertex")
    (created,) = fake_vertex.calls("CreateCustomJob")
    bundle = created.custom_job.job_spec.worker_pool_specs[0].container_spec.env[0].value
    assert list(fake_vertex.jobs) == [result.out.strip()]
    assert f"Uploading {bundle.rsplit('/', 1)[1]}" in result.err


@pytest.mark.usefixtures("fake_gcs")
def test_the_job_commands_find_a_job_by_its_run_id_through_the_run_label(
    run: Callable[..., Result], fake_vertex: FakeJobService, monkeypatch: pytest.MonkeyPatch
) -> None:
    # regression: `cloudtrain status nightly-42` (the --run-id given) said no job matches
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-project")
    job_id = run("submit", EXAMPLE, "--provider", "vertex", "--run-id", "nightly-42").out.strip()
    run("submit", EXAMPLE, "--provider", "vertex", "--run-id", "nightly-43")  # another run's job

    shown = json.loads(run("status", "nightly-42", "--json").out)
    assert (shown["id"], shown["run"]) == (job_id, "nightly-42")
    filters = [request.filter for request in fake_vertex.calls("ListCustomJobs")]
    assert 'labels.cloudtrain_run="nightly-42"' in filters  # the service filters by the run label
    assert job_id in run("cancel", "nightly-42").err
