"""``cloudtrain status`` on a running local job: where training is, and an ETA that holds.

The trainer's model sleeps a fixed time in every step, so every step takes the same time and the ETA at the half-way
point can be set against the time training really took to end: the chief's last record,
written when the last epoch ended.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cloudtrain import api
from cloudtrain.providers.local.job import LocalJob
from cloudtrain.run_progress import TrainingProgress
from tests.conftest import Result

# Every step sleeps 0.1 s in the model itself (a ``tf.py_function`` in a layer, run once a
# step, whatever tf.data does in parallel): 16 steps an epoch, 16 epochs.
FIXED_RATE = """
import time

import keras
import numpy as np
import tensorflow as tf

STEP_S = 0.1


def _sleep(x):
    time.sleep(STEP_S)
    return x


class Sleeps(keras.layers.Layer):
    def call(self, x):
        slept = tf.py_function(_sleep, [x], x.dtype)
        slept.set_shape(x.shape)
        return slept


def build_model(config):
    inputs = keras.Input((8,), name="features")
    return keras.Model(inputs, keras.layers.Dense(1)(Sleeps()(inputs)))


def compile_args(config):
    return {"loss": "mse"}


def make_dataset(context):
    x = np.random.default_rng(1).standard_normal((64, 8)).astype(np.float32)
    return tf.data.Dataset.from_tensor_slices((x, x.sum(axis=1, keepdims=True)))
"""


def _done(found: TrainingProgress) -> float:
    """The share of the run's steps done; none before the steps per epoch are known."""
    if found.steps_per_epoch is None:
        return 0.0
    total = found.epochs * found.steps_per_epoch
    return ((found.epoch - 1) * found.steps_per_epoch + found.step) / total


@pytest.mark.multiprocess
@pytest.mark.timeout(300)
@pytest.mark.usefixtures("private_tmpdir")
def test_status_at_half_way_shows_an_eta_within_a_quarter_of_the_time_left(
    project: Path, run_cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "trainer" / "fixed_rate.py").write_text(FIXED_RATE)
    submitted = run_cli(
        "submit",
        str(project / "job.yaml"),
        "--no-wait",
        *("--set", "resources.hosts=1", "--set", "code.module=trainer.fixed_rate"),
        *("--set", "training.epochs=16", "--set", "training.examples_per_epoch=512"),
    )
    assert submitted.code == 0, submitted.err
    job_id = submitted.out.strip()
    found = None
    while found is None or _done(found) < 0.5 or found.eta_s is None:
        assert LocalJob(job_id).status().state in ("pending", "running"), LocalJob(job_id).status()
        time.sleep(0.5)
        found = api.training_progress(job_id)
    asked = time.time()
    shown = run_cli("status", job_id)
    as_json = json.loads(run_cli("status", job_id, "--json").out)
    assert "progress: epoch " in shown.out and " examples/s, loss " in shown.out and ", ETA " in shown.out
    eta = as_json["progress"]["eta_s"]
    # a local run is not billed: it says so, and never shows a price
    assert shown.out.count(", not billed") == 1 and " to finish" not in shown.out
    assert (as_json["progress"]["billed"], as_json["progress"]["to_finish_usd"]) == (False, None)
    monkeypatch.setenv("COLUMNS", "200")
    assert re.search(r" \d+/16 ETA \d+[ms]", run_cli("list", "--provider", "local").out)
    (listed,) = json.loads(run_cli("list", "--provider", "local", "--json").out)
    assert listed["progress"] is not None and listed["progress"].keys() == as_json["progress"].keys()
    assert LocalJob(job_id).wait(poll_s=0.5).state == "succeeded"
    last = LocalJob(job_id).progress_record()
    assert isinstance(last, dict) and (last["epoch"], last["step"]) == (16, last["steps_per_epoch"])
    actual = last["updated_at"] - asked
    assert abs(eta - actual) <= 0.25 * actual, (eta, actual, as_json["progress"])
    assert json.loads(run_cli("status", job_id, "--json").out)["progress"] is None  # ended: none shown
