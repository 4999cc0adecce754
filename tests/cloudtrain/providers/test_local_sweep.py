"""The tuning example end to end on this machine: Optuna asks, each trial trains as a local run.

One sweep of 2 trials of 2 epochs, 2 at a time, through the CLI: the trials table and the
best trial are printed, each trial wrote under its own ``runs/<sweep run>-t<N>`` prefix,
its width reached ``build_model`` through ``config.hparams`` (the exported kernel has that
many units), and the sweep's ``outputs.model`` is the best trial's export.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cloudtrain.providers import local

pytestmark = [pytest.mark.multiprocess, pytest.mark.timeout(600)]
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "tuning"


def cloudtrain(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cloudtrain", *args], capture_output=True, text=True, check=False
    )


def test_the_tuning_example_runs_its_trials_here_and_keeps_the_best(tuning_project: Path) -> None:
    job = str(tuning_project / "job.yaml")
    done = cloudtrain("submit", job, "--set", "tuning.max_trials=2", "--set", "tuning.parallel_trials=2")
    assert done.returncode == 0, done.stdout + done.stderr
    sweep_id = (
        done.stdout.strip()
    )  # piped: stdout holds the id alone, the log and the trials table go to stderr
    assert sweep_id.startswith("local-sweep:tuning-example-")
    assert "trial 1 started" in done.stderr and "trial 2 epoch 2 val_binary_accuracy=" in done.stderr
    assert "Best: trial " in done.stderr

    status = json.loads(cloudtrain("status", sweep_id, "--json").stdout)
    assert status["state"] == "succeeded"
    trials, best = status["trials"], status["best"]
    assert [t["state"] for t in trials] == ["succeeded", "succeeded"]
    assert best["objective"] == max(t["objective"] for t in trials)
    assert all(t["epochs"] == 2 for t in trials)

    runs = tuning_project / "outputs" / "runs"
    assert sorted(p.name for p in runs.iterdir()) == sorted(t["id"] for t in trials)
    for trial in trials:
        assert trial["id"].endswith(f"-t{trial['number']}")
        assert trial["model"] == str(runs / trial["id"] / "model")
        kernel = _hidden_kernel_shape(Path(trial["model"]))
        assert kernel == [8, trial["values"]["width"]]  # config.hparams["width"] built the layer

    handle = local.provider.attach(sweep_id)
    assert handle.outputs.model == best["model"]  # the sweep's model is the best trial's


def _hidden_kernel_shape(model: Path) -> list[int]:
    import tensorflow as tf

    # The export's variables by position: the hidden kernel, [features, width], comes first.
    variables = dict(tf.train.list_variables(str(model / "variables" / "variables")))
    return list(variables["variables/0/.ATTRIBUTES/VARIABLE_VALUE"])


def test_an_emulated_vertex_sweep_runs_each_trial_as_the_custom_job_vertex_would(
    tuning_project: Path,
) -> None:
    """--emulate vertex: each trial is the Vertex CustomJob of its plan, run here with Vertex's environment."""
    job = str(tuning_project / "job.yaml")
    done = cloudtrain(
        "submit",
        job,
        "--emulate",
        "vertex",
        "--set",
        "tuning.max_trials=1",
        "--set",
        "tuning.parallel_trials=1",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    sweep_id = done.stdout.splitlines()[0]
    [trial] = json.loads(cloudtrain("status", sweep_id, "--json").stdout)["trials"]
    assert trial["state"] == "succeeded" and trial["epochs"] == 2
    # Under the stand-in bucket of the Vertex storage root, in the trial's own prefix.
    assert trial["model"].endswith(f"/gcs/my-bucket/tuning-example/runs/{trial['id']}/model")
    assert (Path(trial["model"]) / "saved_model.pb").is_file()


def test_cancel_stops_the_search_and_every_running_trial(tuning_project: Path) -> None:
    done = cloudtrain("submit", str(tuning_project / "job.yaml"), "--no-wait")
    assert done.returncode == 0, done.stderr
    sweep = local.provider.attach(done.stdout.splitlines()[0])
    sweep.wait(poll_s=0.2, until=lambda status: bool(sweep.trials()))  # a trial has started
    sweep.cancel()
    assert sweep.wait(poll_s=0.2).state == "cancelled"
    trials = sweep.trials()
    assert trials and {trial.state for trial in trials} == {"cancelled"}
    assert {local.provider.attach(trial.job).status().state for trial in trials} == {"cancelled"}
