"""A tracked sweep's request hands every trial the sweep's MLflow run, on each cloud that runs sweeps.

The sweep's run is made in a real SQLite store by the submit's ``tracked()``; the request
rendered again with its id is checked as the provider would: Vertex AI's parsed strictly
into ``aiplatform_v1.HyperparameterTuningJob``, SageMaker's against botocore's model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cloudtrain import api
from cloudtrain.sweep.submit import SweepSubmission
from cloudtrain.tracking.submitting import SWEEP_TAG
from cloudtrain_runtime.tracking import PARENT_ENV, RUN_ID_ENV, RUN_TAG
from tests.cloudtrain.providers.fakes import sagemaker_model
from tests.cloudtrain.providers.vertex.test_sweep import parse

pytest.importorskip("mlflow", reason="the tracking extra: pip install 'cloudtrain[tracking]'")
from mlflow.tracking import MlflowClient

# MLflow 3.18's SQL store declares a relationship with ``noload``, which SQLAlchemy 2.1 deprecates: the store's.
pytestmark = pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy is deprecated")

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "tuning" / "job.yaml"
IMAGE = "image=123456789012.dkr.ecr.us-east-1.amazonaws.com/cloudtrain-cpu:1"
EXPERIMENT = "sweeps"


def sweep(provider: str, uri: str, *overrides: str) -> SweepSubmission:
    tracking = ("tracking.kind=mlflow", f"tracking.uri={uri}", f"tracking.experiment={EXPERIMENT}")
    found = api.prepare(api.as_spec(EXAMPLE, (*tracking, *overrides)), provider, run_id="swept")
    assert isinstance(found, SweepSubmission)
    return found


def store(tmp_path: Path) -> str:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    MlflowClient(uri).create_experiment(
        EXPERIMENT, artifact_location=str(tmp_path / "artifacts")
    )  # not ./mlruns
    return uri


def sweeps_run(uri: str) -> Any:
    client = MlflowClient(uri)
    [run] = client.search_runs([client.get_experiment_by_name(EXPERIMENT).experiment_id])
    assert run.data.tags[RUN_TAG] == "swept" and SWEEP_TAG in run.data.tags
    return run


def vertex_env(body: dict[str, Any]) -> list[dict[str, str]]:
    return [
        entry for pool in body["trialJobSpec"]["workerPoolSpecs"] for entry in pool["containerSpec"]["env"]
    ]


def test_every_vertex_trial_gets_the_sweeps_run_in_a_request_that_parses(tmp_path: Path) -> None:
    uri = store(tmp_path)
    plan, body = sweep("vertex", uri, "resources.hosts=2").tracked()
    parse(body)  # strictly, as aiplatform_v1.HyperparameterTuningJob
    parent = sweeps_run(uri).info.run_id
    env = vertex_env(body)
    assert [entry["value"] for entry in env if entry["name"] == PARENT_ENV] == [
        parent,
        parent,
    ]  # chief, worker
    assert RUN_ID_ENV not in {entry["name"] for entry in env}  # a trial logs to its own run, not the sweep's
    assert plan.env == {PARENT_ENV: parent}


def test_every_sagemaker_trial_gets_the_sweeps_run_in_a_request_botocore_takes(tmp_path: Path) -> None:
    uri = store(tmp_path)
    _, body = sweep("sagemaker", uri, IMAGE).tracked()
    assert sagemaker_model.problems("CreateHyperParameterTuningJob", body) == []
    environment = body["TrainingJobDefinition"]["Environment"]
    assert environment[PARENT_ENV] == sweeps_run(uri).info.run_id and RUN_ID_ENV not in environment


def test_a_second_submit_of_the_sweep_finds_its_run_and_renders_the_same_request(tmp_path: Path) -> None:
    uri = store(tmp_path)
    _, first = sweep("sagemaker", uri, IMAGE).tracked()
    _, again = sweep("sagemaker", uri, IMAGE).tracked()
    assert again == first  # the same tuning job name: the resubmit attaches
    assert sweeps_run(uri).data.params["spec.name"] == "tuning-example"


def test_a_store_out_of_reach_leaves_the_request_as_rendered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    submission = sweep("sagemaker", "http://127.0.0.1:9", IMAGE)  # the discard port: nothing answers
    assert submission.tracked() == (submission.plan, submission.request)
