"""Tracked runs of the example, end to end: one MLflow run per cloudtrain run, whatever fails.

Real parts only: the example trains on two local hosts (multi-worker TensorFlow on
loopback), a replica kills itself after epoch 1, the provider (or its emulation) restarts
the job, and the same run is submitted again; a real ``mlflow server`` on loopback
(``tests.mlflow_server``) keeps the runs. The MLflow run's metrics must be the run's
history, every epoch once, to the last digit.
"""

from __future__ import annotations

import json
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cloudtrain import api
from cloudtrain.providers import local
from cloudtrain.tracking.closing import ACTUAL_METRIC, JOB_TAG
from cloudtrain.tracking.submitting import ATTEMPT_TAG
from cloudtrain_runtime import history as history_lib
from cloudtrain_runtime.tracking import EPOCH_METRIC, RUN_TAG
from tests.conftest import Result

pytest.importorskip("mlflow", reason="the tracking extra: pip install 'cloudtrain[tracking]'")
from mlflow.tracking import MlflowClient

pytestmark = [pytest.mark.multiprocess, pytest.mark.timeout(900), pytest.mark.usefixtures("private_tmpdir")]


def tracked_run(project: Path, server: str, experiment: str, provider: local.Local, run_id: str) -> Any:
    """Submit the example as ``run_id``, tracked in ``experiment``, and wait for it to end; its handle."""
    overrides = ("tracking.kind=mlflow", f"tracking.uri={server}", f"tracking.experiment={experiment}")
    job = api.submit(api.as_spec(project / "job.yaml", overrides), provider, run_id=run_id)
    job.wait(poll_s=1.0)
    return job


def published_history(uri: str) -> dict[str, Any]:
    """The run's published history: a file, or on SageMaker a member of ``output.tar.gz`` (``archive#member``)."""
    archive, _, member = uri.partition("#")
    if not member:
        return json.loads(Path(uri).read_text())
    with tarfile.open(archive) as packed:
        found = packed.extractfile(member)
        assert found is not None, f"{archive} has no {member}"
        return json.loads(found.read())


# What the killed attempt ends as: the local provider and Vertex restart the job themselves;
# SageMaker fails it (no RetryStrategy asked for), and the retry resumes the run.
KILLED_ENDS = {None: "succeeded", "vertex": "succeeded", "sagemaker": "failed"}


@pytest.mark.parametrize("emulate", [None, "vertex", "sagemaker"])
def test_a_killed_replica_and_a_retry_are_one_mlflow_run(
    project: Path, mlflow_server: str, emulate: str | None
) -> None:
    experiment = f"example-{emulate or 'local'}"
    run_id = f"tracked-{emulate or 'local'}"
    faulty = local.Local(emulate=emulate, fault="worker:0@epoch:1")
    killed = tracked_run(project, mlflow_server, experiment, faulty, run_id)
    retry = tracked_run(project, mlflow_server, experiment, local.Local(emulate=emulate), run_id)
    for job, state in ((killed, KILLED_ENDS[emulate]), (retry, "succeeded")):
        assert job.status().state == state, "\n".join(list(job.logs())[-40:])
    history = published_history(retry.outputs.history)

    client = MlflowClient(mlflow_server)
    runs = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    assert len(runs) == 1 and runs[0].data.tags[RUN_TAG] == run_id
    run = runs[0]
    assert sorted(tag for tag in run.data.tags if tag.startswith(ATTEMPT_TAG)) == [
        f"{ATTEMPT_TAG}1",
        f"{ATTEMPT_TAG}2",
    ]
    assert [record["epoch"] for record in history["epochs"]] == [1, 2, 3] and len(history["attempts"]) >= 2
    for name, values in history_lib.curves(history).items():
        logged = sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, name))
        assert logged == list(enumerate(values, start=1)), name  # once each, bit-equal
    assert [m.step for m in client.get_metric_history(run.info.run_id, EPOCH_METRIC)] == [1, 2, 3]
    assert run.info.status == "FINISHED" and run.data.params["spec.name"] == "binary-classifier"
    assert run.data.params["plan.global_batch"] == "32"


# MLflow 3.18's SQL store declares a relationship with ``noload``, which SQLAlchemy 2.1 deprecates: the store's.
@pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy is deprecated")
def test_the_blocking_local_submit_closes_its_mlflow_run(
    project: Path, tmp_path: Path, run_cli: Callable[..., Result]
) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    # A SQLite store's artifacts go where its experiment says: made here, not in ./mlruns of the suite.
    MlflowClient(uri).create_experiment("binary-classifier", artifact_location=str(tmp_path / "artifacts"))
    job = "--provider", "local", "--tracking", uri, "--run-id", "blocking", "--set", "resources.hosts=1"
    submitted = run_cli("submit", str(project / "job.yaml"), *job)
    assert submitted.code == 0, submitted.err

    client = MlflowClient(uri)
    [run] = client.search_runs([client.get_experiment_by_name("binary-classifier").experiment_id])
    [closed] = [json.loads(v) for k, v in run.data.tags.items() if k.startswith(JOB_TAG)]
    assert (closed["id"], closed["state"], closed["actual_usd"]) == (submitted.out.strip(), "succeeded", None)
    assert run.info.status == "FINISHED" and ACTUAL_METRIC not in run.data.metrics  # nothing billed here
