"""Code bundles are reproducible, content-addressed, and never ship secrets or VCS data."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest

from cloudtrain.bundle import collect, pack
from cloudtrain.errors import SpecError


def make_project(root: Path) -> Path:
    (root / "trainer").mkdir(parents=True)
    (root / "trainer" / "task.py").write_text("def build_model(config): ...\n")
    (root / "trainer" / "__init__.py").write_text("")
    (root / "README.md").write_text("hi\n")
    return root


def test_same_content_same_hash_regardless_of_mtime(tmp_path: Path) -> None:
    src = make_project(tmp_path / "src")
    first = pack(src, tmp_path / "out")
    os.utime(src / "README.md", (1, 1))
    second = pack(src, tmp_path / "out")
    assert first.sha256 == second.sha256
    assert first.name == f"{first.sha256[:16]}.tar.gz"


def test_changed_content_changes_hash(tmp_path: Path) -> None:
    src = make_project(tmp_path / "src")
    before = pack(src, tmp_path / "out")
    (src / "README.md").write_text("changed\n")
    assert pack(src, tmp_path / "out").sha256 != before.sha256


@pytest.mark.parametrize(
    "path",
    [
        ".git/config",  # VCS data
        ".env",  # dotenv secrets
        "keys/server.pem",  # private keys
        "credentials.json",  # service account keys
        "service-account-prod.json",  # service account keys
        ".aws/credentials",  # AWS profiles
        "trainer/__pycache__/task.cpython-311.pyc",  # bytecode
        "outputs/model.bin",  # ignored by .gitignore
        "data/big.tfrecord",  # ignored by .cloudtrainignore
    ],
)
def test_excluded_files_are_not_shipped(tmp_path: Path, path: str) -> None:
    src = make_project(tmp_path / "src")
    (src / ".gitignore").write_text("outputs/\n")
    (src / ".cloudtrainignore").write_text("*.tfrecord\n")
    target = src / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("secret")
    shipped = {p.as_posix() for p in collect(src)}
    assert path not in shipped
    assert "trainer/task.py" in shipped


def test_tarball_is_safe_and_normalised(tmp_path: Path) -> None:
    src = make_project(tmp_path / "src")
    (src / "link.py").symlink_to("/etc/passwd")
    bundle = pack(src, tmp_path / "out")
    with tarfile.open(bundle.path) as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == sorted(m.name for m in members)
    assert all(m.isfile() and m.mtime == members[0].mtime and m.uid == 0 for m in members)
    assert "link.py" not in {m.name for m in members}


def test_runtime_source_can_travel_in_the_bundle(tmp_path: Path) -> None:
    src = make_project(tmp_path / "src")
    with tarfile.open(pack(src, tmp_path / "out", include_runtime=True).path) as tar:
        names = tar.getnames()
    assert ".cloudtrain-runtime/cloudtrain_runtime/__init__.py" in names


def test_missing_source_dir_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"code\.source_dir"):
        collect(tmp_path / "nope")
