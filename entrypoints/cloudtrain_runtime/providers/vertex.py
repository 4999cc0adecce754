"""Vertex AI custom training, as a replica sees it (reference/vertex.md §2-3).

- **Recognised by** ``CLUSTER_SPEC`` (set on every replica) or one of the ``AIP_*``
  directory variables.
- **Cluster**: TF_CONFIG with ``chief`` (worker pool 0) and ``worker`` (pool 1),
  used as Vertex wrote it; Vertex sets no TF_CONFIG for a single replica, which is
  then the chief.
- **Storage**: every bucket the job may read is mounted under ``/gcs`` (Cloud Storage
  FUSE), so ``gs://B/p`` opens as ``/gcs/B/p``.
- **Locations**: ``AIP_MODEL_DIR``, ``AIP_CHECKPOINT_DIR`` and ``AIP_TENSORBOARD_LOG_DIR``
  (set when the job has a base output directory) replace the export, backup and log
  URIs of the config.

Example:
>>> info = ENVIRONMENT.cluster({"CLUSTER_SPEC": "{}"}, root="/")
>>> info.provider, info.is_chief, str(info.storage_mount)
('vertex', True, '/gcs')
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from cloudtrain_runtime.paths import under_root
from cloudtrain_runtime.replica import ClusterInfo, Locations, single_replica
from cloudtrain_runtime.tfconfig import TF_CONFIG_ENV, PlainTfConfig

if TYPE_CHECKING:
    from cloudtrain_runtime.config import RuntimeConfig

MARKERS = ("CLUSTER_SPEC", "AIP_MODEL_DIR", "AIP_CHECKPOINT_DIR", "AIP_TENSORBOARD_LOG_DIR")
AIP_DIRS = {
    "export": "AIP_MODEL_DIR",
    "backup": "AIP_CHECKPOINT_DIR",
    "tensorboard": "AIP_TENSORBOARD_LOG_DIR",
}


class Vertex(PlainTfConfig):
    """A Vertex AI replica: TF_CONFIG when distributed, ``/gcs`` mounted, AIP_* paths."""

    provider = "vertex"
    label = "Vertex AI"

    def detects(self, env: Mapping[str, str], root: str) -> bool:
        return any(env.get(name) for name in MARKERS)

    def cluster(self, env: Mapping[str, str], root: str) -> ClusterInfo:
        if env.get(TF_CONFIG_ENV):
            return super().cluster(env, root)
        # Vertex sets no TF_CONFIG for a single replica (training/distributed-training).
        return single_replica(self.provider, self.mount(root))

    def mount(self, root: str) -> Path:
        return under_root(root, "/gcs")

    def locations(self, config: RuntimeConfig, env: Mapping[str, str], root: str) -> Locations:
        overrides = {role: env[name] for role, name in AIP_DIRS.items() if env.get(name)}
        return Locations.from_uris(config, root, overrides)


ENVIRONMENT = Vertex()
