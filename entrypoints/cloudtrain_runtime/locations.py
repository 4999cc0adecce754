"""Where this replica reads data and writes backups, logs, the export and the results.

The environment adapter that described the replica maps the plan's storage URIs to
paths this replica can open, with the provider's own overrides taking precedence:

- Vertex: ``AIP_MODEL_DIR`` / ``AIP_CHECKPOINT_DIR`` / ``AIP_TENSORBOARD_LOG_DIR`` (gs://,
  read through the ``/gcs`` FUSE mount) replace the export, backup and log dirs.
- SageMaker: backups in ``/opt/ml/checkpoints`` (the platform syncs it to S3), the
  export in ``/opt/ml/model/<name>/1`` (a numeric version folder, as TF Serving needs),
  logs in ``/opt/ml/output/tensorboard``, channels in ``/opt/ml/input/data/<channel>``
  and the results in ``/opt/ml/output/data`` (uploaded as output.tar.gz).
- Elsewhere: the config's URIs, each scheme opened where its environment mounts it
  (``gs://`` → ``<root>/gcs``, ``s3://`` → ``<root>/s3``: ``environments.mounts``).

The result JSON (``cloudtrain-result.json``), the throughput JSON
(``cloudtrain-throughput.json``) and the per-epoch history (``cloudtrain-history.json``)
go next to the export, in its parent folder, except on SageMaker where they go to
``/opt/ml/output/data``. The history has a second copy in the backup folder, where a
restarted attempt finds it (``cloudtrain_runtime.history``).
"""

from __future__ import annotations

from collections.abc import Mapping

from cloudtrain_runtime import environments
from cloudtrain_runtime.config import RuntimeConfig
from cloudtrain_runtime.replica import HISTORY_FILE, RESULT_FILE, THROUGHPUT_FILE, ClusterInfo, Locations

__all__ = ["HISTORY_FILE", "RESULT_FILE", "THROUGHPUT_FILE", "Locations", "resolve"]


def resolve(config: RuntimeConfig, cluster: ClusterInfo, env: Mapping[str, str], root: str) -> Locations:
    """The paths for this replica in its environment (see the module docstring)."""
    return environments.named(cluster.provider).locations(config, env, root, environments.mounts())
