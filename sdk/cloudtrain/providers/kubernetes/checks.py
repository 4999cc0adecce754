"""What a JobSet refuses that the spec alone allows, as spec errors before anything is sent.

- A TPU job runs on one GKE TPU slice of a shape GKE offers for that chip
  (``nodes.csv``: the ``cloud.google.com/gke-tpu-topology`` rows).

Example:
>>> from cloudtrain.spec import JobSpec
>>> problems(JobSpec(name="demo", code={"module": "t"}, resources={"accelerator": "tpu-v5e", "per_host": 2}))
['resources.per_host: 2 is not a single-host tpu-v5e slice on GKE (1, 4, 8 chips).']
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cloudtrain import catalog
from cloudtrain.providers.kubernetes.apimachinery import dns1123_label
from cloudtrain.providers.kubernetes.nodes import labels
from cloudtrain.providers.kubernetes.settings import KubernetesSettings

if TYPE_CHECKING:
    from cloudtrain.spec import JobSpec


def problems(spec: JobSpec) -> list[str]:
    """One message per thing the JobSet of ``spec`` could not run, field first."""
    return _tpu_problems(spec) + _queue_problems(spec)


def _queue_problems(spec: JobSpec) -> list[str]:
    """``capacity: queue`` names a Kueue LocalQueue: here, or in ``kubernetes.queue``."""
    capacity = spec.resources.capacity
    if capacity.mode != "queue":
        return []
    if capacity.name is None and KubernetesSettings.of(spec).queue is None:
        return [
            "resources.capacity: capacity: queue on Kubernetes goes through a Kueue LocalQueue; name it with "
            "resources.capacity.name, kubernetes.queue, or submit --queue NAME."
        ]
    name = capacity.name
    wrong = None if name is None else dns1123_label(name)
    if name is None or wrong is None:
        return []
    return [
        f"resources.capacity.name: {name[:80]!r} is not a LocalQueue name: {wrong} (kubectl get localqueues)."
    ]


def _tpu_problems(spec: JobSpec) -> list[str]:
    res = spec.resources
    if catalog.accelerators()[res.accelerator].kind != "tpu":
        return []
    chips = sorted(int(row.match.split("/")[1]) for row in labels("tpu_topology", res.accelerator))
    if res.per_host not in chips:
        return [
            f"resources.per_host: {res.per_host} is not a single-host {res.accelerator} slice on GKE "
            f"({', '.join(map(str, chips)) or 'none known'} chips)."
        ]
    return []
