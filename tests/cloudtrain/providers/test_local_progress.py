"""``cloudtrain status`` on a running local job: where training is, and an ETA that holds.

The trainer reads each example in a fixed time (a sleep in a ``tf.py_function``, which
tf.data runs one at a time), so every step takes the same time and the ETA at the half-way
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

# Each example takes 6 ms to read: 512 examples an epoch, 6 epochs, about 20 s in all.
FIXED_RATE = """
import time

import keras
import numpy as np
import tensorflow as tf

READ_S = 0.006


def build_model(config):
    inputs = keras.Input((8,), name="features")
    return keras.Model(inputs, keras.layers.Dense(1)(inputs))


def compile_args(config):
    return {"loss": "mse"}


def _read(features):
    time.sleep(READ_S)
    return features


def _slow(features, label):
    read = tf.py_function(_read, [features], tf.float32)
    read.set_shape(features.shape)
    return read, label


def make_dataset(context):
    x = np.random.default_rng(1).standard_normal((64, 8)).astype(np.float32)
    examples = tf.data.Dataset.from_tensor_slices((x, x.sum(axis=1, keepdims=True)))
    return examples.shuffle(64, seed=context.seed).map(_slow)
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
        *("--set", "training.epochs=6", "--set", "training.examples_per_epoch=512"),
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
    monkeypatch.setenv("COLUMNS", "200")
    assert re.search(r" [1-6]/6 ETA \d", run_cli("list", "--provider", "local").out)
    assert LocalJob(job_id).wait(poll_s=0.5).state == "succeeded"
    last = LocalJob(job_id).progress_record()
    assert isinstance(last, dict) and (last["epoch"], last["step"]) == (6, last["steps_per_epoch"])
    actual = last["updated_at"] - asked
    assert abs(eta - actual) <= 0.25 * actual, (eta, actual, as_json["progress"])
    assert json.loads(run_cli("status", job_id, "--json").out)["progress"] is None  # ended: none shown
