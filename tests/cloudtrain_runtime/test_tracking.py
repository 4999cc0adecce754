"""The chief's MLflow run: one per cloudtrain run, every epoch once, bit-equal to the history.

Against real MLflow stores: a SQLite file through the client, and a real ``mlflow server``
on loopback (``tests.mlflow_server``) for multi-process runs with a killed chief.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cloudtrain_runtime import history as history_lib
from cloudtrain_runtime.errors import Reclaimed
from cloudtrain_runtime.tracking import EPOCH_METRIC, MAX_FAILURES, RUN_ID_ENV, RUN_TAG, Tracker
from tests.cloudtrain_runtime.harness import free_ports, launch, runtime_config

# MLflow 3.18's SQL store declares a relationship with ``noload``, which SQLAlchemy 2.1
# deprecates (a warning, an error under this suite's filterwarnings): the store's, not ours.
pytestmark = pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy is deprecated")

RECLAIMED = Reclaimed.exit_code

mlflow = pytest.importorskip("mlflow", reason="the tracking extra: pip install 'cloudtrain[tracking]'")
from mlflow.tracking import MlflowClient  # noqa: E402


def history_of(epochs: list[tuple[int, dict[str, float]]], *, resumed_from: int = 0) -> dict[str, Any]:
    """A run's history whose one attempt resumed after ``resumed_from`` and trained ``epochs``."""
    found = history_lib.new("run-1", started_at=1000.0, epochs=4)
    found = history_lib.begin_attempt(
        found, job="job", started_at=1000.0, resumed_from=resumed_from, replicas=2, global_batch=8
    )
    for epoch, metrics in epochs:
        found = history_lib.record_epoch(
            found, epoch=epoch, metrics=metrics, now=1000.0 + epoch, epoch_s=1, steps=2
        )
    return found


def tracker(uri: str, env: dict[str, str] | None = None, said: list[str] | None = None) -> Tracker:
    lines = said if said is not None else []
    return Tracker(
        uri=uri,
        experiment="exp",
        run="run-1",
        tags={"team": "a"},
        env=env or {},
        say=lines.append,
        interval_s=0,
    )


def steps(client: MlflowClient, run_id: str, key: str) -> list[tuple[int, float]]:
    return sorted((m.step, m.value) for m in client.get_metric_history(run_id, key))


def test_the_runtime_imports_no_mlflow_until_a_tracked_run_asks() -> None:
    code = "import sys, cloudtrain_runtime.main, cloudtrain_runtime.session; print('mlflow' in sys.modules)"
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "False"


def test_a_retry_continues_the_run_and_logs_each_epoch_once(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    first = tracker(uri)
    first.sync(history_of([(1, {"loss": 0.1 + 0.2}), (2, {"loss": 1 / 3})]))
    first.drain()
    retry = tracker(uri)  # a new attempt: a new process, same cloudtrain run
    retry.sync(history_of([(1, {"loss": 0.1 + 0.2}), (2, {"loss": 1 / 3}), (3, {"loss": 2 / 7})]))
    retry.sync(history_of([(1, {"loss": 0.1 + 0.2}), (2, {"loss": 1 / 3}), (3, {"loss": 2 / 7})]))
    retry.drain()

    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("exp").experiment_id])
    assert [run.info.run_id for run in runs] == [first.run_id] == [retry.run_id]
    assert runs[0].data.tags[RUN_TAG] == "run-1" and runs[0].data.tags["team"] == "a"
    assert steps(client, first.run_id, "loss") == [(1, 0.1 + 0.2), (2, 1 / 3), (3, 2 / 7)]  # bit-equal
    assert steps(client, first.run_id, EPOCH_METRIC) == [(1, 1.0), (2, 2.0), (3, 3.0)]


