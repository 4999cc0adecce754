"""Amazon SageMaker training, as a replica sees it (https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-training-algo-running-container.html;
https://docs.aws.amazon.com/sagemaker/latest/dg/model-checkpoints.html).

- **Recognised by** ``/opt/ml/input/config/resourceconfig.json`` (under the root) and
  no TF_CONFIG: SageMaker itself never sets one.
- **Cluster**: ``hosts`` and ``current_host`` from resourceconfig.json. Rank is
  ``hosts.index(current_host)`` (the list is sorted as strings, so algo-10 precedes
  algo-2: never parse the number), the first host is the chief, and the runtime writes
  the TF_CONFIG that MultiWorkerMirroredStrategy reads, every host a ``worker`` on port
  8890, the layout the SageMaker TensorFlow toolkit uses.
- **Peers**: "Hostname information may not be immediately available", so the runtime
  waits until every peer resolves before training.
- **Configuration**: with no CLOUDTRAIN_CONFIG, the hyperparameter ``cloudtrain_config``
  (or its numbered pieces) in ``/opt/ml/input/config/hyperparameters.json``.
- **Storage and locations**: no bucket is mounted; everything lives under ``/opt/ml``:
  backups in ``/opt/ml/checkpoints`` (synced to S3 by the platform), the export in
  ``/opt/ml/model/<name>/1`` (a numeric version folder, as TF Serving needs), logs in
  ``/opt/ml/output/tensorboard``, channels in ``/opt/ml/input/data/<channel>`` and the
  results in ``/opt/ml/output/data`` (uploaded as output.tar.gz).
- **After a verified export** the backup is kept and no ``latest.json`` is written: the
  export reaches S3 only when the job ends (SageMaker uploads ``/opt/ml/model`` as
  ``model.tar.gz`` then), so until then the backup is the run's only durable copy, and a
  file deleted under the synced checkpoint folder is deleted in S3 too (SageMaker
  developer guide, "model-checkpoints"); the storage root is not mounted.
- **Emulation**: ``CLOUDTRAIN_HOSTS`` maps the host names to loopback addresses when the
  local provider runs several hosts on one machine.

Example:
>>> host_overrides("algo-1=127.0.0.1:5000, algo-2=127.0.0.1:5001", example="algo-1")
{'algo-1': '127.0.0.1:5000', 'algo-2': '127.0.0.1:5001'}
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from cloudtrain_runtime.errors import ClusterError
from cloudtrain_runtime.hostmap import HOSTS_ENV, addresses, host_overrides, is_host_name
from cloudtrain_runtime.inputs import duplicates, loads, shown
from cloudtrain_runtime.paths import under_root
from cloudtrain_runtime.replica import ClusterInfo, Environment, Locations
from cloudtrain_runtime.tfconfig import TF_CONFIG_ENV

if TYPE_CHECKING:
    from cloudtrain_runtime.config import RuntimeConfig

RESOURCE_CONFIG = "/opt/ml/input/config/resourceconfig.json"
HYPERPARAMETERS = "/opt/ml/input/config/hyperparameters.json"
JOB_NAME_ENV = "TRAINING_JOB_NAME"
PORT = 8890  # the port the SageMaker TF toolkit uses for MWMS (sagemaker-tensorflow-training 20.5.0, sagemaker_tensorflow_container/training.py)
_EXAMPLE = '{"current_host": "algo-1", "hosts": ["algo-1", "algo-2"]}'
KEEP_BACKUPS = (
    "SageMaker uploads the export only when the job ends, and a backup deleted here is deleted in S3 "
    "too, so it stays as the run's durable copy (cloudtrain status shows its size)"
)


class SageMaker(Environment):
    """A SageMaker host: resourceconfig.json, a TF_CONFIG to write, ``/opt/ml`` paths."""

    provider = "sagemaker"
    label = "SageMaker"
    peer_hint = (
        "On SageMaker, check the job's VPC DNS settings; when emulating hosts locally, "
        f"map it in {HOSTS_ENV}."
    )
    hyperparameters_file = HYPERPARAMETERS
    # A stopped (or reclaimed spot) job's container gets SIGTERM, then SIGKILL 120 s later:
    # https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-training-algo-running-container.html
    grace_s = 120.0
    # SageMaker mounts no bucket: its hosts use the /opt/ml tree. The scheme's folder is
    # where the local provider keeps its stand-in S3 buckets, for local runs of s3:// URIs.
    mounts: ClassVar[Mapping[str, str]] = MappingProxyType({"s3://": "/s3/"})

    def detects(self, env: Mapping[str, str], root: str) -> bool:
        return under_root(root, RESOURCE_CONFIG).is_file() and not env.get(TF_CONFIG_ENV)

    def cluster(self, env: Mapping[str, str], root: str) -> ClusterInfo:
        names, rank = host_list(_read(under_root(root, RESOURCE_CONFIG)))
        hosts = addresses(names, host_overrides(env.get(HOSTS_ENV, ""), example="algo-1"), port=PORT)
        tf_config = {"cluster": {"worker": list(hosts)}, "task": {"type": "worker", "index": rank}}
        mount = self.mount(root)
        return ClusterInfo(self.provider, "worker", rank, rank, rank == 0, hosts, mount, tf_config=tf_config)

    def mount(self, root: str) -> Path:
        return under_root(root, "/opt/ml")

    def trial(self, env: Mapping[str, str]) -> str | None:
        # A tuning job's trial is a training job of its own, whose container gets its name as
        # TRAINING_JOB_NAME (the name DescribeTrainingJob and ListTrainingJobsForHyperParameterTuningJob
        # give: "TRAINING_JOB_NAME" in https://docs.aws.amazon.com/sagemaker/latest/dg/
        # your-algorithms-training-algo-running-container.html; the tuning job's name "is the
        # prefix for the names of all training jobs that this tuning job launches",
        # CreateHyperParameterTuningJob.HyperParameterTuningJobName). Unique per trial, stable
        # over the trial's own retries.
        return env.get(JOB_NAME_ENV) or None

    def locations(
        self, config: RuntimeConfig, env: Mapping[str, str], root: str, mounts: Mapping[str, str]
    ) -> Locations:
        return Locations(
            backup=under_root(root, "/opt/ml/checkpoints"),
            tensorboard=under_root(root, "/opt/ml/output/tensorboard"),
            export=under_root(root, f"/opt/ml/model/{config.name}/1"),
            results=under_root(root, "/opt/ml/output/data"),
            channels={name: under_root(root, f"/opt/ml/input/data/{name}") for name in config.data},
            keep_backups=KEEP_BACKUPS,
            # /opt/ml/output/data reaches S3 only in output.tar.gz when the job ends; the
            # checkpoint folder is synced to CheckpointConfig.S3Uri while the job runs
            # ("SageMaker AI saves checkpoints to Amazon S3 and syncs your training job with
            # the checkpoint S3 bucket": https://docs.aws.amazon.com/sagemaker/latest/dg/
            # model-checkpoints-enable.html, from model-checkpoints.html), so the progress
            # record is read back there.
            progress_in_backup=True,
        )


def _read(path: Path) -> Any:
    try:
        return loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ClusterError(f"Cannot read {path}: {err}") from None


def host_list(resource_config: Any) -> tuple[list[str], int]:
    """The hosts in rank order and this host's rank, from resourceconfig.json's content.

    Example:
    >>> host_list({"current_host": "algo-2", "hosts": ["algo-1", "algo-10", "algo-2"]})
    (['algo-1', 'algo-10', 'algo-2'], 2)

    Raises:
        ClusterError: unless ``hosts`` is a list of distinct host names holding ``current_host``.
    """
    if not isinstance(resource_config, dict):
        raise ClusterError(
            f"{RESOURCE_CONFIG} must be a JSON object like {_EXAMPLE}. Received: {shown(resource_config)}"
        )
    names = resource_config.get("hosts")
    if not isinstance(names, list) or not names or not all(map(is_host_name, names)):
        raise ClusterError(
            f"{RESOURCE_CONFIG}: hosts must be a non-empty list of host names like 'algo-1'. "
            f"Received: hosts={shown(names)}"
        )
    repeated = duplicates(names)
    if repeated:
        raise ClusterError(
            f"{RESOURCE_CONFIG} lists host {shown(repeated[0])} more than once. Received: hosts={shown(names)}"
        )
    if resource_config.get("current_host") not in names:
        raise ClusterError(
            f"{RESOURCE_CONFIG} must list current_host among hosts. Received: {shown(resource_config)}"
        )
    return names, names.index(resource_config["current_host"])


ENVIRONMENT = SageMaker()
