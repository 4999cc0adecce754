"""Emulated host folders: fresh per attempt, restored from and synced back to the stand-in bucket."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from cloudtrain.providers.local import hosts as local_hosts


def _replica(tmp_path: Path, name: str = "algo-1") -> dict[str, Any]:
    bucket = tmp_path / "buckets" / "s3" / "b" / "checkpoints"
    return {
        "name": name,
        "root": str(tmp_path / "hosts" / name),
        "links": {"gcs": str(tmp_path / "buckets" / "gcs")},
        "dirs": ["opt/ml/model"],
        "files": {"opt/ml/input/config/resourceconfig.json": json.dumps({"current_host": name})},
        "copy_in": [
            {
                "source": str(tmp_path / "buckets" / "s3" / "b" / "code" / "x.tar.gz"),
                "target": "opt/ml/input/data/code",
            },
            {"source": str(bucket), "target": "opt/ml/checkpoints"},
        ],
        "sync_out": [{"source": "opt/ml/checkpoints", "target": str(bucket)}],
    }


@pytest.fixture
def bucket(tmp_path: Path) -> Path:
    (tmp_path / "buckets" / "s3" / "b" / "code").mkdir(parents=True)
    (tmp_path / "buckets" / "s3" / "b" / "code" / "x.tar.gz").write_bytes(b"bundle")
    checkpoints = tmp_path / "buckets" / "s3" / "b" / "checkpoints"
    (checkpoints / "worker_0").mkdir(parents=True)
    (checkpoints / "worker_0" / "ckpt-1").write_text("epoch 1")
    return checkpoints


def test_prepare_builds_a_fresh_host_with_config_channels_and_restored_checkpoints(
    tmp_path: Path, bucket: Path
) -> None:
    replica = _replica(tmp_path)
    root = Path(replica["root"])
    root.mkdir(parents=True)
    (root / "left-over-from-the-last-attempt").write_text("x")
    local_hosts.prepare(replica)
    assert not (root / "left-over-from-the-last-attempt").exists()
    assert (root / "gcs").is_symlink()
    assert (root / "opt/ml/model").is_dir()
    assert (root / "opt/ml/input/config/resourceconfig.json").read_text() == '{"current_host": "algo-1"}'
    assert (root / "opt/ml/input/data/code/x.tar.gz").read_bytes() == b"bundle"  # one object: by its name
    assert (root / "opt/ml/checkpoints/worker_0/ckpt-1").read_text() == "epoch 1"


def test_sync_out_uploads_new_files_and_deletes_what_the_replica_deleted(
    tmp_path: Path, bucket: Path
) -> None:
    (bucket / "worker_1").mkdir()
    (bucket / "worker_1" / "ckpt-1").write_text("another host's file")
    replica = _replica(tmp_path)
    local_hosts.prepare(replica)
    checkpoints = Path(replica["root"]) / "opt/ml/checkpoints"
    (checkpoints / "worker_0" / "ckpt-1").unlink()  # keep-last-N rotation
    (checkpoints / "worker_0" / "ckpt-2").write_text("epoch 2")
    (checkpoints / "worker_1" / "ckpt-1").unlink()
    local_hosts.sync_out(replica)
    assert sorted(p.relative_to(bucket).as_posix() for p in bucket.rglob("*") if p.is_file()) == [
        "worker_0/ckpt-2"
    ]
    assert (bucket / "worker_0" / "ckpt-2").read_text() == "epoch 2"


def test_sync_out_keeps_files_another_host_wrote_after_this_one_started(tmp_path: Path, bucket: Path) -> None:
    replica = _replica(tmp_path)
    local_hosts.prepare(replica)
    (bucket / "worker_1").mkdir()
    (bucket / "worker_1" / "ckpt-2").write_text("written by algo-2 meanwhile")
    local_hosts.sync_out(replica)
    assert (bucket / "worker_1" / "ckpt-2").exists()
    assert (bucket / "worker_0" / "ckpt-1").exists()


def test_collect_packs_every_hosts_model_folder_into_one_tarball(tmp_path: Path) -> None:
    sources = []
    for name, file in (("algo-1", "demo/1/saved_model.pb"), ("algo-2", "notes.txt")):
        model = tmp_path / name / "model"
        (model / file).parent.mkdir(parents=True)
        (model / file).write_text(name)
        sources.append(str(model))
    target = tmp_path / "out" / "model.tar.gz"
    local_hosts.collect({"collect": [{"sources": sources, "target": str(target)}]})
    with tarfile.open(target) as tar:
        assert sorted(m.name for m in tar.getmembers() if m.isfile()) == [
            "demo/1/saved_model.pb",
            "notes.txt",
        ]


def test_remove_hosts_leaves_nothing_behind(tmp_path: Path, bucket: Path) -> None:
    replicas = [_replica(tmp_path, "algo-1"), _replica(tmp_path, "algo-2")]
    for replica in replicas:
        local_hosts.prepare(replica)
    local_hosts.remove_hosts(replicas)
    assert not (tmp_path / "hosts").exists()
    assert (bucket / "worker_0" / "ckpt-1").exists()  # removing a host never touches the bucket


def test_a_file_outside_the_host_folder_is_refused(tmp_path: Path) -> None:
    replica = {"name": "x", "root": str(tmp_path / "hosts" / "x"), "files": {"../../escape.txt": "no"}}
    with pytest.raises(ValueError, match="outside the host folder"):
        local_hosts.prepare(replica)
    assert not (tmp_path / "escape.txt").exists()