def test_the_run_named_by_the_submitting_side_is_used(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment(
        "exp", artifact_location=str(tmp_path / "artifacts")
    )  # not ./mlruns
    made = client.create_run(experiment, tags={RUN_TAG: "run-1"}).info.run_id
    named = tracker(uri, env={RUN_ID_ENV: made})
    named.sync(history_of([(1, {"loss": 0.5})]))
    result = {"export": str(tmp_path / "model"), "throughput": {"examples_per_sec": 9.5}}
    named.finish(history_of([(1, {"loss": 0.5})]), result)
    run = client.get_run(made)
    assert run.data.metrics == {"loss": 0.5, EPOCH_METRIC: 1.0, "examples_per_sec": 9.5}
    assert (run.info.status, run.data.tags["cloudtrain.model_uri"]) == ("FINISHED", str(tmp_path / "model"))
    assert client.download_artifacts(made, "cloudtrain-result.json", str(tmp_path))


def test_short_epochs_go_together_at_most_once_an_interval(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    clock = [100.0]
    paced = Tracker(
        uri=uri, experiment="exp", run="run-1", tags={}, env={}, say=print, clock=lambda: clock[0]
    )
    epochs = [(epoch, {"loss": 1 / epoch}) for epoch in range(1, 5)]
    paced.sync(history_of(epochs[:1]))  # the first send goes at once
    clock[0] += paced.interval_s / 2
    paced.sync(history_of(epochs[:2]))  # too soon: waits in the history
    paced.drain()
    client = MlflowClient(uri)
    assert steps(client, paced.run_id, "loss") == [(1, 1.0)]
    paced.sync(history_of(epochs[:3]), now=True)  # the end of fit sends what waits
    clock[0] += paced.interval_s
    paced.sync(history_of(epochs))
    paced.drain()
    assert steps(client, paced.run_id, "loss") == [(e, m["loss"]) for e, m in epochs]


def test_a_catch_up_past_mlflows_batch_limit_goes_in_whole_epochs(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    wide = {f"m{index}": index / 7 for index in range(600)}  # 601 metrics an epoch: one epoch a call
    many = tracker(uri)
    many.sync(history_of([(epoch, wide) for epoch in (1, 2, 3)]))
    many.drain()
    client = MlflowClient(uri)
    assert steps(client, many.run_id, "m599") == [(1, 599 / 7), (2, 599 / 7), (3, 599 / 7)]
    assert steps(client, many.run_id, EPOCH_METRIC) == [(1, 1.0), (2, 2.0), (3, 3.0)]


def test_a_failed_attempt_marks_the_run_failed_until_the_next_one(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    failed = tracker(uri)
    failed.fail(history_of([(1, {"loss": 0.5})]))
    client = MlflowClient(uri)
    assert client.get_run(failed.run_id).info.status == "FAILED"
    retry = tracker(uri)
    retry.sync(history_of([(1, {"loss": 0.5}), (2, {"loss": 0.25})]))
    retry.drain()
    assert (retry.run_id, client.get_run(retry.run_id).info.status) == (failed.run_id, "RUNNING")
    assert steps(client, retry.run_id, "loss") == [(1, 0.5), (2, 0.25)]


def test_an_unreachable_server_warns_once_and_gives_up_without_failing() -> None:
    said: list[str] = []
    closed = f"http://127.0.0.1:{free_ports(1)[0]}"
    env = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "2"}
    gone = tracker(closed, env=env, said=said)
    for epoch in range(1, MAX_FAILURES + 3):
        gone.sync(history_of([(e, {"loss": 1.0}) for e in range(1, epoch + 1)]))
    gone.drain()
    assert gone.stopped and gone.failures == MAX_FAILURES
    assert len(said) == 1 and said[0].startswith(f"Warning: MLflow at {closed} failed")


@pytest.mark.multiprocess
def test_the_chief_of_an_attempt_that_fails_marks_its_mlflow_run_failed(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    config = runtime_config(
        tmp_path,
        module="no_such_trainer",
        replicas=1,
        hosts=1,
        run_id="broken",
        tracking_uri=uri,
        tracking_experiment="exp",
    )
    assert not launch(1, config, tmp_path).ok
    client = MlflowClient(uri)
    [run] = client.search_runs([client.get_experiment_by_name("exp").experiment_id])
    assert (run.data.tags[RUN_TAG], run.info.status) == ("broken", "FAILED")


@pytest.mark.multiprocess
def test_two_hosts_with_a_killed_chief_make_one_mlflow_run(tmp_path: Path, mlflow_server: str) -> None:
    config = runtime_config(
        tmp_path, epochs=3, run_id="two-hosts", tracking_uri=mlflow_server, tracking_experiment="runtime-test"
    )
    killed = launch(2, config, tmp_path, env={"CLOUDTRAIN_FAULT": "worker:0@epoch:1"})
    resumed = launch(2, config, tmp_path)
    assert not killed.ok and resumed.ok, resumed.explain()

    client = MlflowClient(mlflow_server)
    runs = client.search_runs([client.get_experiment_by_name("runtime-test").experiment_id])
    assert len(runs) == 1 and runs[0].data.tags[RUN_TAG] == "two-hosts"
    history = json.loads((tmp_path / "out" / "cloudtrain-history.json").read_text())
    assert [record["attempt"] for record in history["epochs"]] == [1, 2, 2]
    run_id = runs[0].info.run_id
    for name, values in history_lib.curves(history).items():
        assert steps(client, run_id, name) == list(enumerate(values, start=1)), (
            name
        )  # once each, to the last digit
    assert runs[0].info.status == "FINISHED"
    assert runs[0].data.tags["cloudtrain.model_uri"] == resumed.result["export"]


@pytest.mark.multiprocess
def test_a_reclaimed_attempt_leaves_its_mlflow_run_running_for_the_next(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    config = runtime_config(
        tmp_path,
        module="noticed",
        replicas=1,
        hosts=1,
        run_id="reclaimed",
        tracking_uri=uri,
        tracking_experiment="exp",
    )
    client = MlflowClient(uri)
    # A SQLite store's artifacts go where its experiment says: made here, not in ./mlruns of the trainers.
    client.create_experiment("exp", artifact_location=str(tmp_path / "artifacts"))
    notice = {"CLOUDTRAIN_FAULT": "preempt@step:7", "CLOUDTRAIN_GRACE_S": "60"}  # SIGTERM mid-epoch 1
    reclaimed = launch(1, config, tmp_path, env=notice)
    assert reclaimed.returncodes == [RECLAIMED], reclaimed.explain()
    [run] = client.search_runs([client.get_experiment_by_name("exp").experiment_id])
    assert run.info.status == "RUNNING"  # not FAILED: the run goes on

    resumed = launch(1, config, tmp_path)
    assert resumed.ok, resumed.explain()
    history = json.loads((tmp_path / "out" / "cloudtrain-history.json").read_text())
    assert [record["attempt"] for record in history["epochs"]] == [1, 2, 2]
    assert client.get_run(run.info.run_id).info.status == "FINISHED"
    for name, values in history_lib.curves(history).items():
        assert steps(client, run.info.run_id, name) == list(enumerate(values, start=1)), name
