"""Tracked runs of the example, end to end: one MLflow run per cloudtrain run, whatever fails.

Real parts only: the example trains on two local hosts (multi-worker TensorFlow on
loopback), a replica kills itself after epoch 1, the provider (or its emulation) restarts
the job, and the same run is submitted again; a real ``mlflow server`` on loopback
(``tests.mlflow_server``) keeps the runs. The MLflow run's metrics must be the run's
history, every epoch once, to the last digit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cloudtrain import api
from cloudtrain.providers import local
from cloudtrain.tracking.submitting import ATTEMPT_TAG
from cloudtrain_runtime import history as history_lib
from cloudtrain_runtime.tracking import EPOCH_METRIC, RUN_TAG

pytest.importorskip("mlflow", reason="the tracking extra: pip install 'cloudtrain[tracking]'")
from mlflow.tracking import MlflowClient

pytestmark = [pytest.mark.multiprocess, pytest.mark.timeout(900), pytest.mark.usefixtures("private_tmpdir")]


def tracked_run(project: Path, server: str, experiment: str, provider: local.Local, run_id: str) -> dict:
    """Submit the example as ``run_id``, tracked in ``experiment``; wait for it; return its history."""
    overrides = ("tracking.kind=mlflow", f"tracking.uri={server}", f"tracking.experiment={experiment}")
    job = api.submit(api.as_spec(project / "job.yaml", overrides), provider, run_id=run_id)
    assert job.wait(poll_s=1.0).state == "succeeded", "\n".join(list(job.logs())[-40:])
    return json.loads(Path(job.outputs.history).read_text())


@pytest.mark.parametrize("emulate", [None, "vertex", "sagemaker"])
def test_a_killed_replica_and_a_retry_are_one_mlflow_run(
    project: Path, mlflow_server: str, emulate: str | None
) -> None:
    experiment = f"example-{emulate or 'local'}"
    run_id = f"tracked-{emulate or 'local'}"
    tracked_run(
        project, mlflow_server, experiment, local.Local(emulate=emulate, fault="worker:0@epoch:1"), run_id
    )
    history = tracked_run(
        project, mlflow_server, experiment, local.Local(emulate=emulate), run_id
    )  # the retry

    client = MlflowClient(mlflow_server)
    runs = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    assert len(runs) == 1 and runs[0].data.tags[RUN_TAG] == run_id
    run = runs[0]
    assert sorted(tag for tag in run.data.tags if tag.startswith(ATTEMPT_TAG)) == [
        f"{ATTEMPT_TAG}1",
        f"{ATTEMPT_TAG}2",
    ]
    assert len(history["attempts"]) >= 2  # the restart after the kill
    for name, values in history_lib.curves(history).items():
        logged = sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, name))
        assert logged == list(enumerate(values, start=1)), name  # once each, bit-equal
    assert [m.step for m in client.get_metric_history(run.info.run_id, EPOCH_METRIC)] == [1, 2, 3]
    assert run.info.status == "FINISHED" and run.data.params["spec.name"] == "binary-classifier"
    assert run.data.params["plan.global_batch"] == "32"
