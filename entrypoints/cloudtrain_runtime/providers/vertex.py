"""Vertex AI custom training, as a replica sees it (https://cloud.google.com/vertex-ai/docs/training/distributed-training,
https://cloud.google.com/vertex-ai/docs/training/code-requirements, https://cloud.google.com/vertex-ai/docs/training/cloud-storage-file-system).

- **Recognised by** ``CLUSTER_SPEC`` (set on every replica) or one of the ``AIP_*``
  directory variables.
- **Cluster**: TF_CONFIG with ``chief`` (worker pool 0) and ``worker`` (pool 1),
  used as Vertex wrote it; Vertex sets no TF_CONFIG for a single replica, which is
  then the chief.
- **Storage**: every bucket the job may read is mounted under ``/gcs`` (Cloud Storage
  FUSE), so ``gs://B/p`` opens as ``/gcs/B/p``.
- **Locations**: ``AIP_MODEL_DIR``, ``AIP_CHECKPOINT_DIR`` and ``AIP_TENSORBOARD_LOG_DIR``
  (set when the job has a base output directory) replace the export, backup and log
  URIs of the config. A hyperparameter tuning trial gets them with ``/<trial_id>/``
  after the base (aiplatform_v1 ``CustomJobSpec.base_output_directory``).
- **Sweep objective**: written as the ``cloudml-hypertune`` library writes it
  (``HypertuneFile``), which is how Vertex AI reads a trial's metric.

Example:
>>> info = ENVIRONMENT.cluster({"CLUSTER_SPEC": "{}"}, root="/")
>>> info.provider, info.is_chief, str(info.storage_mount)
('vertex', True, '/gcs')
"""

from __future__ import annotations

import collections
import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar

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
    mounts: ClassVar[Mapping[str, str]] = MappingProxyType({"gs://": "/gcs/"})
    # A preempted Spot VM gets about 30 s between the ACPI shutdown signal and its stop:
    # https://cloud.google.com/compute/docs/instances/spot#preemption-process
    grace_s = 30.0

    def detects(self, env: Mapping[str, str], root: str) -> bool:
        return any(env.get(name) for name in MARKERS)

    def cluster(self, env: Mapping[str, str], root: str) -> ClusterInfo:
        if env.get(TF_CONFIG_ENV):
            return super().cluster(env, root)
        # Vertex sets no TF_CONFIG for a single replica (training/distributed-training).
        return single_replica(self.provider, self.mount(root))

    def mount(self, root: str) -> Path:
        return under_root(root, "/gcs")

    def locations(
        self, config: RuntimeConfig, env: Mapping[str, str], root: str, mounts: Mapping[str, str]
    ) -> Locations:
        overrides = {role: env[name] for role, name in AIP_DIRS.items() if env.get(name)}
        return Locations.from_uris(config, root, mounts, overrides)

    def trial(self, env: Mapping[str, str]) -> str | None:
        # Every trial's replicas get CLOUD_ML_TRIAL_ID, the tuning job's own trial id (aiplatform_v1
        # Trial.id): cloudml-hypertune reads it (TRIAL_ENV below), and so does Google's own trainer
        # code for Vertex tuning jobs (GoogleCloudPlatform/vertex-ai-samples,
        # community-content/vertex_model_garden/model_oss/util/hypertune_utils.py).
        return env.get(TRIAL_ENV) or None

    def objective_reporter(self, env: Mapping[str, str], root: str) -> Callable[[str, int, float], None]:
        path = under_root(root, env.get(METRIC_FILE_ENV) or DEFAULT_METRIC_FILE)
        return HypertuneFile(path, trial=env.get(TRIAL_ENV, "0")).report


# cloudml-hypertune 0.1.0.dev6 (PyPI; hypertune/hypertune.py), the library Vertex AI's
# hyperparameter tuning docs tell a trial to report with: the file is
# $CLOUD_ML_HP_METRIC_FILE, else /tmp/hypertune/output.metrics; the trial is
# $CLOUD_ML_TRIAL_ID, else 0; the file holds the newest 100 reports, one JSON object per
# line (sort_keys), rewritten whole on every report.
METRIC_FILE_ENV = "CLOUD_ML_HP_METRIC_FILE"
DEFAULT_METRIC_FILE = "/tmp/hypertune/output.metrics"
TRIAL_ENV = "CLOUD_ML_TRIAL_ID"
MAX_REPORTS = 100


class HypertuneFile:
    r"""The metrics file of ``cloudml-hypertune``'s ``HyperTune.report_hyperparameter_tuning_metric``.

    Each line is ``{"checkpoint_path": "", "global_step": "<epoch>", "<metric>": "<value>",
    "timestamp": <seconds>, "trial": "<trial>"}``, values as strings, as the library writes
    them; the epoch stands for the step, so early stopping compares trials epoch by epoch.

    Example:
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "output.metrics"
    >>> HypertuneFile(path, trial="3", clock=lambda: 1.5).report("val_loss", 1, 0.25)
    >>> path.read_text()
    '{"checkpoint_path": "", "global_step": "1", "timestamp": 1.5, "trial": "3", "val_loss": "0.25"}\n'
    """

    def __init__(self, path: Path, *, trial: str, clock: Callable[[], float] = time.time) -> None:
        self.path, self.trial, self.clock = path, trial, clock
        self.reports: collections.deque[dict[str, object]] = collections.deque(maxlen=MAX_REPORTS)

    def report(self, metric: str, epoch: int, value: float) -> None:
        self.reports.append(
            {
                "timestamp": self.clock(),
                "trial": str(self.trial),
                metric: str(float(value)),
                "global_step": str(int(epoch)),
                "checkpoint_path": "",
            }
        )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("".join(json.dumps(line, sort_keys=True) + "\n" for line in self.reports))


ENVIRONMENT = Vertex()
