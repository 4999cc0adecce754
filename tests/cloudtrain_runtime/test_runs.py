"""Backups belong to one job: a later job on the same storage root never resumes an earlier one's."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.cloudtrain_runtime.harness import launch, runtime_config

pytestmark = pytest.mark.multiprocess


def test_next_jobs_start_at_epoch_1_despite_a_stale_backup(tmp_path: Path) -> None:
    config = runtime_config(tmp_path, epochs=2, replicas=1, hosts=1, per_replica_batch=32)
    stale = tmp_path / "stale"

    interrupted = launch(1, config, tmp_path, env={"CLOUDTRAIN_FAULT": "chief:0@epoch:1"})
    shutil.copytree(tmp_path / "backup", stale)  # the copy a second host syncs back later
    finished = launch(1, config, tmp_path)
    finished_attempts = finished.result["attempts"]  # the next job rewrites the result file
    for module in ("regression", "wider"):  # same model, then a changed one
        shutil.copytree(stale, tmp_path / "backup", dirs_exist_ok=True)
        run = launch(1, {**config, "module": module}, tmp_path)

        assert run.ok, run.explain()
        assert run.result["epochs_run"] == [1, 2]
        assert [a["epochs"] for a in run.result["attempts"]] == [[1, 2]]  # nothing of the other run's
        assert "belongs to another run" in run.outputs[0]
        assert sorted(p.name for p in (tmp_path / "backup").iterdir()) == ["cloudtrain-history.json"]

    assert interrupted.returncodes == [-9], interrupted.explain()
    assert finished.ok, finished.explain()
    assert [a["epochs"] for a in finished_attempts] == [[1], [2]]
    assert len(list(tmp_path.glob("backup.replaced-*"))) == 2
