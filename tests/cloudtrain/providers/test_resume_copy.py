"""Moving a run's backup between clouds: Cloud Storage (gcp-storage-emulator) to S3 (moto), real clients.

The backups are written as the runtime commits them (``cloudtrain_runtime.manifests``)
and uploaded with google-cloud-storage; cloudtrain copies them through the providers'
own stores (``run_store``), as ``submit --run-id`` does before a resumed job starts.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from google.cloud import storage  # type: ignore[attr-defined, unused-ignore]

from cloudtrain.errors import ProviderError
from cloudtrain.progress import Progress
from cloudtrain.provider.failures import CallError, Reason
from cloudtrain.resume import Location, move_backup
from cloudtrain.resume.found import candidates
from cloudtrain_runtime import manifests
from tests.cloudtrain.providers.fakes.sagemaker_aws import BUCKET as S3_BUCKET
from tests.cloudtrain.providers.fakes.sagemaker_aws import LoopbackAws
from tests.cloudtrain.providers.fakes.vertex_storage import BUCKET as GCS_BUCKET

VERTEX = Location("vertex", "vertex", "us-central1", f"gs://{GCS_BUCKET}/churn/runs/r1")
SAGEMAKER = Location("sagemaker", "sagemaker", "us-east-1", f"s3://{S3_BUCKET}/churn/runs/r1")
WEIGHTS = 20 * 1024 * 1024 + 7  # several chunks of each store's transfer, and not a round number
STAMP = {"run": "r1", "config": "c", "model": "m"}


def _commit(folder: Path, epoch: int, *, run: str = "r1") -> Path:
    """A backup of ``epoch``, committed as the chief does, in a local folder."""
    slot = manifests.new_slot(folder, epoch, 0)
    (slot / "latest.weights.h5").write_bytes(os.urandom(WEIGHTS))
    (slot / "training_metadata.json").write_text(json.dumps({"epoch": epoch, "batch": 0}))
    manifests.commit(slot, manifests.Origin(run, "123", 1, "vertex"), epoch=epoch, batch=0, step=16 * epoch)
    return slot


def _upload_to_gcs(local: Path, epochs: tuple[int, ...] = (1, 2)) -> None:
    """The run's backup folder in Cloud Storage, as Vertex's FUSE mount leaves it."""
    for epoch in epochs:
        _commit(local, epoch)
    (local / "cloudtrain-backup.json").write_text(json.dumps(STAMP))
    (local / "cloudtrain-history.json").write_text('{"run": "r1"}')
    bucket = storage.Client().bucket(GCS_BUCKET)
    for path in sorted(local.rglob("*")):
        if path.is_file():
            bucket.blob(
                f"churn/runs/r1/checkpoints/{path.relative_to(local).as_posix()}"
            ).upload_from_filename(path)


def _s3_objects(aws: LoopbackAws) -> dict[str, bytes]:
    s3 = aws.client("s3")
    listed = s3.list_objects_v2(Bucket=S3_BUCKET, Prefix="churn/").get("Contents", [])
    return {item["Key"]: s3.get_object(Bucket=S3_BUCKET, Key=item["Key"])["Body"].read() for item in listed}


def _flip_gcs_byte(key: str) -> None:
    blob = storage.Client().bucket(GCS_BUCKET).blob(key)
    data = bytearray(blob.download_as_bytes())
    data[len(data) // 3] ^= 0x01
    blob.upload_from_string(bytes(data))


@pytest.fixture
def clouds(fake_gcs: str, aws: LoopbackAws, monkeypatch: pytest.MonkeyPatch) -> LoopbackAws:
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "loopback")
    return aws


def test_the_newest_backup_moves_from_cloud_storage_to_s3_checked_and_committed_last(
    clouds: LoopbackAws, tmp_path: Path
) -> None:
    _upload_to_gcs(tmp_path)
    seen: list[Progress] = []
    moved = move_backup("r1", VERTEX, SAGEMAKER, progress=seen.append)

    objects = _s3_objects(clouds)
    slot = "churn/runs/r1/checkpoints/verified/epoch-000002"
    local = tmp_path / "verified" / "epoch-000002"
    for name in ("latest.weights.h5", "training_metadata.json", manifests.MANIFEST_FILE):
        assert objects[f"{slot}/{name}"] == (local / name).read_bytes()
    assert not any("epoch-000001" in key for key in objects)  # only the backup resumed from moves
    assert json.loads(objects["churn/runs/r1/checkpoints/cloudtrain-backup.json"]) == STAMP
    assert (moved.copied.manifest.epoch, moved.copied.size, moved.copied.sent) == (
        2,
        WEIGHTS + 24,
        WEIGHTS + 24,
    )
    assert moved.egress.scope == "internet" and moved.usd == pytest.approx((WEIGHTS + 24) / 2**30 * 0.12)
    assert seen[0].done == 0 and seen[-1].done == seen[-1].total == WEIGHTS + 24 and seen[-1].step == "copy"
    head = clouds.client("s3").head_object(Bucket=S3_BUCKET, Key=f"{slot}/latest.weights.h5")
    assert (
        head["Metadata"]["sha256"] == hashlib.sha256((local / "latest.weights.h5").read_bytes()).hexdigest()
    )
    assert [c.slot for c in candidates(SAGEMAKER.store(), "r1") if c.usable] == ["epoch-000002"]


def test_a_newest_backup_with_one_byte_flipped_is_passed_over_and_the_previous_one_moves(
    clouds: LoopbackAws, tmp_path: Path
) -> None:
    _upload_to_gcs(tmp_path)
    _flip_gcs_byte("churn/runs/r1/checkpoints/verified/epoch-000002/latest.weights.h5")

    moved = move_backup("r1", VERTEX, SAGEMAKER)

    assert moved.copied.manifest.epoch == 1
    assert moved.copied.passed == (
        "epoch-000002: latest.weights.h5's sha256 differs from its manifest (the file changed after it was written)",
    )
    assert not any("epoch-000002" in key for key in _s3_objects(clouds))  # what arrived of it was deleted


def test_a_copy_killed_half_way_is_never_a_backup_and_the_same_copy_resumes(
    clouds: LoopbackAws, tmp_path: Path
) -> None:
    _upload_to_gcs(tmp_path, epochs=(1,))

    def kill_after_first_file(event: Progress) -> None:
        if event.done > WEIGHTS:
            raise KeyboardInterrupt  # the user's Ctrl-C, or a killed process, mid-copy

    with pytest.raises(KeyboardInterrupt):
        move_backup("r1", VERTEX, SAGEMAKER, progress=kill_after_first_file)
    assert not [c for c in candidates(SAGEMAKER.store(), "r1") if c.usable]  # no manifest: not a backup
    assert "churn/runs/r1/checkpoints/verified/epoch-000001/latest.weights.h5" in _s3_objects(clouds)

    moved = move_backup("r1", VERTEX, SAGEMAKER)

    assert (moved.copied.size, moved.copied.sent) == (WEIGHTS + 24, 24)  # the weights had arrived whole
    assert [c.slot for c in candidates(SAGEMAKER.store(), "r1") if c.usable] == ["epoch-000001"]


def test_another_runs_backup_at_the_destination_is_never_overwritten(
    clouds: LoopbackAws, tmp_path: Path
) -> None:
    _upload_to_gcs(tmp_path)
    key = "churn/runs/r1/checkpoints/cloudtrain-backup.json"
    clouds.client("s3").put_object(Bucket=S3_BUCKET, Key=key, Body=json.dumps({**STAMP, "run": "r9"}))
    with pytest.raises(
        ProviderError, match=r"holds run 'r9''s backup, not run 'r1''s, so nothing was copied"
    ):
        move_backup("r1", VERTEX, SAGEMAKER)
    assert list(_s3_objects(clouds)) == [key]


def test_a_run_with_no_backup_there_says_so(clouds: LoopbackAws) -> None:
    with pytest.raises(
        ProviderError, match=r"No backup of run 'r1' under gs://my-bucket/churn/runs/r1/checkpoints"
    ):
        move_backup("r1", VERTEX, SAGEMAKER)


def test_a_manifest_that_lies_about_a_size_is_refused_before_a_byte_moves(
    clouds: LoopbackAws, tmp_path: Path
) -> None:
    _upload_to_gcs(tmp_path, epochs=(1,))
    key = "churn/runs/r1/checkpoints/verified/epoch-000001/cloudtrain-manifest.json"
    blob = storage.Client().bucket(GCS_BUCKET).blob(key)
    manifest: dict[str, Any] = json.loads(blob.download_as_bytes())
    manifest["files"][0]["size"] = 1
    blob.upload_from_string(json.dumps(manifest))
    with pytest.raises(
        ProviderError, match=r"epoch-000001: latest.weights.h5 has \d+ bytes, its manifest says 1\)"
    ):
        move_backup("r1", VERTEX, SAGEMAKER)
    assert _s3_objects(clouds) == {}


def test_a_destination_that_cannot_be_written_is_a_permission_failure_and_the_source_stays(
    clouds: LoopbackAws, tmp_path: Path
) -> None:
    _upload_to_gcs(tmp_path, epochs=(1,))
    before = {blob.name: blob.md5_hash for blob in storage.Client().list_blobs(GCS_BUCKET)}
    readonly = Location(
        "local", "local", "local", "/sys/cloudtrain-resume-test/runs/r1"
    )  # EPERM even for root
    with pytest.raises(CallError) as raised:
        move_backup("r1", VERTEX, readonly)
    assert raised.value.reason is Reason.PERMISSION
    assert "stopped: Cannot write /sys/cloudtrain-resume-test" in str(raised.value)
    assert "run the same command again, and the copy resumes" in str(raised.value)
    assert {blob.name: blob.md5_hash for blob in storage.Client().list_blobs(GCS_BUCKET)} == before
