"""The Vertex AI Pipelines example, compiled by the real kfp compiler with the code staged to loopback GCS.

The compiled CustomTrainingJobOp's arguments are compared with ``cloudtrain render
--provider vertex`` for the same spec, and its training task is run through Google Cloud
Pipeline Components' own launcher, whose real JobServiceClient creates the CustomJob on the
loopback fake JobService over gRPC. kfp and google-cloud-pipeline-components run in the
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

import grpc
import pytest
import yaml
from google.auth.credentials import AnonymousCredentials
from google.cloud import aiplatform_v1
from google.protobuf import json_format

from cloudtrain import api, load_spec
from cloudtrain.errors import ProviderError
from cloudtrain.pipelines.kfp import op_arguments
from tests.cloudtrain.pipelines.kfp_executor import container_command, run_module_command
from tests.cloudtrain.providers.fakes.vertex_jobservice import FakeJobService
from tests.cloudtrain.providers.fakes.vertex_storage import BUCKET, FakeStorage
from tests.conftest import EXAMPLE_JOB, REPO

pytest.importorskip("kfp")
pytest.importorskip("google_cloud_pipeline_components")

EXAMPLE = REPO / "examples" / "pipelines" / "kfp_pipeline.py"
# The values Vertex AI Pipelines gives GCPC's pipeline placeholders for a PipelineJob
# without a persistent resource: empty (google_cloud_pipeline_components/_placeholders.py).
PIPELINE_JOB = {"{{$.pipeline_persistent_resource_id}}": ""}


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
def jobservice() -> Iterator[tuple[FakeJobService, str]]:
    fake = FakeJobService()
    with fake.serve() as address:
        yield fake, address


@pytest.fixture
def vertex(
    jobservice: tuple[FakeJobService, str], monkeypatch: pytest.MonkeyPatch
) -> tuple[FakeJobService, list[str]]:
    """The fake JobService, emptied, behind every aiplatform_v1 JobService client built in this process.

    Only what cannot run here is stubbed: the gRPC channel the client's transport opens to
    Google (``HOST:443`` with TLS) is an insecure channel to the fake on loopback,
    Application Default Credentials are anonymous, and the launcher's 20 s wait between
    polls is 0. The client, its request building and the (de)serialisation are the real
    ones. Returns the fake and the hosts the clients asked for.
    """
    import google.auth
    from google.cloud.aiplatform_v1.services.job_service.transports import JobServiceGrpcTransport
    from google_cloud_pipeline_components.container.v1.gcp_launcher import job_remote_runner

    fake, address = jobservice
    fake.reset()
    hosts: list[str] = []

    def channel(host: str, **_: Any) -> grpc.Channel:
        hosts.append(host)
        return grpc.insecure_channel(address)

    monkeypatch.setattr(JobServiceGrpcTransport, "create_channel", staticmethod(channel))
    monkeypatch.setattr(google.auth, "default", lambda **_: (AnonymousCredentials(), None))
    monkeypatch.setattr(job_remote_runner, "_POLLING_INTERVAL_IN_SECONDS", 0)
    # Vertex AI Pipelines adds its run's labels through this; none here, so the job's are cloudtrain's.
    monkeypatch.delenv("VERTEX_AI_PIPELINES_RUN_LABELS", raising=False)
    return fake, hosts


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
    # As the launcher reads them (proto-plus from a dict) and as the render means them (json_format).
    pools = [aiplatform_v1.WorkerPoolSpec(pool) for pool in expected["worker_pool_specs"]]
    assert pools == [_parsed(aiplatform_v1.WorkerPoolSpec, pool) for pool in job_spec["workerPoolSpecs"]]
    assert arguments["display_name"] == rendered["displayName"]
    assert arguments["labels"] == rendered["labels"]
    assert arguments["labels"]["cloudtrain_run"] == "nightly-1"
    assert arguments["timeout"] == job_spec["scheduling"]["timeout"]
    assert arguments["restart_job_on_worker_restart"] == job_spec["scheduling"]["restartJobOnWorkerRestart"]
    assert arguments["base_output_directory"] == job_spec["baseOutputDirectory"]["outputUriPrefix"]


@pytest.mark.parametrize(
    "overrides",
    [
        (),  # the example: no strategy, so the op's default STANDARD must not reach the job
        ("resources.accelerator=l4", "resources.capacity={mode: flex, max_wait: 2h}"),  # kept: FLEX_START
        ("resources.accelerator=l4", "resources.capacity=flex"),  # no max wait: not the op's 86400s
    ],
)
@pytest.mark.usefixtures("gcs")
def test_the_launcher_creates_the_job_cloudtrain_renders(
    example: ModuleType,
    tmp_path: Path,
    vertex: tuple[FakeJobService, list[str]],
    monkeypatch: pytest.MonkeyPatch,
    overrides: tuple[str, ...],
) -> None:
    """The training task's container, run as the pipeline runs it, creates what `cloudtrain render` prints.

    GCPC's launcher module takes the resolved ``--payload``, builds the CreateCustomJob
    request with its real JobServiceClient, sends it over gRPC to the fake, polls the job
    to success and writes ``gcp_resources``. regression: the camelCase worker pools
    failed in the launcher ("Unknown field for WorkerPoolSpec") before any request.
    """
    compiled = _compiled(example, tmp_path, spec=load_spec(EXAMPLE_JOB, overrides))
    command = container_command(compiled, "custom-training-job", PIPELINE_JOB, tmp_path / "task")
    run_module_command(command, monkeypatch)

    fake, hosts = vertex
    [request] = fake.calls("CreateCustomJob")
    assert hosts == ["us-central1-aiplatform.googleapis.com:443"]
    assert request.parent == "projects/my-project/locations/us-central1"
    rendered = _parsed(aiplatform_v1.CustomJob, _cli_render(*overrides))
    created = json_format.MessageToDict(aiplatform_v1.CustomJob.pb(request.custom_job))
    assert _differences(created, json_format.MessageToDict(aiplatform_v1.CustomJob.pb(rendered))) == []
    assert request.custom_job == rendered
    [job] = fake.jobs
    resources = json.loads((tmp_path / "task" / "gcp_resources").read_text())
    assert (
        resources["resources"][0]["resourceUri"] == f"https://us-central1-aiplatform.googleapis.com/v1/{job}"
    )
    assert [call.name for call in fake.calls("GetCustomJob")] == [job] * 3  # polled to JOB_STATE_SUCCEEDED


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


def test_every_field_goes_under_its_proto_name_and_values_are_kept() -> None:
    request = {
        "displayName": "d",
        "labels": {"team_name": "a"},  # map keys are values, not field names
        "jobSpec": {
            "workerPoolSpecs": [{"diskSpec": {"bootDiskSizeGb": 100}, "containerSpec": {"args": ["--x_y"]}}],
            "scheduling": {"timeout": "60s", "strategy": "FLEX_START", "maxWaitDuration": "7200s"},
            "baseOutputDirectory": {"outputUriPrefix": "gs://b/r"},
        },
        "encryptionSpec": {"kmsKeyName": "k"},
    }
    assert op_arguments(request) == {
        "display_name": "d",
        "labels": {"team_name": "a"},
        "worker_pool_specs": [
            {"disk_spec": {"boot_disk_size_gb": 100}, "container_spec": {"args": ["--x_y"]}}
        ],
        "timeout": "60s",  # a Duration: its JSON form, which the launcher's proto-plus takes
        "strategy": "FLEX_START",
        "max_wait_duration": "7200s",
        "base_output_directory": "gs://b/r",
        "encryption_spec_key_name": "k",
    }


def test_the_ops_defaults_are_emptied_where_the_render_has_no_field() -> None:
    """The op defaults timeout, strategy and max_wait_duration; empty, the launcher drops them, as the render does."""
    assert op_arguments({"displayName": "d", "jobSpec": {"workerPoolSpecs": []}}) == {
        "display_name": "d",
        "worker_pool_specs": [],
        "timeout": "",
        "strategy": "",
        "max_wait_duration": "",
    }


def test_a_field_the_proto_lacks_is_an_error() -> None:
    with pytest.raises(
        ProviderError, match=r"^containerSpecs: google.cloud.aiplatform.v1.WorkerPoolSpec has no"
    ):
        op_arguments({"displayName": "d", "jobSpec": {"workerPoolSpecs": [{"containerSpecs": {}}]}})


def test_a_field_the_op_cannot_take_is_an_error_not_a_silent_drop() -> None:
    request = {"displayName": "d", "jobSpec": {"workerPoolSpecs": [], "models": ["m"]}}
    with pytest.raises(ProviderError, match=r"^jobSpec\.models: google-cloud-pipeline-components"):
        op_arguments(request)


def _cli_render(*overrides: str) -> str:
    """What `cloudtrain render --provider vertex` prints for the example, run as a user runs it."""
    sets = [arg for override in overrides for arg in ("--set", override)]
    cli = [sys.executable, "-m", "cloudtrain", "render", str(EXAMPLE_JOB), "--provider", "vertex", *sets]
    return subprocess.run(cli, capture_output=True, text=True, check=True).stdout


def _parsed(message: Any, value: dict[str, Any] | str) -> Any:
    """``value``, a message in its JSON form, parsed by protobuf's json_format into ``message`` (proto-plus)."""
    return message.from_json(value if isinstance(value, str) else json.dumps(value))


def _differences(created: Any, rendered: Any, path: str = "") -> list[str]:
    """Every field path where ``created`` and ``rendered`` differ, with both values."""
    if isinstance(created, dict) and isinstance(rendered, dict):
        keys = sorted(created.keys() | rendered.keys())
        return [
            diff
            for key in keys
            for diff in _differences(created.get(key), rendered.get(key), f"{path}.{key}")
        ]
    if isinstance(created, list) and isinstance(rendered, list) and len(created) == len(rendered):
        pairs = enumerate(zip(created, rendered, strict=True))
        return [diff for i, (one, other) in pairs for diff in _differences(one, other, f"{path}[{i}]")]
    return [] if created == rendered else [f"{path}: created {created!r}, rendered {rendered!r}"]


def test_cloudtrain_help_imports_no_kfp() -> None:
    probe = "import sys; from cloudtrain.cli import main\ntry: main(['--help'])\nexcept SystemExit: pass\n"
    probe += "print(sorted(m for m in sys.modules if m.startswith(('kfp', 'google_cloud_pipeline'))))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
