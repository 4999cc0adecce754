"""Kubernetes: a Plan becomes a JobSet (kubernetes-sigs/jobset), submitted with the official client.

The provider object is ``backend.provider``. The rooms: ``settings`` (the ``kubernetes:``
spec section), ``nodes`` (the node a job runs on: its type from the catalog, or any node
of the cluster, and whether it can be priced), ``checks`` (what a JobSet refuses),
``render`` (the JobSet, pure), ``storage`` (how each pod reaches the storage root:
``gs://`` mounted, ``s3://`` copied in and synced out), ``outputs`` (where the job's
artifacts land), ``upload`` (the code bundle to the storage root, once), ``emulate`` (the
pods JobSet would start, run by the local provider), ``clients`` (the ``kubernetes``
client: configuration, retries, error translation), ``job`` (submit, attach, status,
logs, cancel, list), ``discover`` (the kubeconfig's context and namespace) and
``setup_checks`` (what the first submit needs). The ``kubernetes`` library is imported
inside ``clients`` only; ``generate_catalog`` writes ``catalog/`` (GKE and EKS node prices).
"""

from __future__ import annotations

from typing import Any

from cloudtrain import lazy

# public name -> the module that defines it, imported on first use: importing one room
# (``kubernetes.settings``, read whenever a spec is built) loads no other.
_EXPORTS = {
    "Kubernetes": "cloudtrain.providers.kubernetes.backend",
    "KubernetesClients": "cloudtrain.providers.kubernetes.clients",
    "KubernetesJob": "cloudtrain.providers.kubernetes.job",
    "provider": "cloudtrain.providers.kubernetes.backend",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    return lazy.attribute(__name__, _EXPORTS, name)
