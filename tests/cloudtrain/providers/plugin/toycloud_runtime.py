"""Toy Cloud inside its container, as a plugin ships it to the runtime: an environment of its own.

The runtime finds it through the ``cloudtrain.runtime_environments`` entry point. A Toy
Cloud host is recognised by ``TOYCLOUD_JOB``, runs one replica, and opens ``toy://B/p``
at ``/toy/B/p``, where Toy Cloud mounts its buckets.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import ClassVar

from cloudtrain_runtime.replica import ClusterInfo, Environment, single_replica


class ToyCloud(Environment):
    provider = "toycloud"
    label = "Toy Cloud"
    mounts: ClassVar[Mapping[str, str]] = MappingProxyType({"toy://": "/toy/"})

    def detects(self, env: Mapping[str, str], root: str) -> bool:
        return bool(env.get("TOYCLOUD_JOB"))

    def cluster(self, env: Mapping[str, str], root: str) -> ClusterInfo:
        return single_replica(self.provider, self.mount(root))


ENVIRONMENT = ToyCloud()
