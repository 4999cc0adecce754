"""The kubeconfig's choices, as ``kubectl`` makes them: the current context and its namespace.

``kubectl`` takes the first ``current-context`` its kubeconfig files set and that
context's namespace (``kubeconfig`` reads and merges the files as it does). In a pod
without a kubeconfig, the namespace is the service account's
(``/var/run/secrets/kubernetes.io/serviceaccount/namespace``). Nothing here imports the
``kubernetes`` client, so a spec's defaults cost no import; and only a job sent to
Kubernetes asks (``Kubernetes.discover_target_settings``), so a broken kubeconfig never
stops a user who does not use it.

Example:
>>> discover({"KUBECONFIG": "/nonexistent", "HOME": "/nonexistent"})
{}
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from cloudtrain.provider.base import Discovered
from cloudtrain.providers.kubernetes import kubeconfig

# Set by the kubelet in every container (https://kubernetes.io/docs/concepts/services-networking/connect-applications-service/#environment-variables).
IN_CLUSTER_VARIABLE = "KUBERNETES_SERVICE_HOST"
IN_CLUSTER_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def discover(
    environ: Mapping[str, str], *, in_cluster_namespace: Path = IN_CLUSTER_NAMESPACE
) -> dict[str, Discovered]:
    """``context`` and ``namespace`` as ``kubectl`` would use them; none where nothing says.

    Raises:
        KubeconfigError: a kubeconfig file is there but cannot be read as one.
    """
    config = kubeconfig.read(environ)
    if config.current is None:
        return _in_cluster(environ, in_cluster_namespace)
    found = {"context": Discovered(config.current.name, str(config.current.path))}
    context = config.context(None)
    namespace = context.body.get("namespace") if context else None
    if context is not None and namespace:
        found["namespace"] = Discovered(str(namespace), str(context.path))
    return found


def _in_cluster(environ: Mapping[str, str], namespace_file: Path) -> dict[str, Discovered]:
    """The pod's own namespace, when this runs in a pod (``$KUBERNETES_SERVICE_HOST``) without a kubeconfig."""
    if not environ.get(IN_CLUSTER_VARIABLE):
        return {}
    namespace = kubeconfig.in_cluster_namespace(namespace_file)
    return {"namespace": Discovered(namespace, str(namespace_file))} if namespace else {}
