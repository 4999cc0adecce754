"""A namespace's GPU quota: what a JobSet needs of it, read from the namespace's ResourceQuotas.

On a cluster, the quota a job meets is the namespace's ResourceQuota on the GPU resource
(``requests.nvidia.com/gpu``: "the sum of requests across all pods in a non-terminal
state", kubernetes.io/docs/concepts/policy/resource-quotas, "Resource quota for
extended resources"). A pod over it is refused at admission with 403 "exceeded quota";
the JobSet's Job then stays short of pods. Every ResourceQuota of the namespace that
names the resource applies, so the tightest one is read: ``status.hard`` is its limit and
``status.used`` what the namespace holds now.

Example:
>>> [need.name for need in needs("nvidia.com/gpu", 8, namespace="training", region="us-east-1")]
['requests.nvidia.com/gpu in namespace training']
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from cloudtrain import catalog
from cloudtrain.errors import CloudtrainError
from cloudtrain.provider.quotas import QuotaNeed, QuotaReading
from cloudtrain.providers.kubernetes.clients import (
    DEFAULT_NAMESPACE,
    ApiCall,
    KubernetesClients,
    require_kubernetes,
    with_retries,
)

if TYPE_CHECKING:
    from cloudtrain.planning import Plan


def needs(gpu_resource: str, gpus: int, *, namespace: str, region: str) -> list[QuotaNeed]:
    """The GPU quota a JobSet of ``gpus`` GPUs draws on in ``namespace``."""
    resource = f"requests.{gpu_resource}"
    ask = f"ask the cluster's admin to raise {resource}: kubectl describe resourcequota -n {namespace}"
    return [QuotaNeed("kubernetes", region, f"{resource} in namespace {namespace}", gpus, "GPUs", ask)]


def plan_needs(plan: Plan) -> list[QuotaNeed]:
    """What ``plan``'s JobSet needs of its namespace's quota; nothing for a job without GPUs."""
    accelerator = catalog.accelerators().get(plan.spec.resources.accelerator)
    if accelerator is None or accelerator.kind != "gpu":
        return []
    settings = plan.spec.kubernetes  # type: ignore[attr-defined]
    namespace = settings.namespace or DEFAULT_NAMESPACE
    return needs(
        settings.gpu_resource, plan.hosts * plan.devices_per_host, namespace=namespace, region=plan.region
    )


def read(plan: Plan, needs: list[QuotaNeed], clients: KubernetesClients) -> list[QuotaReading]:
    """Each need's tightest ResourceQuota in the job's namespace: its hard limit and what is used.

    Never raises for a read the API server refuses: the reading says why instead.
    """
    namespace = plan.spec.kubernetes.namespace or DEFAULT_NAMESPACE  # type: ignore[attr-defined]
    try:
        quotas = _resource_quotas(namespace, clients)
    except CloudtrainError as failed:
        return [QuotaReading(need, None, None, str(failed).splitlines()[0]) for need in needs]
    return [_tightest(need, quotas, namespace) for need in needs]


def _tightest(need: QuotaNeed, quotas: list[Any], namespace: str) -> QuotaReading:
    from kubernetes.utils import parse_quantity

    resource = need.name.split(" ", 1)[0]
    found = [
        (
            quota.metadata.name,
            float(parse_quantity(quota.status.hard[resource])),
            float(parse_quantity((quota.status.used or {}).get(resource, "0"))),
        )
        for quota in quotas
        if quota.status is not None and resource in (quota.status.hard or {})
    ]
    if not found:
        return QuotaReading(need, None, None, f"no ResourceQuota of namespace {namespace} limits {resource}")
    name, limit, used = min(found, key=lambda item: item[1] - item[2])
    ask = f"ask the cluster's admin to raise {resource} in ResourceQuota {name}: kubectl describe resourcequota {name} -n {namespace}"
    return QuotaReading(dataclasses.replace(need, increase=ask), limit, used)


def _resource_quotas(namespace: str, clients: KubernetesClients) -> list[Any]:
    require_kubernetes()
    call = ApiCall("list", "resourcequotas", namespace)
    listed = with_retries(
        lambda: clients.core().list_namespaced_resource_quota(namespace), call, sleep=clients.sleep
    )
    return list(listed.items)
