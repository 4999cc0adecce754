"""The file system of each emulated host: set up before an attempt, synced and removed after.

Each replica gets a folder that stands in for its machine's ``/`` (``CLOUDTRAIN_ROOT``).
It is rebuilt for every attempt, as a restarted cloud replica gets a fresh VM: links to
the shared stand-in buckets (Vertex's ``/gcs``), generated files (SageMaker's
``/opt/ml/input/config/*.json``) and copies from a bucket (SageMaker's input channels
and restored checkpoints). After the attempt, synced folders go back to their bucket.

SageMaker syncs ``/opt/ml/checkpoints`` continuously; here it is synced when the
replica's process has ended, whether it succeeded or died. That approximation is
exact for anything written before a kill, because the emulated host's disk survives
the kill, and it keeps SageMaker's deletion rule: a restored file deleted in the
container is deleted in the bucket too (https://docs.aws.amazon.com/sagemaker/latest/dg/model-checkpoints.html).
"""

from __future__ import annotations

import filecmp
import json
import shutil
import tarfile
from pathlib import Path
from typing import Any


def prepare(replica: dict[str, Any]) -> None:
    """Build the replica's fresh host folder: links, empty folders, generated files, bucket copies."""
    root = Path(replica["root"])
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    for rel, target in replica.get("links", {}).items():
        Path(target).mkdir(parents=True, exist_ok=True)
        link = _under(root, rel)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target, target_is_directory=True)
    for rel in replica.get("dirs", []):
        _under(root, rel).mkdir(parents=True, exist_ok=True)
    for rel, content in replica.get("files", {}).items():
        path = _under(root, rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    restored = {}
    for copy in replica.get("copy_in", []):
        restored[copy["target"]] = _copy_tree(Path(copy["source"]), _under(root, copy["target"]))
    _manifest(replica).write_text(json.dumps(restored))


def sync_out(replica: dict[str, Any]) -> None:
    """Upload new and changed files of each synced folder; delete what the replica deleted.

    A sync marked ``"delete": false`` never deletes (a Kubernetes pod's ``aws s3 sync``
    without ``--delete``); a ``source`` that is one file is copied into ``target``.
    """
    root = Path(replica["root"])
    manifest = _manifest(replica)
    restored = json.loads(manifest.read_text()) if manifest.exists() else {}
    for sync in replica.get("sync_out", []):
        local, bucket = _under(root, sync["source"]), Path(sync["target"])
        present = set(_copy_tree(local, bucket))
        if not sync.get("delete", True):
            continue
        for rel in set(restored.get(sync["source"], [])) - present:
            (bucket / rel).unlink(missing_ok=True)


def collect(request: dict[str, Any]) -> None:
    """Pack each set of host folders into one tarball (SageMaker's model.tar.gz, output.tar.gz)."""
    for spec in request.get("collect", []):
        target = Path(spec["target"])
        target.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(target, "w:gz") as tar:
            for source in map(Path, spec["sources"]):
                for path in sorted(source.rglob("*")) if source.is_dir() else []:
                    tar.add(path, arcname=path.relative_to(source).as_posix(), recursive=False)


def remove_hosts(replicas: list[dict[str, Any]]) -> None:
    """Delete every host folder: like a cloud VM's disk, it does not outlive the job."""
    for replica in replicas:
        shutil.rmtree(replica["root"], ignore_errors=True)
        _manifest(replica).unlink(missing_ok=True)
    parents = {Path(replica["root"]).parent for replica in replicas}
    for parent in parents:
        if parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()


def _copy_tree(source: Path, target: Path) -> list[str]:
    """Copy the files under ``source`` that are new or changed into ``target``; list them all.

    A ``source`` that is one file (an S3 prefix naming one object) lands in ``target``
    under its own name, as SageMaker downloads it.
    """
    target.mkdir(parents=True, exist_ok=True)
    copied = []
    base = source.parent if source.is_file() else source
    for path in [source] if source.is_file() else sorted(source.rglob("*")):
        if path.is_dir():
            continue
        rel = path.relative_to(base)
        dest = target / rel
        if not (dest.exists() and filecmp.cmp(path, dest, shallow=False)):
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest)
        copied.append(rel.as_posix())
    return copied


def _under(root: Path, rel: str) -> Path:
    """``root / rel``, refusing paths that would leave the host folder."""
    path = (root / rel.lstrip("/")).resolve()
    if not path.is_relative_to(root.resolve()):
        raise ValueError(f"{rel!r} is outside the host folder {root}")
    return path


def _manifest(replica: dict[str, Any]) -> Path:
    """Where the list of restored files is kept: beside the host folder, not inside it."""
    root = Path(replica["root"])
    return root.with_name(f"{root.name}.restored.json")
