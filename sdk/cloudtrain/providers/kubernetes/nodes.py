"""The nodes a Kubernetes job runs on: the labels that select them, their type, and their price.

A cluster has whatever nodes its owner gave it, so the job's machine is not chosen from a
catalog as on the clouds' training services: ``kubernetes.node_type`` names it (a GCE
machine type on GKE, an EC2 instance type on EKS, the value of the node label
``node.kubernetes.io/instance-type``), and the catalog's Kubernetes rows (``catalog/``,
``generate_catalog``) give its hardware and price. Without one, the job runs on any node
that has the accelerators (``resources``), and cannot be priced.

The node labels a pod may require (spot capacity, the node type, TPU slices) are rows of
``nodes.csv``, each with the page that documents it.

Example:
>>> from cloudtrain.spec import JobSpec
>>> spec = JobSpec(name="demo", code={"module": "t"}, resources={"accelerator": "a10g"},
...                kubernetes={"node_type": "g5.xlarge", "region": "us-east-1"})
>>> machine(spec).machine_type, unpriced(spec)
('g5.xlarge', None)
>>> machine(spec.model_copy(update={"kubernetes": KubernetesSettings()})).source
'any node with 1 × a10g (kubernetes.node_type names its type)'
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cloudtrain import catalog
from cloudtrain.errors import SpecError, did_you_mean
from cloudtrain.providers.kubernetes.settings import KubernetesSettings

if TYPE_CHECKING:
    from cloudtrain.spec import JobSpec

PROVIDER = "kubernetes"
NODES_CSV = Path(__file__).with_name("nodes.csv")
# The extended resource of a TPU chip on GKE (https://cloud.google.com/kubernetes-engine/docs/how-to/tpus).
TPU_RESOURCE = "google.com/tpu"


@dataclass(frozen=True)
class NodeLabel:
    """A node label a pod may require, and the page that documents it (``nodes.csv``)."""

    purpose: str
    match: str
    label: str
    value: str
    source: str


@functools.cache
def node_labels() -> tuple[NodeLabel, ...]:
    """The rows of ``nodes.csv``: the labels spot nodes, node types and TPU nodes carry."""
    with NODES_CSV.open(newline="") as rows:
        return tuple(NodeLabel(**row) for row in csv.DictReader(rows))


def labels(purpose: str, prefix: str = "") -> list[NodeLabel]:
    """The ``nodes.csv`` rows for ``purpose`` whose match starts with ``prefix`` (an accelerator)."""
    return [
        row for row in node_labels() if row.purpose == purpose and row.match.split("/")[0].startswith(prefix)
    ]


def machine(spec: JobSpec) -> catalog.Machine:
    """The node each pod of ``spec``'s job takes: the catalog's row for ``kubernetes.node_type``, or any node.

    Raises:
        SpecError: the node type is in the catalog, with other accelerators or another count.
    """
    settings, res = KubernetesSettings.of(spec), spec.resources
    rows = [m for m in catalog.machines(PROVIDER) if m.machine_type == settings.node_type]
    if settings.node_type is None or not rows:
        return _any_node(spec)
    found = next((m for m in rows if m.accelerator == res.accelerator), None)
    if found is None:
        carried = " or ".join(sorted({m.accelerator for m in rows}))
        raise SpecError(
            f"kubernetes.node_type: {settings.node_type!r} carries {carried}, not {res.accelerator}. "
            f"Set resources.accelerator: {rows[0].accelerator}, or name a node type with {res.accelerator}."
        )
    if found.devices != res.per_host:
        raise SpecError(
            f"kubernetes.node_type: {settings.node_type!r} has {found.devices} × {found.accelerator} per node, "
            f"but resources.per_host is {res.per_host}. Set resources.per_host: {found.devices}, "
            f"or name a node type with {res.per_host}."
        )
    return found


def unpriced(spec: JobSpec) -> str | None:
    """Why ``spec``'s job cannot be priced from the catalog; None when it can."""
    settings = KubernetesSettings.of(spec)
    if settings.node_type is None:
        return (
            "the job runs on any node of the cluster, of no known type: set kubernetes.node_type "
            "(a GCE or EC2 machine type, e.g. g5.xlarge) and kubernetes.region to price it"
        )
    types = sorted({m.machine_type for m in catalog.machines(PROVIDER)})
    if settings.node_type not in types:
        return (
            f"kubernetes.node_type {settings.node_type!r} is not a node type the catalog prices."
            f"{did_you_mean(settings.node_type, types, noun='node types')}"
        )
    if settings.region is None:
        return f"set kubernetes.region, the region of the {settings.node_type} nodes, to price them"
    regions = sorted(
        {
            row["region"]
            for row in catalog.rows("prices.csv")
            if (row["provider"], row["machine_type"]) == (PROVIDER, settings.node_type)
        }
    )
    if settings.region not in regions:
        return (
            f"kubernetes.region {settings.region!r} is not a region the catalog prices {settings.node_type} in."
            f"{did_you_mean(settings.region, regions, noun='regions')}"
        )
    return None


def _any_node(spec: JobSpec) -> catalog.Machine:
    """A node the catalog does not describe: the accelerators the spec asks for, and no more is known."""
    settings, res = KubernetesSettings.of(spec), spec.resources
    accelerator = catalog.accelerators()[res.accelerator]
    count = 0 if accelerator.kind == "cpu" else res.per_host
    resource = {"gpu": settings.gpu_resource, "tpu": TPU_RESOURCE}.get(accelerator.kind, "")
    what = f"{count} × {res.accelerator}" if count else "its CPUs"
    named = (
        f"a {settings.node_type} node with {what} (not in the catalog)"
        if settings.node_type
        else f"any node with {what} (kubernetes.node_type names its type)"
    )
    return catalog.Machine(
        provider=PROVIDER,
        machine_type=settings.node_type or "",
        accelerator=res.accelerator,
        provider_accelerator=resource,
        accelerator_count=count,
        accelerator_memory_gb=accelerator.memory_gb,
        vcpus=0,
        memory_gb=0,
        intra_host="",
        network_gbps=0,
        rdma="",
        tpu_topology="",
        source=named,
    )
