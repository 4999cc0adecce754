"""What resuming a run elsewhere would move, shown before anything is copied; and the lost-region fault."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cloudtrain.providers import local
from cloudtrain.resume import Location, record
from cloudtrain_runtime import manifests


@pytest.fixture
def stopped_on_vertex(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run r1's backup of epoch 2 in the emulated Vertex bucket, and this machine's record of it."""
    home = tmp_path / "home"
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    run = home / "buckets" / "gcs" / "my-bucket" / "binary-classifier" / "runs" / "r1"
    slot = manifests.new_slot(run / "checkpoints", 2, 0)
    (slot / "latest.weights.h5").write_bytes(b"w" * 3000)
    (slot / "training_metadata.json").write_text('{"epoch": 2, "batch": 0}')
    manifests.commit(slot, manifests.Origin("r1", "55", 1, "vertex"), epoch=2, batch=0, step=32)
    (run / "checkpoints" / "cloudtrain-backup.json").write_text(
        json.dumps({"run": "r1", "config": "c", "model": "m"})
    )
    record.remember(
        "r1", Location("local", "vertex", "us-central1", "gs://my-bucket/binary-classifier/runs/r1")
    )
    return run


def test_a_dry_run_on_another_cloud_shows_the_bytes_and_the_charge_and_copies_nothing(
    run_cli, example_job: Path, stopped_on_vertex: Path
) -> None:
    args = ("submit", str(example_job), "--provider", "local", "--emulate", "sagemaker", "--run-id", "r1")
    result = run_cli(*args, "--dry-run")
    assert result.code == 0, result.err
    assert (
        "Resume: run r1's newest verified backup, epoch-000002 (epoch 2, step 32), is at vertex emulated here "
        "us-central1 (gs://my-bucket/binary-classifier/runs/r1)." in result.err
    )
    assert "3,024 bytes to copy to sagemaker emulated here us-east-1" in result.err
    assert "at $0.12/GiB (internet egress; https://cloud.google.com/storage/pricing-examples" in result.err
    assert not (stopped_on_vertex.parents[4] / "s3").exists()  # nothing copied


def test_plan_names_the_move_only_for_a_run_seen_elsewhere(
    run_cli, example_job: Path, stopped_on_vertex: Path
) -> None:
    moved = run_cli("plan", str(example_job), "--provider", "local", "--run-id", "r1", "--json")
    fresh = run_cli("plan", str(example_job), "--provider", "local", "--run-id", "r7", "--json")
    assert moved.code == fresh.code == 0, moved.err + fresh.err
    note = json.loads(moved.out)["resume"]
    assert "3,024 bytes to copy to this machine (" in note
    assert "internet egress" in note  # leaving (emulated) Cloud Storage for this machine
    assert "resume" not in json.loads(fresh.out)


def test_a_lost_region_restarts_nothing_whatever_the_request_allows() -> None:
    request = {"restarts": {"host": {"limit": 3, "rule": "r"}, "spot": {"limit": 3, "rule": "r"}}}
    stopped = local.with_fault(request, "stop@epoch:2")
    assert stopped["fault"] == "stop@epoch:2"
    assert stopped["restarts"]["stop"] == {
        "limit": 0,
        "rule": "the region was lost (--fault stop@epoch:2), so nothing restarts here; resume the run "
        "elsewhere with --run-id",
    }
    assert stopped["restarts"]["host"] == request["restarts"]["host"]


def test_a_bad_fault_lists_every_form_including_the_lost_region(run_cli, example_job: Path) -> None:
    result = run_cli(
        "submit", str(example_job), "--provider", "local", "--fault", "stop@minute:2", "--dry-run"
    )
    assert result.code == 2
    assert "stop@epoch:<n> for a lost region (no restart)" in result.err
