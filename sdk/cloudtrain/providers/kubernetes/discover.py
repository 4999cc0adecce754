"""The kubeconfig's choices, as ``kubectl`` makes them: the current context and its namespace.

``kubectl`` reads the files of ``$KUBECONFIG`` (a list, ``:`` between paths on Linux and
macOS), else ``~/.kube/config``, merges them, and takes the first ``current-context`` any
of them sets and the first definition of each context
(https://kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig/,
"Merging kubeconfig files"). In a pod without a kubeconfig, the namespace is the service
account's (``/var/run/secrets/kubernetes.io/serviceaccount/namespace``). The files are
read as YAML here, without the ``kubernetes`` client, so a spec's defaults cost no import.

Example:
>>> discover({"KUBECONFIG": "/nonexistent", "HOME": "/nonexistent"})
{}
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from cloudtrain.provider.base import Discovered
from cloudtrain.provider.discovery import home

KUBECONFIG_VARIABLE = "KUBECONFIG"
DEFAULT_KUBECONFIG = Path(".kube") / "config"
# Set by the kubelet in every container (https://kubernetes.io/docs/concepts/services-networking/connect-applications-service/#environment-variables).
IN_CLUSTER_VARIABLE = "KUBERNETES_SERVICE_HOST"
IN_CLUSTER_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
# A kubeconfig is a page of YAML; past this it is not one.
MAX_KUBECONFIG_BYTES = 1_000_000


def discover(
    environ: Mapping[str, str], *, in_cluster_namespace: Path = IN_CLUSTER_NAMESPACE
) -> dict[str, Discovered]:
    """``context`` and ``namespace`` as ``kubectl`` would use them; none where nothing says."""
    files = kubeconfig_files(environ)
    configs = [(path, config) for path in files if (config := _read(path)) is not None]
    current = next(((path, c["current-context"]) for path, c in configs if c.get("current-context")), None)
    if current is None:
        return _in_cluster(environ, in_cluster_namespace)
    path, name = current
    found = {"context": Discovered(str(name), str(path))}
    namespace = _namespace_of(configs, str(name))
    if namespace is not None:
        found["namespace"] = Discovered(namespace[1], str(namespace[0]))
    return found


def kubeconfig_files(environ: Mapping[str, str]) -> list[Path]:
    """The kubeconfig files ``kubectl`` reads, in order."""
    listed = environ.get(KUBECONFIG_VARIABLE, "")
    if listed:
        return [Path(part) for part in listed.split(os.pathsep) if part]
    return [home(environ) / DEFAULT_KUBECONFIG]


def _namespace_of(configs: list[tuple[Path, dict[str, Any]]], name: str) -> tuple[Path, str] | None:
    """Where context ``name`` is first defined, and its namespace, if it names one."""
    for path, config in configs:
        for context in config.get("contexts") or []:
            if isinstance(context, dict) and context.get("name") == name:
                namespace = (context.get("context") or {}).get("namespace")
                return (path, str(namespace)) if namespace else None
    return None


def _in_cluster(environ: Mapping[str, str], namespace_file: Path) -> dict[str, Discovered]:
    """The pod's own namespace, when this runs in a pod (``$KUBERNETES_SERVICE_HOST``) without a kubeconfig."""
    if not environ.get(IN_CLUSTER_VARIABLE):
        return {}
    try:
        namespace = namespace_file.read_text().strip()
    except OSError:
        return {}
    return {"namespace": Discovered(namespace, str(namespace_file))} if namespace else {}


def _read(path: Path) -> dict[str, Any] | None:
    """The kubeconfig at ``path`` as a mapping; None when it is absent, unreadable or not one.

    A broken kubeconfig gives no default here; ``cloudtrain check`` and submit read it
    with the ``kubernetes`` client, which says what is wrong with it.
    """
    try:
        if path.stat().st_size > MAX_KUBECONFIG_BYTES:
            return None
        config = yaml.safe_load(path.read_text())
    except (OSError, ValueError, yaml.YAMLError):
        return None
    return config if isinstance(config, dict) else None
