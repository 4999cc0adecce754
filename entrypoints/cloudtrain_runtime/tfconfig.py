"""TF_CONFIG, the cluster description TensorFlow reads, checked and turned into a ``ClusterInfo``.

``chief`` (or the legacy ``master``) is rank 0 and ``worker`` i is rank 1 + i; without
a chief, worker 0 is the chief. Every malformed or inconsistent TF_CONFIG ends in one
``ClusterError`` line: not JSON or not shaped like the example below, a task type
other than chief and worker, a pool that is not a list of ``host:port`` strings, two
chiefs, an address listed twice, or a task index that is not a whole number within
its pool (an index of -1 would otherwise make a worker a second chief).

``ENVIRONMENT`` is the adapter for any environment that sets TF_CONFIG and nothing
more specific (the local provider, Kubernetes).

Example:
>>> info = cluster_info('{"cluster": {"chief": ["a:2222"], "worker": ["b:2222"]}, '
...     '"task": {"type": "worker", "index": 0}}', provider="tf_config", mount=Path("/"))
>>> info.rank, info.is_chief, info.hosts
(1, False, ('a:2222', 'b:2222'))
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cloudtrain_runtime.errors import ClusterError
from cloudtrain_runtime.inputs import duplicates, is_address, is_count, loads, shown
from cloudtrain_runtime.replica import ClusterInfo, Environment

TF_CONFIG_ENV = "TF_CONFIG"
CHIEF_TYPES = ("chief", "master")
TASK_TYPES = (*CHIEF_TYPES, "worker")
_SHAPE = '{"cluster": {"worker": ["host:port", ...]}, "task": {"type": "worker", "index": 0}}'


def cluster_info(text: str, *, provider: str, mount: Path) -> ClusterInfo:
    """This replica's place in the cluster TF_CONFIG ``text`` describes.

    Raises:
        ClusterError: when TF_CONFIG is malformed or describes an inconsistent cluster.
    """
    tf_config = _parse(text)
    cluster, task = tf_config["cluster"], tf_config["task"]
    task_type = task["type"]
    unsupported = sorted(set(cluster) - set(TASK_TYPES))
    if unsupported or task_type not in TASK_TYPES:
        raise ClusterError(
            f"TF_CONFIG has task types {unsupported or [task_type]}, but cloudtrain trains with "
            "all-reduce strategies only (chief and workers, no parameter servers or evaluators). "
            "Remove the ps/evaluator pools from the job."
        )
    pools = {kind: _pool(cluster, kind) for kind in TASK_TYPES}
    chiefs = (*pools["chief"], *pools["master"])
    hosts = (*chiefs, *pools["worker"])
    _check_consistent(chiefs, hosts)
    index = task.get("index", 0)
    if not is_count(index) or index >= len(pools[task_type]):
        raise ClusterError(
            f"TF_CONFIG task {task_type}:{shown(index)} is not in its cluster {shown(cluster)}. "
            f"task.index must be a whole number from 0 to one less than the size of cluster.{task_type}."
        )
    rank = index if task_type in CHIEF_TYPES else len(chiefs) + index
    return ClusterInfo(provider, task_type, index, rank, rank == 0, hosts, mount)


def _parse(text: str) -> Mapping[str, Any]:
    try:
        tf_config = loads(text)
        if not isinstance(tf_config, dict):
            raise TypeError
        cluster, task = tf_config["cluster"], tf_config["task"]
        if (
            not isinstance(cluster, dict)
            or not isinstance(task, dict)
            or not isinstance(task.get("type"), str)
        ):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        raise ClusterError(
            f"TF_CONFIG must be JSON like {_SHAPE}. Received: TF_CONFIG={text[:200]!r}"
        ) from None
    return tf_config


def _pool(cluster: Mapping[str, Any], kind: str) -> tuple[str, ...]:
    addresses = cluster.get(kind, [])
    if not isinstance(addresses, list) or not all(map(is_address, addresses)):
        raise ClusterError(
            f"TF_CONFIG cluster.{kind} must be a list of 'host:port' strings, "
            f"e.g. ['10.0.0.2:2222']. Received: cluster.{kind}={shown(addresses)}"
        )
    return tuple(addresses)


def _check_consistent(chiefs: tuple[str, ...], hosts: tuple[str, ...]) -> None:
    if len(chiefs) > 1:
        raise ClusterError(
            f"TF_CONFIG names {len(chiefs)} chiefs {shown(list(chiefs))}; a cluster has at most one "
            "(in cluster.chief, or cluster.master in legacy AI Platform jobs, not both)."
        )
    repeated = duplicates(hosts)
    if repeated:
        raise ClusterError(
            f"TF_CONFIG lists {shown(repeated[0])} for more than one task; every task needs its own host:port."
        )


class PlainTfConfig(Environment):
    """Any environment that sets TF_CONFIG and nothing more specific: storage URIs as configured."""

    provider = "tf_config"
    label = "TF_CONFIG"

    def detects(self, env: Mapping[str, str], root: str) -> bool:
        return bool(env.get(TF_CONFIG_ENV))

    def cluster(self, env: Mapping[str, str], root: str) -> ClusterInfo:
        return cluster_info(env[TF_CONFIG_ENV], provider=self.provider, mount=self.mount(root))


ENVIRONMENT = PlainTfConfig()
