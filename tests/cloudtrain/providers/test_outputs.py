"""Where the artifacts land: the plan's ``outputs`` against the fields of the rendered requests.

``outputs`` claims where each artifact is after the job; the request is what makes the
provider put it there. These tests hold the two together for the bundled example, so a
request that stops delivering an artifact (or a plan that points elsewhere) fails here.
The emulated runs in ``test_local_training.py`` then show the artifacts really arrive.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cloudtrain import api
from cloudtrain.api import plan
from cloudtrain.errors import SpecError
from cloudtrain.outputs import Outputs
from cloudtrain.providers import local
from cloudtrain.providers.sagemaker import emulate as sagemaker_emulate
from cloudtrain.providers.sagemaker.render import CHECKPOINT_DIR, TENSORBOARD_DIR, metric_definitions
from cloudtrain.providers.vertex import emulate as vertex_emulate
from cloudtrain.specfile import load_spec
from cloudtrain_runtime import callbacks
from cloudtrain_runtime.providers.sagemaker import ENVIRONMENT as SAGEMAKER_REPLICA
from tests.conftest import Result


def _plan_outputs(run_cli: Callable[..., Result], job: Path, provider: str, *run: str) -> dict[str, str]:
    result = run_cli("plan", str(job), "--provider", provider, "--json", *run)
    assert result.code == 0, result.err
    outputs: dict[str, str] = json.loads(result.out)["outputs"]
    return outputs


@pytest.mark.parametrize("provider", ["local", "vertex", "sagemaker"])
def test_plan_json_names_every_output(
    run_cli: Callable[..., Result], example_job: Path, provider: str
) -> None:
    outputs = _plan_outputs(run_cli, example_job, provider)
    assert list(outputs) == list(Outputs.names())
    assert all(outputs.values())


def test_sagemaker_outputs_are_where_the_request_sends_them(
    run_cli: Callable[..., Result], example_job: Path
) -> None:
    request = api.render(example_job, "sagemaker")
    run = {tag["Key"]: tag["Value"] for tag in request["Tags"]}["cloudtrain:run"]
    outputs = _plan_outputs(run_cli, example_job, "sagemaker", "--run-id", run)
    assert f"{outputs['backup']}/".startswith(request["CheckpointConfig"]["S3Uri"])
    assert outputs["tensorboard"] == request["TensorBoardOutputConfig"]["S3OutputPath"]
    assert outputs["model"].startswith(request["OutputDataConfig"]["S3OutputPath"] + "/")
    named = Outputs(**outputs).for_job(request["TrainingJobName"])
    assert named.model == (
        f"{request['OutputDataConfig']['S3OutputPath']}/{request['TrainingJobName']}/output/model.tar.gz"
    )


def test_vertex_outputs_are_under_the_base_output_directory_the_runtime_writes_to(
    run_cli: Callable[..., Result], example_job: Path
) -> None:
    request = api.render(example_job, "vertex")
    run = request["labels"]["cloudtrain_run"]
    outputs = _plan_outputs(run_cli, example_job, "vertex", "--run-id", run)
    base = request["jobSpec"]["baseOutputDirectory"]["outputUriPrefix"]
    assert base.endswith(f"/runs/{run}")
    assert all(outputs[name].startswith(base + "/") for name in ("model", "backup", "tensorboard", "result"))
    # one backup location: the runtime config's, and AIP_CHECKPOINT_DIR, which the runtime prefers
    emulated = vertex_emulate.replicas(request)["replicas"][0]["env"]
    runtime = plan(load_spec(example_job), "vertex").with_run(run).runtime
    assert emulated["AIP_CHECKPOINT_DIR"].rstrip("/") == runtime.backup_dir == outputs["backup"]
    assert emulated["AIP_MODEL_DIR"].rstrip("/") == runtime.export_dir == outputs["model"]


def test_sagemaker_tensorboard_local_path_is_where_the_runtime_writes(example_job: Path) -> None:
    where = SAGEMAKER_REPLICA.locations(plan(load_spec(example_job), "sagemaker").runtime, {}, "/", {})
    assert str(where.tensorboard) == TENSORBOARD_DIR
    assert str(where.backup) == CHECKPOINT_DIR


def test_metric_definitions_read_the_runtimes_epoch_lines(example_job: Path) -> None:
    lines: list[str] = []
    progress = callbacks.Progress(epochs=3, say=lines.append)
    progress.on_epoch_end(
        1, {"loss": 0.25, "binary_accuracy": 0.875, "val_loss": 1e-05, "val_binary_accuracy": 1}
    )
    definitions = metric_definitions(["loss", "val_loss", "binary_accuracy"])
    found = {d["Name"]: re.search(d["Regex"], lines[0]).group(1) for d in definitions}  # type: ignore[union-attr]
    assert found == {"loss": "0.2500", "val_loss": "0.0000", "binary_accuracy": "0.8750"}
    request = api.render(example_job, "sagemaker")
    assert [d["Name"] for d in request["AlgorithmSpecification"]["MetricDefinitions"]] == ["loss", "val_loss"]


@pytest.mark.parametrize(
    ("scheduling", "replicas", "host", "spot"),
    [
        ({}, 1, 5, 0),  # one replica: its restart is the job's
        ({"restartJobOnWorkerRestart": True}, 3, 5, 0),  # what render sets for multi-worker
        ({}, 3, 0, 0),  # a worker restarted alone cannot rejoin MultiWorkerMirroredStrategy
        ({"restartJobOnWorkerRestart": True, "strategy": "SPOT"}, 3, 5, 6),
        ({"disableRetries": True, "strategy": "SPOT"}, 1, 0, 0),
    ],
)
def test_vertex_restarts_come_from_the_request(
    scheduling: dict[str, Any], replicas: int, host: int, spot: int
) -> None:
    found = vertex_emulate.restarts({"scheduling": scheduling}, replicas=replicas)
    assert (found["host"]["limit"], found["spot"]["limit"]) == (host, spot)


@pytest.mark.parametrize(
    ("request_fields", "host", "spot"),
    [
        ({}, 0, 0),  # SageMaker's default: no retry
        ({"RetryStrategy": {"MaximumRetryAttempts": 2}}, 2, 0),
        ({"EnableManagedSpotTraining": True}, 0, sagemaker_emulate.SPOT_RESTARTS),
    ],
)
def test_sagemaker_restarts_come_from_the_request(
    request_fields: dict[str, Any], host: int, spot: int
) -> None:
    found = sagemaker_emulate.restarts(request_fields)
    assert (found["host"]["limit"], found["spot"]["limit"]) == (host, spot)


def test_rendered_emulation_restarts_as_the_rendered_request_says(example_job: Path) -> None:
    spec = load_spec(example_job, ("sagemaker.max_retries=2", "resources.spot=true"))
    planned, _ = api.pack_code(plan(spec, "sagemaker").with_run("r1"))
    request = local.Local(emulate="sagemaker").render(planned)
    assert request["restarts"]["host"] == {"limit": 2, "rule": "RetryStrategy.MaximumRetryAttempts is 2"}
    assert request["restarts"]["spot"]["limit"] == sagemaker_emulate.SPOT_RESTARTS


def test_a_spot_fault_on_a_job_without_spot_is_refused_with_the_rule(example_job: Path) -> None:
    planned, _ = api.pack_code(plan(load_spec(example_job), "sagemaker").with_run("r1"))
    with pytest.raises(
        SpecError,
        match=r"would not resume this job after a spot interruption: the request does not set EnableManagedSpotTraining",
    ):
        local.Local(emulate="sagemaker", fault="spot@epoch:1").render(planned)


def test_a_local_record_from_before_the_history_is_still_read_and_names_no_history() -> None:
    from cloudtrain.providers.local.records import parse_request

    older = {name: "/nowhere" for name in Outputs.required()}
    request = {"replicas": [{"name": "chief-0"}], "outputs": older, "restarts": {}}
    assert Outputs(**parse_request(request)["outputs"]).history == ""
    with pytest.raises(ValueError, match="'outputs' must map model"):
        parse_request({**request, "outputs": {**older, "weights": "/nowhere"}})  # unknown artifact
    with pytest.raises(ValueError, match="'outputs' must map model"):
        parse_request({**request, "outputs": {"history": "/nowhere"}})  # the required ones missing


@pytest.mark.parametrize("provider", ["local", "vertex", "sagemaker"])
def test_the_history_is_beside_the_result(example_job: Path, provider: str) -> None:
    outputs = api.prepare(example_job, provider).outputs
    assert outputs.history.endswith("cloudtrain-history.json")
    assert (
        outputs.history.rsplit("cloudtrain-history.json", 1)[0]
        == outputs.result.rsplit("cloudtrain-result.json", 1)[0]
    )
