"""Who this replica is: one ``ClusterInfo`` from whatever environment the provider gave.

Four adapters, tried in order:

- **SageMaker** sets no TF_CONFIG; ``/opt/ml/input/config/resourceconfig.json`` (under
  the root) lists ``hosts`` and ``current_host``. Rank is ``hosts.index(current_host)``
  (the list is sorted as strings, so algo-10 precedes algo-2: never parse the number),
  the first host is the chief, and the runtime writes the TF_CONFIG that
  MultiWorkerMirroredStrategy reads, every host a ``worker`` on port 8890, the layout
  the SageMaker TensorFlow toolkit uses (reference/sagemaker.md §3).
- **TF_CONFIG** (Vertex with several replicas, the local provider, Kubernetes): ``chief``
  (or legacy ``master``) is rank 0 and ``worker`` i is rank 1 + i; without a chief,
  worker 0 is the chief. Vertex is recognised by ``CLUSTER_SPEC`` or ``AIP_*`` variables.
- **Vertex, one replica**: Vertex sets no TF_CONFIG then, only ``CLUSTER_SPEC``.
- **Bare machine**: one host, rank 0.

Example:
>>> info = from_environment({"TF_CONFIG": '{"cluster": {"chief": ["a:2222"], '
...     '"worker": ["b:2222"]}, "task": {"type": "worker", "index": 0}}'}, root="/")
>>> info.rank, info.is_chief, info.num_hosts, info.provider
(1, False, 2, 'tf_config')
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cloudtrain_runtime.errors import ClusterError
from cloudtrain_runtime.paths import under_root

RESOURCE_CONFIG = "/opt/ml/input/config/resourceconfig.json"
SAGEMAKER_PORT = 8890  # the port the SageMaker TF toolkit uses for MWMS (reference/sagemaker.md §3)
HOSTS_ENV = "CLOUDTRAIN_HOSTS"
_VERTEX_MARKERS = ("CLUSTER_SPEC", "AIP_MODEL_DIR", "AIP_CHECKPOINT_DIR", "AIP_TENSORBOARD_LOG_DIR")
_CHIEF_TYPES = ("chief", "master")


@dataclass(frozen=True)
class ClusterInfo:
    """This replica's place in the job, whatever the provider.

    Attributes:
        provider: ``vertex``, ``sagemaker``, ``tf_config`` or ``bare``.
        task_type: the TF_CONFIG task type (``chief``, ``worker``); ``worker`` when bare.
        task_index: index within ``task_type``.
        rank: 0..num_hosts-1, the chief first.
        is_chief: whether this replica writes the export, logs and results.
        hosts: every host's ``address:port`` in rank order.
        devices_per_host: local accelerators (or emulated CPU devices) per host.
        device_kind: ``gpu``, ``tpu`` or ``cpu``, as found on this host.
        storage_mount: where durable storage is mounted in this container.
        tf_config: the TF_CONFIG the runtime must set itself (SageMaker), else None.
    """

    provider: str
    task_type: str
    task_index: int
    rank: int
    is_chief: bool
    hosts: tuple[str, ...]
    storage_mount: Path
    devices_per_host: int = 1
    device_kind: str = "cpu"
    tf_config: Mapping[str, Any] | None = None

    @property
    def num_hosts(self) -> int:
        return len(self.hosts)

    @property
    def task_id(self) -> str:
        """A stable, filesystem-safe name for this task, e.g. ``worker_1``."""
        return f"{self.task_type}_{self.task_index}"

    def with_devices(self, devices_per_host: int, device_kind: str) -> ClusterInfo:
        return replace(self, devices_per_host=devices_per_host, device_kind=device_kind)

    def __repr__(self) -> str:
        return (
            f"ClusterInfo(provider={self.provider!r}, task={self.task_id!r}, rank={self.rank}, "
            f"num_hosts={self.num_hosts}, devices_per_host={self.devices_per_host})"
        )


def from_environment(env: Mapping[str, str], root: str) -> ClusterInfo:
    """Detect the provider and this replica's role from ``env`` and files under ``root``.

    Raises:
        ClusterError: when TF_CONFIG or resourceconfig.json is malformed.
    """
    resource_config = under_root(root, RESOURCE_CONFIG)
    if resource_config.is_file() and not env.get("TF_CONFIG"):
        return _sagemaker(_read_json(resource_config), env, root)
    provider = "vertex" if any(env.get(name) for name in _VERTEX_MARKERS) else "tf_config"
    if env.get("TF_CONFIG"):
        return _tf_config(_parse_tf_config(env["TF_CONFIG"]), provider, root)
    if provider == "vertex":
        # Vertex sets no TF_CONFIG for a single replica (training/distributed-training).
        return _single("vertex", under_root(root, "/gcs"))
    return _single("bare", Path(root))


def _single(provider: str, mount: Path) -> ClusterInfo:
    return ClusterInfo(provider, "chief", 0, 0, True, ("localhost",), mount)


def _parse_tf_config(text: str) -> dict[str, Any]:
    try:
        tf_config = json.loads(text)
        cluster, task = tf_config["cluster"], tf_config["task"]
        if not isinstance(cluster, dict) or not isinstance(task, dict) or "type" not in task:
            raise TypeError
    except (json.JSONDecodeError, KeyError, TypeError):
        raise ClusterError(
            'TF_CONFIG must be JSON like {"cluster": {"worker": ["host:port", ...]}, '
            f'"task": {{"type": "worker", "index": 0}}}}. Received: TF_CONFIG={text[:200]!r}'
        ) from None
    return tf_config


def _tf_config(tf_config: Mapping[str, Any], provider: str, root: str) -> ClusterInfo:
    cluster, task = tf_config["cluster"], tf_config["task"]
    task_type, task_index = task["type"], int(task.get("index", 0))
    unsupported = sorted(set(cluster) - {"chief", "master", "worker"})
    if unsupported or task_type not in (*_CHIEF_TYPES, "worker"):
        raise ClusterError(
            f"TF_CONFIG has task types {unsupported or [task_type]}, but cloudtrain trains with "
            "all-reduce strategies only (chief and workers, no parameter servers or evaluators). "
            "Remove the ps/evaluator pools from the job."
        )
    chiefs = [address for kind in _CHIEF_TYPES for address in cluster.get(kind, [])]
    hosts = (*chiefs, *cluster.get("worker", []))
    rank = task_index if task_type in _CHIEF_TYPES else len(chiefs) + task_index
    if not 0 <= rank < len(hosts):
        raise ClusterError(f"TF_CONFIG task {task_type}:{task_index} is not in its cluster {cluster}.")
    mount = under_root(root, "/gcs") if provider == "vertex" else Path(root)
    return ClusterInfo(provider, task_type, task_index, rank, rank == 0, hosts, mount)


def _sagemaker(resource_config: Mapping[str, Any], env: Mapping[str, str], root: str) -> ClusterInfo:
    try:
        names, current = list(resource_config["hosts"]), resource_config["current_host"]
        rank = names.index(current)
    except (KeyError, ValueError):
        raise ClusterError(
            f"{RESOURCE_CONFIG} must list current_host among hosts. Received: {dict(resource_config)}"
        ) from None
    overrides = host_overrides(env.get(HOSTS_ENV, ""))
    hosts = tuple(overrides.get(name, f"{name}:{SAGEMAKER_PORT}") for name in names)
    tf_config = {"cluster": {"worker": list(hosts)}, "task": {"type": "worker", "index": rank}}
    mount = under_root(root, "/opt/ml")
    return ClusterInfo("sagemaker", "worker", rank, rank, rank == 0, hosts, mount, tf_config=tf_config)


def host_overrides(text: str) -> dict[str, str]:
    """Parse ``CLOUDTRAIN_HOSTS``: ``algo-1=127.0.0.1:41231,algo-2=127.0.0.1:41232``.

    SageMaker peers are named algo-1, algo-2, ... and reach each other on port 8890.
    When the local provider emulates several SageMaker hosts on one machine those
    names do not resolve and the hosts cannot share one port, so it maps each name to
    a loopback address and a free port, like an /etc/hosts entry with a port.

    Example:
    >>> host_overrides("algo-1=127.0.0.1:5000, algo-2=127.0.0.1:5001")
    {'algo-1': '127.0.0.1:5000', 'algo-2': '127.0.0.1:5001'}
    """
    overrides = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, address = item.partition("=")
        if not name or ":" not in address:
            raise ClusterError(
                f"{HOSTS_ENV} entries must look like algo-1=127.0.0.1:41231. Received: {item!r}"
            )
        overrides[name.strip()] = address.strip()
    return overrides


def wait_for_peers(
    info: ClusterInfo,
    *,
    attempts: int = 8,
    resolve: Callable[[str], object] = socket.gethostbyname,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Wait until every peer's host name resolves, backing off 1, 2, 4, ... 30 s.

    SageMaker: "Hostname information may not be immediately available ... We recommend
    adding a retry policy on hostname resolution" (reference/sagemaker.md §3).

    Raises:
        ClusterError: when a peer still does not resolve after ``attempts`` tries.
    """
    for host in {address.rsplit(":", 1)[0] for address in info.hosts}:
        _resolve_with_backoff(host, attempts, resolve, sleep)


def _resolve_with_backoff(
    host: str, attempts: int, resolve: Callable[[str], object], sleep: Callable[[float], None]
) -> None:
    for attempt in range(attempts):
        try:
            resolve(host)
            return
        except OSError:
            if attempt + 1 < attempts:
                sleep(min(2.0**attempt, 30.0))
    raise ClusterError(
        f"Peer host {host!r} did not resolve after {attempts} attempts. On SageMaker, check the "
        f"job's VPC DNS settings; when emulating hosts locally, map it in {HOSTS_ENV}."
    )


def _read_json(path: Path) -> Mapping[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ClusterError(f"Cannot read {path}: {err}") from None
