"""Backups belong to one run: every attempt of it resumes, no other run reads, moves or deletes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cloudtrain_runtime.harness import launch, runtime_config

pytestmark = pytest.mark.multiprocess


def _files(folder: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def test_attempts_of_one_run_resume_and_another_run_leaves_the_backup_alone(tmp_path: Path) -> None:
    config = runtime_config(tmp_path, epochs=2, replicas=1, hosts=1, per_replica_batch=32, run_id="r1")

    interrupted = launch(1, config, tmp_path, env={"CLOUDTRAIN_FAULT": "chief:0@epoch:1"})
    kept = _files(tmp_path / "backup")
    other = launch(1, {**config, "run_id": "r2"}, tmp_path)  # another run pointed at r1's folder
    after_other = _files(tmp_path / "backup")
    resumed = launch(1, config, tmp_path)  # the retry of r1: a new provider job, the same run

    assert interrupted.returncodes == [-9], interrupted.explain()
    assert not other.ok and "belongs to run 'r1', not to run 'r2', so it was left as it is" in other.explain()
    assert after_other == kept  # not a byte moved or deleted
    assert resumed.ok, resumed.explain()
    assert resumed.result["epochs_run"] == [1, 2]  # the run's epochs, over both its attempts
    assert [a["epochs"] for a in resumed.result["attempts"]] == [[1], [2]]
    assert "resuming from the backup" in resumed.outputs[0]


def test_a_finished_run_points_latest_at_itself_and_a_later_attempt_trains_nothing(tmp_path: Path) -> None:
    latest = tmp_path / "latest.json"
    config = runtime_config(
        tmp_path, epochs=1, replicas=1, hosts=1, per_replica_batch=32, run_id="r1", latest_file=str(latest)
    )
    finished = launch(1, config, tmp_path)
    pointer = json.loads(latest.read_text())
    again = launch(1, config, tmp_path)  # e.g. Vertex restarting the job after the chief's export

    assert finished.ok and again.ok, again.explain()
    assert (pointer["run_id"], pointer["model"]) == ("r1", config["export_dir"])
    assert "run r1 already completed with a verified export" in again.outputs[0]
    assert "epoch 1/1" not in again.outputs[0]
    assert not any((tmp_path / "backup").rglob("*.h5"))  # emptied after the verified export
