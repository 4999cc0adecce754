"""Where this replica reads data and writes backups, logs, the export and the results.

One function maps the plan's storage URIs to paths this replica can open, with the
provider's own overrides taking precedence:

- Vertex: ``AIP_MODEL_DIR`` / ``AIP_CHECKPOINT_DIR`` / ``AIP_TENSORBOARD_LOG_DIR`` (gs://,
  read through the ``/gcs`` FUSE mount) replace the export, backup and log dirs.
- SageMaker: backups in ``/opt/ml/checkpoints`` (the platform syncs it to S3), the
  export in ``/opt/ml/model/<name>/1`` (a numeric version folder, as TF Serving needs),
  logs in ``/opt/ml/output/tensorboard``, channels in ``/opt/ml/input/data/<channel>``
  and the results in ``/opt/ml/output/data`` (uploaded as output.tar.gz).
- Elsewhere: the config's URIs (``gs://`` → ``<root>/gcs``, ``s3://`` → ``<root>/s3``).

The result JSON (``cloudtrain-result.json``) and the throughput JSON
(``cloudtrain-throughput.json``) go next to the export, in its parent folder, except
on SageMaker where they go to ``/opt/ml/output/data``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cloudtrain_runtime.cluster import ClusterInfo
from cloudtrain_runtime.config import RuntimeConfig
from cloudtrain_runtime.paths import storage_path, under_root

RESULT_FILE = "cloudtrain-result.json"
THROUGHPUT_FILE = "cloudtrain-throughput.json"
_AIP_DIRS = {
    "export": "AIP_MODEL_DIR",
    "backup": "AIP_CHECKPOINT_DIR",
    "tensorboard": "AIP_TENSORBOARD_LOG_DIR",
}


@dataclass(frozen=True)
class Locations:
    """Absolute paths this replica uses; only the chief writes export, logs and results."""

    backup: Path
    tensorboard: Path
    export: Path
    results: Path
    channels: Mapping[str, Path]

    @property
    def result_file(self) -> Path:
        return self.results / RESULT_FILE

    @property
    def throughput_file(self) -> Path:
        return self.results / THROUGHPUT_FILE


def resolve(config: RuntimeConfig, cluster: ClusterInfo, env: Mapping[str, str], root: str) -> Locations:
    """The paths for this replica on its provider (see the module docstring)."""
    if cluster.provider == "sagemaker":
        return _sagemaker(config, root)
    uris = {"export": config.export_dir, "backup": config.backup_dir, "tensorboard": config.tensorboard_dir}
    if cluster.provider == "vertex":
        uris.update({role: env[name] for role, name in _AIP_DIRS.items() if env.get(name)})
    paths = {role: storage_path(uri, root, on_sagemaker=False) for role, uri in uris.items()}
    channels = {name: storage_path(uri, root, on_sagemaker=False) for name, uri in config.data.items()}
    return Locations(
        backup=paths["backup"],
        tensorboard=paths["tensorboard"],
        export=paths["export"],
        results=paths["export"].parent,
        channels=channels,
    )


def _sagemaker(config: RuntimeConfig, root: str) -> Locations:
    return Locations(
        backup=under_root(root, "/opt/ml/checkpoints"),
        tensorboard=under_root(root, "/opt/ml/output/tensorboard"),
        export=under_root(root, f"/opt/ml/model/{config.name}/1"),
        results=under_root(root, "/opt/ml/output/data"),
        channels={name: under_root(root, f"/opt/ml/input/data/{name}") for name in config.data},
    )
