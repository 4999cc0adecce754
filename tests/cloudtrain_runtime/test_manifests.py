"""Verified backups: committed by a manifest written last, restored newest-verified-first, never unverified."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cloudtrain_runtime import manifests
from cloudtrain_runtime.backups import Backups, Stamp
from cloudtrain_runtime.errors import ConfigError

ORIGIN = manifests.Origin(run="r1", job="job-7", attempt=1, provider="vertex")


def _backup(
    root: Path, epoch: int, weights: bytes = b"w" * 100, *, origin: manifests.Origin = ORIGIN
) -> Path:
    """A committed backup after ``epoch`` epochs, as the chief writes one."""
    folder = manifests.new_slot(root, epoch, 0)
    (folder / "latest.weights.h5").write_bytes(weights)
    (folder / "training_metadata.json").write_text(json.dumps({"epoch": epoch, "batch": 0}))
    manifests.commit(folder, origin, epoch=epoch, batch=0, step=epoch * 16, clock=lambda: 0.0)
    return folder


def _flip_one_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def test_the_manifest_lists_every_file_with_its_size_and_digest_and_where_training_was(
    tmp_path: Path,
) -> None:
    folder = _backup(tmp_path, 2)
    manifest = manifests.read(folder)
    assert (manifest.run, manifest.epoch, manifest.step, manifest.job, manifest.provider) == (
        "r1",
        2,
        32,
        "job-7",
        "vertex",
    )
    assert [(entry.name, entry.size) for entry in manifest.files] == [
        ("latest.weights.h5", 100),
        ("training_metadata.json", 24),
    ]
    assert manifest.files[0].sha256 == manifests.sha256_of(folder / "latest.weights.h5")
    assert manifest.created_at == "1970-01-01T00:00:00Z"
    assert manifests.parse(manifest.to_json()) == manifest  # what is written reads back the same


def test_the_newest_verified_backup_is_restored_and_named(tmp_path: Path) -> None:
    _backup(tmp_path, 1)
    newest = _backup(tmp_path, 2)
    said: list[str] = []
    chosen = manifests.choose(tmp_path, "r1", said.append)
    assert chosen is not None and chosen[0] == newest
    assert said == [
        "restoring the verified backup epoch-000002: epoch 2 (step 32) of run r1, written by vertex job job-7 "
        "at 1970-01-01T00:00:00Z"
    ]


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (
            lambda f: _flip_one_byte(f / "latest.weights.h5"),
            "latest.weights.h5's sha256 differs from its manifest",
        ),
        (lambda f: (f / "latest.weights.h5").unlink(), "latest.weights.h5 is missing"),
        (
            lambda f: (f / "latest.weights.h5").write_bytes(b"w" * 50),
            "latest.weights.h5 has 50 bytes, its manifest says 100",
        ),
        (
            lambda f: (f / manifests.MANIFEST_FILE).unlink(),
            "it has no manifest: the backup was never committed",
        ),
        (lambda f: (f / manifests.MANIFEST_FILE).write_text("{trunc"), "the manifest is not JSON"),
    ],
    ids=["one-byte-flipped", "file-deleted", "file-cut-short", "never-committed", "manifest-torn"],
)
def test_a_newest_backup_that_does_not_verify_is_passed_over_for_the_previous_one(
    tmp_path: Path, damage: object, why: str
) -> None:
    previous = _backup(tmp_path, 1)
    newest = _backup(tmp_path, 2)
    damage(newest)  # type: ignore[operator]
    said: list[str] = []
    chosen = manifests.choose(tmp_path, "r1", said.append)
    assert chosen is not None and chosen[0] == previous
    assert said[0].startswith(f"warning: the backup epoch-000002 does not verify: {why}")
    assert said[0].endswith("restoring the previous one instead")
    assert said[1].startswith("restoring the verified backup epoch-000001")


def test_a_manifest_that_lies_about_a_size_is_caught_before_any_digest(tmp_path: Path) -> None:
    folder = _backup(tmp_path, 1)
    raw = json.loads((folder / manifests.MANIFEST_FILE).read_text())
    raw["files"][0]["size"] = 10**12  # a huge lie
    (folder / manifests.MANIFEST_FILE).write_text(json.dumps(raw))
    with pytest.raises(
        ConfigError, match=r"latest.weights.h5 has 100 bytes, its manifest says 1000000000000"
    ):
        manifests.choose(tmp_path, "r1", print)


def test_another_runs_backup_is_never_restored(tmp_path: Path) -> None:
    _backup(tmp_path, 1, origin=manifests.Origin("r2", None, None, "sagemaker"))
    with pytest.raises(ConfigError, match=r"nothing was deleted: .* it is run 'r2''s backup, not run 'r1''s"):
        manifests.choose(tmp_path, "r1", print)
    assert (tmp_path / "verified" / "epoch-000001" / "latest.weights.h5").is_file()


def test_when_no_backup_verifies_nothing_is_loaded_or_deleted_and_the_error_names_each(
    tmp_path: Path,
) -> None:
    for epoch in (1, 2):
        _flip_one_byte(_backup(tmp_path, epoch) / "latest.weights.h5")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(ConfigError) as raised:
        manifests.choose(tmp_path, "r1", print)
    assert "the backup epoch-000002 does not verify" in str(raised.value)
    assert "the backup epoch-000001 does not verify" in str(raised.value)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_a_fresh_folder_has_nothing_to_choose(tmp_path: Path) -> None:
    assert manifests.choose(tmp_path, "r1", print) is None


def test_the_chief_keeps_the_newest_two_committed_backups(tmp_path: Path) -> None:
    for epoch in (1, 2, 3):
        _backup(tmp_path, epoch)
    torn = manifests.new_slot(tmp_path, 4, 0)  # cut short: no manifest, newer than every committed one
    manifests.prune(tmp_path)
    assert [p.name for p in manifests.slots(tmp_path)] == ["epoch-000004", "epoch-000003", "epoch-000002"]
    assert torn.is_dir()  # a later commit passes it; it is not deleted while it might be being written


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"format": 2}', "the manifest lacks run"),
        ("[]", "not a JSON object"),
        (b"\xff\xfe", "not JSON"),
        ("1" * 10, "not a JSON object"),
    ],
)
def test_hostile_manifests_are_one_clear_reason(text: str | bytes, why: str) -> None:
    with pytest.raises(manifests.BadManifest, match=why):
        manifests.parse(text)


@pytest.mark.parametrize(
    "name", ["../../etc/passwd", "/abs", "a/b", "nul\x00", "..", "", manifests.MANIFEST_FILE], ids=repr
)
def test_a_manifest_naming_a_file_outside_its_folder_is_refused(tmp_path: Path, name: str) -> None:
    folder = _backup(tmp_path, 1)
    raw = json.loads((folder / manifests.MANIFEST_FILE).read_text())
    raw["files"][0]["name"] = name
    with pytest.raises(manifests.BadManifest, match="not a file in the backup's folder"):
        manifests.parse(json.dumps(raw))


def test_backups_say_where_a_restore_starts_before_the_model_exists(tmp_path: Path) -> None:
    _backup(tmp_path, 1)
    _flip_one_byte(_backup(tmp_path, 2) / "latest.weights.h5")
    (tmp_path / "cloudtrain-backup.json").write_text('{"run": "r1", "config": "c", "model": "m"}')
    said: list[str] = []
    backups = Backups(tmp_path, tmp_path / "done.json", Stamp("r1", "c", ""), is_chief=True, say=said.append)
    assert backups.resumes_at() == (1, 0)  # the input starts after epoch 1, where the restore will be
    assert backups.restorable() == tmp_path / "verified" / "epoch-000001"
    assert len([line for line in said if "does not verify" in line]) == 1  # checked once, not twice


def test_a_backup_taken_within_an_epoch_resumes_at_its_batch(tmp_path: Path) -> None:
    _backup(tmp_path, 1)
    folder = manifests.new_slot(tmp_path, 1, 3)
    (folder / "latest.weights.h5").write_bytes(b"w")
    manifests.commit(folder, ORIGIN, epoch=1, batch=3, step=19, clock=lambda: 0.0)
    (tmp_path / "cloudtrain-backup.json").write_text('{"run": "r1", "config": "c", "model": "m"}')
    backups = Backups(tmp_path, tmp_path / "done.json", Stamp("r1", "c", ""), is_chief=True, say=print)
    assert backups.resumes_at() == (1, 3)  # after epoch 1 and 3 batches of epoch 2: the notice's backup


def test_a_backup_written_before_manifests_is_restored_with_a_warning(tmp_path: Path) -> None:
    legacy = tmp_path / "chief"
    legacy.mkdir()
    (legacy / "latest.weights.h5").write_bytes(b"old")
    (legacy / "training_metadata.json").write_text('{"epoch": 3, "batch": 0}')
    (tmp_path / "cloudtrain-backup.json").write_text('{"run": "r1", "config": "c", "model": "m"}')
    said: list[str] = []
    backups = Backups(tmp_path, tmp_path / "done.json", Stamp("r1", "c", ""), is_chief=True, say=said.append)
    assert backups.restorable() is None  # Keras restores from its own folder
    assert backups.resumes_at() == (3, 0)
    assert said == [
        f"warning: the backup in {tmp_path} has no manifest (it was written before backups were verified), "
        "so it is restored without checking its files"
    ]


def test_where_a_restore_starts_is_not_asked_of_another_runs_backup(tmp_path: Path) -> None:
    _backup(tmp_path, 2, origin=manifests.Origin("r2", None, None, "vertex"))
    (tmp_path / "cloudtrain-backup.json").write_text('{"run": "r2", "config": "c", "model": "m"}')
    said: list[str] = []
    backups = Backups(tmp_path, tmp_path / "done.json", Stamp("r1", "c", ""), is_chief=True, say=said.append)
    assert backups.resumes_at() == (0, 0)  # the stamp's verdict, once the model exists, names the other run
    assert said == []
