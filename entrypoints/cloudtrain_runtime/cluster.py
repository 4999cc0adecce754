"""Who this replica is: one ``ClusterInfo`` from whatever environment the provider gave.

The adapters of ``cloudtrain_runtime.environments`` are asked in order and the first
that recognises the environment describes the replica:

- **SageMaker** sets no TF_CONFIG; ``resourceconfig.json`` lists the hosts, rank is the
  index in that list, and the runtime writes the TF_CONFIG itself
  (``cloudtrain_runtime.providers.sagemaker``).
- **Vertex AI**, recognised by ``CLUSTER_SPEC`` or ``AIP_*`` variables: its TF_CONFIG as
  is, or one replica when it sets none (``cloudtrain_runtime.providers.vertex``).
- **TF_CONFIG** (the local provider, Kubernetes): ``chief`` (or legacy ``master``) is rank
  0 and ``worker`` i is rank 1 + i; without a chief, worker 0 is the chief
  (``cloudtrain_runtime.tfconfig``).
- **Bare machine**: one host, rank 0.

Example:
>>> info = from_environment({"TF_CONFIG": '{"cluster": {"chief": ["a:2222"], '
...     '"worker": ["b:2222"]}, "task": {"type": "worker", "index": 0}}'}, root="/")
>>> info.rank, info.is_chief, info.num_hosts, info.provider
(1, False, 2, 'tf_config')
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Mapping

from cloudtrain_runtime import environments
from cloudtrain_runtime.errors import ClusterError
from cloudtrain_runtime.replica import ClusterInfo

__all__ = ["ClusterInfo", "from_environment", "wait_for_peers"]


def from_environment(env: Mapping[str, str], root: str) -> ClusterInfo:
    """Detect the environment and this replica's role from ``env`` and files under ``root``.

    Raises:
        ClusterError: when the environment's description of the cluster is malformed or
            inconsistent (TF_CONFIG, resourceconfig.json, CLOUDTRAIN_HOSTS).
    """
    return environments.detect(env, root).cluster(env, root)


def wait_for_peers(
    info: ClusterInfo,
    *,
    attempts: int = 8,
    resolve: Callable[[str], object] = socket.gethostbyname,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Wait until every peer's host name resolves, backing off 1, 2, 4, ... 30 s.

    Only where the environment names peers before they resolve (its ``peer_hint``)
    and the job has more than one host; elsewhere this returns at once. SageMaker:
    "Hostname information may not be immediately available ... We recommend adding a
    retry policy on hostname resolution" (https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-training-algo-running-container.html,
    Distributed Training Configuration).

    Raises:
        ClusterError: when a peer still does not resolve after ``attempts`` tries.
    """
    hint = environments.named(info.provider).peer_hint
    if hint is None or info.num_hosts < 2:
        return
    for host in sorted({address.rsplit(":", 1)[0] for address in info.hosts}):
        _resolve_with_backoff(host, attempts, resolve, sleep, hint)


def _resolve_with_backoff(
    host: str, attempts: int, resolve: Callable[[str], object], sleep: Callable[[float], None], hint: str
) -> None:
    for attempt in range(attempts):
        try:
            resolve(host)
            return
        except UnicodeError:  # the IDNA codec refuses it: no retry can help
            raise ClusterError(f"Peer host {host!r} is not a host name that can resolve. {hint}") from None
        except OSError:
            if attempt + 1 < attempts:
                sleep(min(2.0**attempt, 30.0))
    raise ClusterError(f"Peer host {host!r} did not resolve after {attempts} attempts. {hint}")
