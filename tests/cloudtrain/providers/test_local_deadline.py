"""limits.max_runtime holds on this machine: each emulated cloud stops the job as it would, from its own request.

The deadline a local request carries comes from the field the provider reads (Vertex
AI's ``scheduling.timeout``, SageMaker's ``StoppingCondition.MaxRuntimeInSeconds``, the
Job's ``activeDeadlineSeconds``), so a request that loses the field loses the limit here
too. The runs below train a user module whose input never comes: only the deadline ends
them.

The limit outlasts a replica's start with room to spare: a chief that is still importing
TensorFlow when the deadline passes (about 4 s on an idle machine, over 60 s on a loaded
one) would be stopped before it reached the input, and the run would not show that a
replica waiting in user code is stopped too.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cloudtrain import api
from cloudtrain.providers import local
from cloudtrain.providers.local.processes import is_running
from cloudtrain.specfile import load_spec
from tests.cloudtrain.providers.test_local_launcher import stop_runs

# Each provider's own word for a job stopped at its limit, and its reason.
ENDS = {
    "vertex": ("JOB_STATE_FAILED", "scheduling.timeout"),
    "sagemaker": ("Stopped/MaxRuntimeExceeded", "MaxRuntimeExceeded"),
    "kubernetes": ("Failed", "DeadlineExceeded"),
}
LIMIT = "90s"
SLEEPING_TRAINER = """\
import time

import keras
import tensorflow as tf


def build_model(config):
    inputs = keras.Input((8,), name="features")
    return keras.Model(inputs, keras.layers.Dense(1)(inputs))


def compile_args(config):
    return {"loss": "mse"}


def make_dataset(context):
    print("reading the input", flush=True)
    time.sleep(600)  # an input that never comes
    return tf.data.Dataset.from_tensor_slices(([[0.0] * 8], [0.0]))
"""


@pytest.mark.parametrize("emulate", sorted(ENDS))
def test_an_emulated_request_carries_its_providers_limit(example_job: Path, emulate: str) -> None:
    spec = load_spec(example_job, ["limits.max_runtime=20s", "resources.hosts=1"])
    request = api.prepare(spec, local.Local(emulate=emulate), run_id="r1").request
    state, code = ENDS[emulate]
    assert request["deadline"]["seconds"] == 20
    assert (request["deadline"]["provider_state"], request["deadline"]["code"]) == (state, code)


@pytest.fixture
def sleeping(tmp_path: Path, example_job: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    shutil.copytree(example_job.parent, tmp_path / "project", ignore=shutil.ignore_patterns("outputs"))
    (tmp_path / "project" / "trainer" / "task.py").write_text(SLEEPING_TRAINER)
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path / "home"))
    yield tmp_path / "project"
    stop_runs(tmp_path / "home")


@pytest.mark.multiprocess
@pytest.mark.timeout(360)
@pytest.mark.parametrize(
    ("emulate", "provider_state", "where"),
    [
        (None, "MAX_RUNTIME_EXCEEDED", ""),
        ("vertex", "JOB_STATE_FAILED", " (the request's scheduling.timeout, as the provider stops it)"),
    ],
)
def test_a_run_that_would_sleep_for_ever_ends_at_its_max_runtime_with_nothing_left_running(
    sleeping: Path, emulate: str | None, provider_state: str, where: str
) -> None:
    # regression: RUNNING after 90 s with limits.max_runtime=20s, plain and under --emulate vertex
    args = ["--set", f"limits.max_runtime={LIMIT}", "--set", "resources.hosts=1"]
    args += ["--emulate", emulate] if emulate else []
    done = subprocess.run(
        [sys.executable, "-m", "cloudtrain", "submit", str(sleeping / "job.yaml"), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    job = local.provider.attach(done.stdout.strip())
    final = job.status()
    assert (final.state, final.provider_state) == ("failed", provider_state)
    assert final.detail == (
        f"stopped: limits.max_runtime ({LIMIT}) reached{where}; raise limits.max_runtime, or make the job faster."
    )
    assert "[chief-0] reading the input" in done.stderr
    status = json.loads(
        subprocess.run(
            [sys.executable, "-m", "cloudtrain", "status", job.id, "--json"], capture_output=True, text=True
        ).stdout
    )
    assert status["failure"]["reason"] == "configuration"
    assert not (job.run_dir / "replicas.pid").exists() and not (job.run_dir / "hosts").exists()
    launcher = json.loads((job.run_dir / "launcher.pid").read_text())["pid"]
    assert not is_running(launcher)
    assert _processes_of(job.run_dir) == []  # no replica outlives the run


def _processes_of(run_dir: Path) -> list[int]:
    """Live processes whose environment names the run folder: every replica's CLOUDTRAIN_ROOT does."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if str(run_dir).encode() in environ.read_bytes():
                found.append(int(environ.parent.name))
        except OSError:  # gone meanwhile, or another user's
            continue
    return [pid for pid in found if is_running(pid)]
