"""The Vertex AI Pipelines example, compiled by the real kfp compiler with the code staged to loopback GCS.

The compiled CustomTrainingJobOp's arguments are compared with ``cloudtrain render
--provider vertex`` for the same spec. kfp and google-cloud-pipeline-components run in the
``pipelines-kfp`` lane (tests/lanes/pipelines-kfp.txt); without them these tests skip.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from cloudtrain import api
from cloudtrain.errors import ProviderError
from cloudtrain.pipelines.kfp import op_arguments
from tests.cloudtrain.providers.fakes.vertex_storage import BUCKET, FakeStorage
from tests.conftest import EXAMPLE_JOB, REPO

pytest.importorskip("kfp")
pytest.importorskip("google_cloud_pipeline_components")

EXAMPLE = REPO / "examples" / "pipelines" / "kfp_pipeline.py"


@pytest.fixture(scope="module")
def storage() -> Iterator[tuple[FakeStorage, str]]:
    fake = FakeStorage()
    with fake.serve() as address:
        yield fake, address


@pytest.fixture
def gcs(storage: tuple[FakeStorage, str], monkeypatch: pytest.MonkeyPatch) -> FakeStorage:
    fake, address = storage
    fake.reset()
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", address)
    return fake


@pytest.fixture(scope="module")
def example() -> ModuleType:
    found = importlib.util.spec_from_file_location("kfp_pipeline", EXAMPLE)
    assert found is not None and found.loader is not None
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


def _compiled(example: ModuleType, tmp_path: Path, **kwargs: Any) -> dict[str, Any]:
    return dict(yaml.safe_load(example.compile_pipeline(tmp_path / "pipeline.yaml", **kwargs).read_text()))


def _train_arguments(compiled: dict[str, Any]) -> dict[str, Any]:
    """The constant arguments the pipeline gives the custom-training-job task, as Python values."""
    [task] = [
        task
        for name, task in compiled["root"]["dag"]["tasks"].items()
        if name.startswith("custom-training-job")
    ]
    parameters = task["inputs"]["parameters"]
    return {name: value["runtimeValue"]["constant"] for name, value in parameters.items()}


@pytest.mark.usefixtures("gcs")
def test_the_compiled_job_is_the_request_cloudtrain_renders(example: ModuleType, tmp_path: Path) -> None:
    compiled = _compiled(example, tmp_path, run_id="nightly-1")
    rendered = api.stage(EXAMPLE_JOB, "vertex", run_id="nightly-1").request
    arguments = _train_arguments(compiled)
    expected = {**op_arguments(rendered), "project": "my-project", "location": "us-central1"}
    assert set(arguments) == set(expected)
    for name, value in expected.items():
        assert arguments[name] == value, f"{name} differs from cloudtrain render"
    job_spec = rendered["jobSpec"]
    assert arguments["worker_pool_specs"] == job_spec["workerPoolSpecs"]
    assert arguments["display_name"] == rendered["displayName"]
    assert arguments["labels"] == rendered["labels"]
    assert arguments["labels"]["cloudtrain_run"] == "nightly-1"
    assert arguments["timeout"] == job_spec["scheduling"]["timeout"]
    assert arguments["restart_job_on_worker_restart"] == job_spec["scheduling"]["restartJobOnWorkerRestart"]
    assert arguments["base_output_directory"] == job_spec["baseOutputDirectory"]["outputUriPrefix"]


@pytest.mark.usefixtures("gcs")
def test_the_same_as_the_cli_render(example: ModuleType, tmp_path: Path) -> None:
    """The worker pool specs equal what `cloudtrain render --provider vertex` prints, run as a user runs it."""
    pools = _train_arguments(_compiled(example, tmp_path))["worker_pool_specs"]
    cli = [sys.executable, "-m", "cloudtrain", "render", str(EXAMPLE_JOB), "--provider", "vertex"]
    printed = json.loads(subprocess.run(cli, capture_output=True, text=True, check=True).stdout)
    assert pools == printed["jobSpec"]["workerPoolSpecs"]


@pytest.mark.usefixtures("gcs")
def test_the_model_artifact_is_imported_after_training_and_uploaded(
    example: ModuleType, tmp_path: Path
) -> None:
    compiled = _compiled(example, tmp_path)
    tasks = compiled["root"]["dag"]["tasks"]
    [importer] = [name for name in tasks if name.startswith("importer")]
    [train] = [name for name in tasks if name.startswith("custom-training-job")]
    assert train in tasks[importer]["dependentTasks"]
    upload = tasks["model-upload"]["inputs"]["artifacts"]["unmanaged_container_model"]
    assert upload["taskOutputArtifact"]["producerTask"] == importer
    outputs = api.stage(EXAMPLE_JOB, "vertex").outputs
    uri = tasks[importer]["inputs"]["parameters"]["uri"]["runtimeValue"]["constant"]
    assert uri == outputs.model
    [spec] = [
        executor
        for name, executor in compiled["deploymentSpec"]["executors"].items()
        if name.startswith("exec-importer")
    ]
    assert spec["importer"]["typeSchema"]["schemaTitle"] == "google.UnmanagedContainerModel"


@pytest.mark.usefixtures("gcs")
def test_the_code_bundle_is_uploaded_when_the_pipeline_compiles(example: ModuleType, tmp_path: Path) -> None:
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    _compiled(example, tmp_path)
    client = storage.Client(project="my-project", credentials=AnonymousCredentials())
    uploaded = [f"gs://{BUCKET}/{blob.name}" for blob in client.list_blobs(BUCKET)]
    assert uploaded == [api.prepare(EXAMPLE_JOB, "vertex").plan.bundle]


def test_a_field_the_op_cannot_take_is_an_error_not_a_silent_drop() -> None:
    request = {"displayName": "d", "jobSpec": {"workerPoolSpecs": [], "models": ["m"]}}
    with pytest.raises(ProviderError, match=r"^jobSpec\.models: google-cloud-pipeline-components"):
        op_arguments(request)


def test_cloudtrain_help_imports_no_kfp() -> None:
    probe = "import sys; from cloudtrain.cli import main\ntry: main(['--help'])\nexcept SystemExit: pass\n"
    probe += "print(sorted(m for m in sys.modules if m.startswith(('kfp', 'google_cloud_pipeline'))))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
