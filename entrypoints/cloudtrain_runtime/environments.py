"""The environment adapters, in the order they are asked: each provider's, then the neutral ones.

The first adapter that recognises the environment describes the replica: a provider's
own (``cloudtrain_runtime.providers``), then any TF_CONFIG (the local provider,
Kubernetes), then the bare machine, which always matches: one host, rank 0, the
config's storage URIs.

Example:
>>> detect({"TF_CONFIG": '{"cluster": {}, "task": {"type": "worker"}}'}, "/").provider
'tf_config'
>>> detect({}, "/").provider
'bare'
"""

from __future__ import annotations

from collections.abc import Mapping

from cloudtrain_runtime import providers, tfconfig
from cloudtrain_runtime.replica import ClusterInfo, Environment, single_replica


class BareMachine(Environment):
    """No cluster described anywhere: a single replica, the chief, on this machine."""

    provider = "bare"
    label = "bare machine"

    def detects(self, env: Mapping[str, str], root: str) -> bool:
        return True

    def cluster(self, env: Mapping[str, str], root: str) -> ClusterInfo:
        return single_replica(self.provider, self.mount(root))


ALL: tuple[Environment, ...] = (*providers.ENVIRONMENTS, tfconfig.ENVIRONMENT, BareMachine())
_BY_PROVIDER = {environment.provider: environment for environment in ALL}


def detect(env: Mapping[str, str], root: str) -> Environment:
    """The first adapter that recognises ``env`` and the files under ``root``."""
    return next(environment for environment in ALL if environment.detects(env, root))


def named(provider: str) -> Environment:
    """The adapter that reports ``provider`` as ``ClusterInfo.provider``.

    Raises:
        ValueError: when no adapter reports ``provider``.
    """
    if provider not in _BY_PROVIDER:
        raise ValueError(
            f"No environment adapter reports provider {provider!r}; known: {sorted(_BY_PROVIDER)}"
        )
    return _BY_PROVIDER[provider]
