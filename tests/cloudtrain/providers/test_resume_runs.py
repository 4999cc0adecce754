"""Resume a run anywhere, on this machine: stopped in an emulated Vertex region, continued on emulated SageMaker.

Real multi-process training through the CLI and the local launcher: ``--fault stop@epoch:N``
ends the Vertex run as a lost region would, and ``submit --run-id`` on SageMaker copies the
run's newest verified backup from the Cloud Storage stand-in to the S3 stand-in before the
job starts. The final weights are compared with an uninterrupted run's, variable by variable.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

pytestmark = [pytest.mark.multiprocess, pytest.mark.timeout(900), pytest.mark.usefixtures("private_tmpdir")]

BUCKETS = ("gcs", "s3")


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This machine's record of where runs have been, private to the test."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _submit(project: Path, emulate: str, run: str, *settings: str, fault: str | None = None) -> str:
    """``cloudtrain submit`` as a user types it; the job ID and the followed log, after checking the exit."""
    command = [sys.executable, "-m", "cloudtrain", "submit", str(project / "job.yaml"), "--provider", "local"]
    command += ["--emulate", emulate, "--run-id", run, *(f"--set={s}" for s in settings)]
    command += ["--fault", fault] if fault else []
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == (1 if fault else 0), done.stdout + done.stderr
    return done.stdout + done.stderr


def _run_prefix(project: Path, bucket: str, run: str) -> Path:
    return project.parent / "home" / "buckets" / bucket / "my-bucket" / "binary-classifier" / "runs" / run


def _final_weights(project: Path, run: str, tmp: Path) -> dict[str, np.ndarray]:
    """Every variable of the SavedModel SageMaker packed into the run's model.tar.gz, by name."""
    import tensorflow as tf

    (tarball,) = _run_prefix(project, "s3", run).glob("output/*/output/model.tar.gz")
    with tarfile.open(tarball) as tar:
        tar.extractall(tmp / run, filter="data")
    (model,) = {path.parent for path in (tmp / run).rglob("saved_model.pb")}
    return {variable.name: variable.numpy() for variable in tf.saved_model.load(str(model)).variables}


def _assert_same_weights(resumed: dict[str, np.ndarray], uninterrupted: dict[str, np.ndarray]) -> None:
    assert sorted(resumed) == sorted(uninterrupted)
    worst = max(float(np.max(np.abs(resumed[n] - uninterrupted[n]))) for n in resumed)
    assert worst <= 1e-6


def test_a_run_stopped_on_vertex_continues_on_sagemaker_at_the_next_epoch_with_the_same_weights(
    project: Path, index: Path, tmp_path: Path
) -> None:
    stopped = _submit(project, "vertex", "r1", "training.epochs=4", fault="stop@epoch:2")
    resumed = _submit(project, "sagemaker", "r1", "training.epochs=4")
    _submit(project, "sagemaker", "base", "training.epochs=4")

    assert "[cloudtrain] Not restarting: the region was lost (--fault stop@epoch:2)" in stopped
    assert "Copied the run's backup epoch-000002 (epoch 2, step 32)" in resumed
    assert "The job continues after epoch 2." in resumed
    assert "[algo-1] restoring the verified backup epoch-000002: epoch 2 (step 32) of run r1" in resumed
    assert "epoch 3/4" in resumed and "epoch 1/4" not in resumed
    s3 = _run_prefix(project, "s3", "r1")
    lineage = json.loads((s3 / "lineage.json").read_text())
    assert [(a["storage"], a["region"]) for a in lineage["attempts"]] == [
        ("vertex", "us-central1"),
        ("sagemaker", "us-east-1"),
    ]
    assert lineage["attempts"][1]["started_from"]["epoch"] == 2
    assert (
        lineage["attempts"][1]["copy"]["bytes"] > 0
        and "internet egress" in lineage["attempts"][1]["copy"]["egress_rate"]
    )
    status = subprocess.run(
        [sys.executable, "-m", "cloudtrain", "status", resumed.split()[0]],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "Lineage of run r1:" in status.stdout
    assert " vertex emulated here us-central1 (n1-standard-8 + 1 × t4, 2 hosts)" in status.stdout
    assert "from epoch-000002 (epoch 2); copied " in status.stdout
    _assert_same_weights(_final_weights(project, "r1", tmp_path), _final_weights(project, "base", tmp_path))


def test_a_newest_backup_with_one_byte_flipped_is_said_and_the_previous_one_costs_one_epoch_again(
    project: Path, index: Path, tmp_path: Path
) -> None:
    one_host = ("resources.hosts=1", "training.epochs=3")
    _submit(project, "vertex", "r2", *one_host, fault="stop@epoch:2")
    weights = (
        _run_prefix(project, "gcs", "r2") / "checkpoints" / "verified" / "epoch-000002" / "latest.weights.h5"
    )
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0x01
    weights.write_bytes(bytes(data))
    resumed = _submit(project, "sagemaker", "r2", *one_host)
    _submit(project, "sagemaker", "base2", *one_host)

    assert (
        "passed over epoch-000002: latest.weights.h5's sha256 differs from its manifest"
        in resumed.replace("\n", " ")
    )
    assert "[algo-1] restoring the verified backup epoch-000001" in resumed
    assert "epoch 2/3" in resumed and "epoch 1/3" not in resumed  # epoch 2 again, nothing before it
    assert weights.read_bytes() == bytes(data)  # the source is never modified
    _assert_same_weights(_final_weights(project, "r2", tmp_path), _final_weights(project, "base2", tmp_path))
