"""A sweep's trial logs to an MLflow run of its own, nested under the sweep's, whatever the provider.

The trials of a Vertex AI or SageMaker sweep share the tuning job's configuration, the
sweep's run id included; only the environment each provider gives a trial tells them
apart. These tests give the runtime that environment as each provider sets it, and log
to a real SQLite MLflow store.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cloudtrain_runtime import environments
from cloudtrain_runtime import history as history_lib
from cloudtrain_runtime.environments import TRIAL_RUN_ENV, TrialRun, trial_of
from cloudtrain_runtime.tracking import PARENT_ENV, PARENT_TAG, RUN_TAG, TRIAL_TAG, Tracker, tag_filter
from tests.cloudtrain_runtime.harness import Run, launch, launch_sagemaker, runtime_config

pytestmark = pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy is deprecated")

mlflow = pytest.importorskip("mlflow", reason="the tracking extra: pip install 'cloudtrain[tracking]'")
from mlflow.tracking import MlflowClient  # noqa: E402

# Vertex AI: CLUSTER_SPEC on every replica (training/distributed-training) and the trial's id as
# CLOUD_ML_TRIAL_ID, which cloudml-hypertune 0.1.0.dev6 (hypertune/hypertune.py) reads.
VERTEX_TRIAL = {"CLUSTER_SPEC": "{}", "CLOUD_ML_TRIAL_ID": "4"}
# SageMaker: resourceconfig.json, and the trial's training job's name as TRAINING_JOB_NAME (dev
# guide, your-algorithms-training-algo-running-container.html). The tuning job's name is its
# prefix (CreateHyperParameterTuningJob.HyperParameterTuningJobName); the rest is SageMaker's.
SAGEMAKER_JOB = "churn-sweep-3f2a9c-002-7d1e0b4a"
SAGEMAKER_TRIAL = {"TRAINING_JOB_NAME": SAGEMAKER_JOB, "TRAINING_JOB_ARN": "arn:aws:sagemaker:::x"}


def sagemaker_root(tmp_path: Path) -> str:
    config = tmp_path / "opt" / "ml" / "input" / "config"
    config.mkdir(parents=True)
    (config / "resourceconfig.json").write_text(json.dumps({"current_host": "algo-1", "hosts": ["algo-1"]}))
    return str(tmp_path)


def test_a_vertex_trial_is_the_sweeps_run_with_its_trial_id() -> None:
    provider = environments.detect(VERTEX_TRIAL, "/").provider
    assert provider == "vertex"
    assert trial_of("sweep-1", VERTEX_TRIAL, provider) == TrialRun("sweep-1-t4", "4")


def test_a_sagemaker_trial_is_the_sweeps_run_with_its_training_jobs_name(tmp_path: Path) -> None:
    provider = environments.detect(SAGEMAKER_TRIAL, sagemaker_root(tmp_path)).provider
    assert provider == "sagemaker"
    assert trial_of("sweep-1", SAGEMAKER_TRIAL, provider) == TrialRun(
        f"sweep-1-t{SAGEMAKER_JOB}", SAGEMAKER_JOB
    )


@pytest.mark.parametrize(
    ("env", "provider"),
    [
        ({TRIAL_RUN_ENV: "sweep-1-t2", "TF_CONFIG": "{}"}, "tf_config"),  # the local driver named the run
        ({TRIAL_RUN_ENV: "sweep-1-t2", **VERTEX_TRIAL}, "vertex"),  # a local trial emulating Vertex
    ],
)
def test_a_trial_whose_run_the_launcher_named_keeps_it(env: dict[str, str], provider: str) -> None:
    assert trial_of("sweep-1-t2", env, provider) == TrialRun("sweep-1-t2", "sweep-1-t2")


@pytest.mark.parametrize("provider", ["tf_config", "bare", "vertex", "sagemaker"])
def test_nothing_names_a_trial_where_the_provider_set_no_id(provider: str) -> None:
    assert trial_of("sweep-1", {}, provider) is None


def history(loss: float) -> dict[str, Any]:
    found = history_lib.new("sweep-1", started_at=1000.0, epochs=1)
    found = history_lib.begin_attempt(
        found, job="job", started_at=1000.0, resumed_from=0, replicas=1, global_batch=8
    )
    return history_lib.record_epoch(found, epoch=1, metrics={"loss": loss}, now=1001.0, epoch_s=1, steps=2)


def trial_tracker(uri: str, env: dict[str, str], values: dict[str, object]) -> Tracker:
    found = trial_of("sweep-1", env, "vertex")
    assert found is not None
    return Tracker(
        uri=uri,
        experiment="exp",
        run=found.run,
        tags={},
        trial=found.trial,
        values=values,
        env=dict(env),
        say=lambda line: None,
        interval_s=0,
    )


def test_two_vertex_trials_of_one_sweep_log_to_two_runs_under_its_run(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("exp", artifact_location=str(tmp_path / "artifacts"))
    parent = client.create_run(experiment, tags={RUN_TAG: "sweep-1"}).info.run_id
    for trial, loss in (("1", 0.5), ("2", 0.25)):
        env = {**VERTEX_TRIAL, "CLOUD_ML_TRIAL_ID": trial, PARENT_ENV: parent}
        tracker = trial_tracker(uri, env, {"units": int(trial) * 8, "learning_rate": 0.01})
        tracker.sync(history(loss))
        tracker.drain()

    children = client.search_runs([experiment], filter_string=f"tags.`{PARENT_TAG}` = '{parent}'")
    found = {run.data.tags[TRIAL_TAG]: run for run in children}
    assert sorted(found) == ["1", "2"]
    assert {trial: run.data.tags[RUN_TAG] for trial, run in found.items()} == {
        "1": "sweep-1-t1",
        "2": "sweep-1-t2",
    }
    assert {trial: run.data.params for trial, run in found.items()} == {
        "1": {"units": "8", "learning_rate": "0.01"},
        "2": {"units": "16", "learning_rate": "0.01"},
    }
    assert {trial: run.data.metrics["loss"] for trial, run in found.items()} == {"1": 0.5, "2": 0.25}
    assert client.get_run(parent).data.metrics == {}  # the sweep's run gets no trial's epochs


def test_a_trial_without_the_sweeps_run_is_its_own_run_unnested(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    MlflowClient(uri).create_experiment("exp", artifact_location=str(tmp_path / "artifacts"))
    tracker = trial_tracker(uri, VERTEX_TRIAL, {"units": 8})
    tracker.sync(history(0.5))
    tracker.drain()
    run = MlflowClient(uri).get_run(tracker.run_id)
    assert run.data.tags[TRIAL_TAG] == "4" and PARENT_TAG not in run.data.tags


def test_a_trial_id_with_quotes_finds_its_own_run_again_on_each_side(tmp_path: Path) -> None:
    """MLflow's search grammar is quoted around whatever the environment names, chief and SDK alike."""
    from cloudtrain.tracking import store

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("exp", artifact_location=str(tmp_path / "artifacts"))
    parent = client.create_run(experiment, tags={RUN_TAG: "sweep-1"})
    trial = "it's\\4"
    env = {**VERTEX_TRIAL, "CLOUD_ML_TRIAL_ID": trial, PARENT_ENV: parent.info.run_id}
    runs = []
    for loss in (0.5, 0.25):  # a first attempt of the trial, then its retry
        tracker = trial_tracker(uri, env, {"units": 8})
        tracker.sync(history(loss))
        tracker.drain()
        assert tracker.failures == 0
        runs.append(tracker.run_id)

    assert runs[0] == runs[1]
    assert store.trial_run(client, parent, trial).info.run_id == runs[0]


