"""Runs, not jobs, on the emulated clouds: two runs of one spec under one root, and a failed run retried.

Each run has its own artifacts, the first run's model is untouched by the second, the
retry of the failed run (a new job: a new Vertex job ID, SageMaker's ``-r2`` name)
resumes at the epoch after its last backup, and no object of another run is ever lost
from the stand-in bucket.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from cloudtrain import api
from cloudtrain.providers import local
from cloudtrain.providers.local.job import LocalJob

pytestmark = [pytest.mark.multiprocess, pytest.mark.timeout(600)]

SHAPE = ("resources.hosts=1", "training.epochs=2")
# The one host's task: Vertex's chief; SageMaker sets no TF_CONFIG, so its first host is worker 0.
FIRST_HOST = {"vertex": "chief:0", "sagemaker": "worker:0"}


def _submit(project: Path, emulate: str, run: str, *, fault: str | None = None) -> LocalJob:
    """Submit run ``run`` of the example; with ``fault``, a job that dies after that epoch for good."""
    spec = api.as_spec(project / "job.yaml", SHAPE)
    staged = api.prepare(spec, local.Local(emulate=emulate, fault=fault), run_id=run)
    if fault:  # the provider gives up: no restart (as with Vertex's scheduling.disableRetries)
        staged.request["restarts"]["host"]["limit"] = 0
    job = staged.submit()
    assert isinstance(job, LocalJob)
    job.wait(poll_s=0.5)
    return job


def _result(job: LocalJob) -> dict:
    path, _, member = job.outputs.result.partition("#")
    if not member:
        return dict(json.loads(Path(path).read_text()))
    with tarfile.open(path) as tar:
        read = tar.extractfile(member)
        assert read is not None
        return dict(json.loads(read.read()))


def _files(folder: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def _run_folder(job: LocalJob) -> Path:
    """The run's prefix in the stand-in bucket: ``ROOT/runs/<run>``."""
    backup = Path(job.outputs.backup)
    assert backup.name == "checkpoints"
    return backup.parent


@pytest.mark.parametrize("emulate", ["vertex", "sagemaker"])
def test_two_runs_keep_their_own_artifacts_and_a_failed_run_retried_resumes(
    project: Path, emulate: str
) -> None:
    first = _submit(project, emulate, "a")
    assert first.status().state == "succeeded", "\n".join(first.logs())
    # regression: the log named the export in the hosts' folders, removed at the end; the model stays here
    assert (
        f"[cloudtrain] Model: {first.outputs.model}" in list(first.logs())
        and "/buckets/" in first.outputs.model
    )
    kept = _files(_run_folder(first))

    failed = _submit(project, emulate, "b", fault=f"{FIRST_HOST[emulate]}@epoch:1")
    assert failed.status().state == "failed"
    retried = _submit(project, emulate, "b")
    assert retried.status().state == "succeeded", "\n".join(retried.logs())

    # each run's artifacts are its own, and the first run's are exactly as they were
    assert _files(_run_folder(first)) == kept
    mine, theirs = first.outputs, retried.outputs
    for artifact in ("model", "backup", "tensorboard", "result"):
        assert getattr(mine, artifact) != getattr(theirs, artifact)
    assert Path(mine.model.partition("#")[0]).exists() and Path(theirs.model.partition("#")[0]).exists()
    # the retry resumed after the failed job's last backup, in the same run
    result = _result(retried)
    assert (result["resumed_from_epoch"], result["epochs_run"]) == (1, [1, 2])  # the run's, both attempts
    assert [attempt["epochs"] for attempt in result["attempts"]] == [[1], [2]]
    assert len({attempt["job"] for attempt in result["attempts"]}) == 2  # the failed job, then the retry
    assert _run_folder(failed) == _run_folder(retried)
    # a new job, never a reused name or ID
    assert failed.request["replicas"][0]["env"] != retried.request["replicas"][0]["env"]
    if emulate == "sagemaker":
        names = [job.request["replicas"][0]["env"]["TRAINING_JOB_NAME"] for job in (failed, retried)]
        assert names[1] == f"{names[0]}-r2"
        assert retried.kept_backup() is not None  # SageMaker keeps it: the export was not durable yet
    else:
        latest = json.loads((_run_folder(first).parent.parent / "latest.json").read_text())
        assert latest["run_id"] == "b"
        assert retried.kept_backup() is None  # emptied after the verified export
