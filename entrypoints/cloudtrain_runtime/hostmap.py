"""``CLOUDTRAIN_HOSTS``: the host names of an emulated cluster, each mapped to a loopback address.

A provider names its hosts (SageMaker ``algo-1``, ``algo-2``; JobSet
``<jobset>-host-0-0.<jobset>``) and they reach each other on one port. When the local
provider emulates several hosts on one machine those names do not resolve and the hosts
cannot share one port, so it maps each name to a loopback address and a free port, like
an /etc/hosts entry with a port; the environment puts the mapped addresses in its
cluster.

Example:
>>> host_overrides("algo-1=127.0.0.1:5000, algo-2=127.0.0.1:5001", example="algo-1")
{'algo-1': '127.0.0.1:5000', 'algo-2': '127.0.0.1:5001'}
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from cloudtrain_runtime.errors import ClusterError
from cloudtrain_runtime.inputs import duplicates, is_address, shown

HOSTS_ENV = "CLOUDTRAIN_HOSTS"
# Any DNS-style name is accepted, nothing a TF_CONFIG address or CLOUDTRAIN_HOSTS entry
# could be confused by.
_HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")


def host_overrides(text: str, *, example: str) -> dict[str, str]:
    """Parse ``CLOUDTRAIN_HOSTS``: ``algo-1=127.0.0.1:41231,algo-2=127.0.0.1:41232``.

    ``example`` is a host name of the environment, for the error message (``algo-1``).

    Raises:
        ClusterError: for an entry that is not ``name=host:port`` or a name given twice.
    """
    overrides: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, address = (part.strip() for part in item.partition("="))
        if not is_host_name(name) or not is_address(address):
            raise ClusterError(
                f"{HOSTS_ENV} entries must look like {example}=127.0.0.1:41231. Received: {shown(item)}"
            )
        if name in overrides:
            raise ClusterError(
                f"{HOSTS_ENV} maps {name!r} more than once. Received: {HOSTS_ENV}={shown(text)}"
            )
        overrides[name] = address
    return overrides


def is_host_name(value: object) -> bool:
    return isinstance(value, str) and _HOST_NAME.fullmatch(value) is not None


def addresses(names: list[str], overrides: Mapping[str, str], *, port: int) -> tuple[str, ...]:
    """Every host's ``address:port``: ``port`` on its name, unless ``CLOUDTRAIN_HOSTS`` maps it.

    Raises:
        ClusterError: when the overrides give two hosts the same address.
    """
    hosts = tuple(overrides.get(name, f"{name}:{port}") for name in names)
    repeated = duplicates(hosts)
    if repeated:
        raise ClusterError(
            f"{HOSTS_ENV} maps more than one host to {shown(repeated[0])}; give every host its own port."
        )
    return hosts