def test_a_trial_id_no_mlflow_search_can_name_is_refused_not_mismatched() -> None:
    with pytest.raises(ValueError, match="both"):
        tag_filter(TRIAL_TAG, 'it\'s "4"')


def trial_config(root: Path, uri: str, units: int) -> dict[str, Any]:
    """One trial's runtime config as a cloud's tuning job gives it: the sweep's run id, the trial's values."""
    return runtime_config(
        root,
        replicas=1,
        hosts=1,
        epochs=2,
        run_id="sweep-1",
        tuned={"units": "int"},
        hparams={"units": units},
        tracking_uri=uri,
        tracking_experiment="exp",
    )


def children_match_their_histories(client: MlflowClient, parent: str, runs: dict[str, Run]) -> None:
    """One run per trial under ``parent``, each with the trial's values and its history's every epoch."""
    experiment = client.get_experiment_by_name("exp").experiment_id
    found = {
        run.data.tags[TRIAL_TAG]: run for run in client.search_runs([experiment]) if run.info.run_id != parent
    }
    assert sorted(found) == sorted(runs)  # one run per trial, none shared
    for trial, done in runs.items():
        assert done.ok, done.explain()
        child = found[trial]
        assert child.data.tags[PARENT_TAG] == parent and child.data.tags[RUN_TAG] == f"sweep-1-t{trial}"
        assert child.info.status == "FINISHED" and "units" in child.data.params
        history = json.loads((done.results_dir / "cloudtrain-history.json").read_text())
        for name, values in history_lib.curves(history).items():
            logged = sorted((m.step, m.value) for m in client.get_metric_history(child.info.run_id, name))
            assert logged == list(enumerate(values, start=1)), name


def sweeps_run(uri: str, tmp_path: Path) -> str:
    client = MlflowClient(uri)
    experiment = client.create_experiment("exp", artifact_location=str(tmp_path / "artifacts"))
    return str(client.create_run(experiment, tags={RUN_TAG: "sweep-1"}).info.run_id)


@pytest.mark.multiprocess
def test_each_vertex_trials_chief_logs_its_own_run_under_the_sweeps(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    parent = sweeps_run(uri, tmp_path)
    runs = {
        trial: launch(
            1,
            trial_config(tmp_path / trial, uri, units),
            tmp_path / trial,
            env={**VERTEX_TRIAL, "CLOUD_ML_TRIAL_ID": trial, PARENT_ENV: parent},
        )
        for trial, units in (("1", 4), ("2", 8))
    }
    children_match_their_histories(MlflowClient(uri), parent, runs)


@pytest.mark.multiprocess
def test_each_sagemaker_trials_chief_logs_its_own_run_under_the_sweeps(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    parent = sweeps_run(uri, tmp_path)
    jobs = {"churn-sweep-001-7d1e0b4a": 4, "churn-sweep-002-3c9f0e21": 8}
    runs = {
        job: launch_sagemaker(
            1,
            trial_config(tmp_path / job, uri, units),
            tmp_path / job,
            env={**SAGEMAKER_TRIAL, "TRAINING_JOB_NAME": job, PARENT_ENV: parent},
        )
        for job, units in jobs.items()
    }
    children_match_their_histories(MlflowClient(uri), parent, runs)
