"""A tracked sweep in MLflow: one run for the sweep, and one run per trial nested under it.

The tuning example's sweep of 2 trials, 2 at a time, submitted by the real CLI to the local
provider (and emulating SageMaker, whose every job has a TRAINING_JOB_NAME), tracked in a
real ``mlflow server`` on loopback (``tests.mlflow_server``): the submit makes the sweep's
run, each trial's chief logs its own, and the blocking submit sees the sweep end, closing
the sweep's run and tagging its best trial.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from cloudtrain.providers import local
from cloudtrain.tracking.closing import BEST_TAG
from cloudtrain.tracking.submitting import SWEEP_TAG
from cloudtrain_runtime import history as history_lib
from cloudtrain_runtime.tracking import EPOCH_METRIC, PARENT_TAG, RUN_TAG, TRIAL_TAG
from tests.cloudtrain.providers.test_tracking_runs import published_history
from tests.conftest import Result

pytest.importorskip("mlflow", reason="the tracking extra: pip install 'cloudtrain[tracking]'")
from mlflow.tracking import MlflowClient

pytestmark = [pytest.mark.multiprocess, pytest.mark.timeout(900), pytest.mark.usefixtures("private_tmpdir")]


@pytest.mark.parametrize("emulate", [None, "sagemaker"])
def test_a_tracked_local_sweep_is_one_run_with_one_nested_run_per_trial(
    tuning_project: Path, mlflow_server: str, run_cli: Callable[..., Result], emulate: str | None
) -> None:
    experiment = f"sweep-{emulate or 'local'}"
    tracking = ("tracking.kind=mlflow", f"tracking.uri={mlflow_server}", f"tracking.experiment={experiment}")
    settings = (*tracking, "tuning.max_trials=2", "tuning.parallel_trials=2")
    sets = [word for setting in settings for word in ("--set", setting)]
    emulated = ["--emulate", emulate] if emulate else []
    done = run_cli("submit", str(tuning_project / "job.yaml"), "--run-id", "swept", *emulated, *sets)
    assert done.code == 0, done.err
    sweep = local.provider.attach(done.out.strip())
    trials = sweep.trials()
    assert [trial.state for trial in trials] == ["succeeded", "succeeded"]

    client = MlflowClient(mlflow_server)
    runs = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    [parent] = [run for run in runs if run.data.tags[RUN_TAG] == "swept"]
    children = {run.data.tags.get(TRIAL_TAG): run for run in runs if run is not parent}
    assert len(runs) == 3 and sorted(children) == sorted(trial.id for trial in trials)  # no run shared
    assert json.loads(parent.data.tags[SWEEP_TAG])["metric"] == "val_binary_accuracy"
    assert parent.data.params["spec.name"] == "tuning-example" and parent.info.status == "FINISHED"
    assert EPOCH_METRIC not in parent.data.metrics  # no trial logged into the sweep's run

    for trial in trials:
        child = children[trial.id]
        assert child.data.tags[PARENT_TAG] == parent.info.run_id and child.data.tags[RUN_TAG] == trial.id
        assert child.data.params == {name: str(value) for name, value in trial.values.items()}
        assert child.info.status == "FINISHED"
        assert trial.job is not None
        history = published_history(local.provider.attach(trial.job).outputs.history)
        for name, values in history_lib.curves(history).items():
            logged = sorted((m.step, m.value) for m in client.get_metric_history(child.info.run_id, name))
            assert logged == list(enumerate(values, start=1)), name  # this trial's epochs, bit-equal

    best = sweep.best()
    assert best is not None
    assert json.loads(parent.data.tags[BEST_TAG])["id"] == best.id
    assert [trial for trial, run in children.items() if BEST_TAG in run.data.tags] == [best.id]
