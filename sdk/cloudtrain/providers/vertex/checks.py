"""What Vertex AI refuses, checked before anything is rendered or sent."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cloudtrain import catalog
from cloudtrain.providers.vertex.settings import VertexSettings

if TYPE_CHECKING:
    from cloudtrain.spec import JobSpec

# Dynamic Workload Scheduler serves these GPUs only (https://cloud.google.com/vertex-ai/docs/training/schedule-jobs-dws).
FLEX_START_ACCELERATORS = ("l4", "a100-40gb", "a100-80gb", "h100-80gb", "h200-141gb")


def problems(spec: JobSpec) -> list[str]:
    """Every reason ``spec`` cannot run on Vertex AI, one message each."""
    found = _tpu_problems(spec) + _flex_start_problems(spec)
    vertex = VertexSettings.of(spec)
    if vertex.tensorboard and not vertex.service_account:
        found.append(
            "vertex.tensorboard needs vertex.service_account: Vertex AI refuses TensorBoard uploads "
            "without one. Set vertex.service_account."
        )
    region = catalog.region_problem("vertex", "Vertex AI", vertex.region)
    if region:
        found.append(region)
    if vertex.project is None:
        found.append("vertex.project is required on Vertex AI. Set it to your Google Cloud project ID.")
    return found


def _tpu_problems(spec: JobSpec) -> list[str]:
    res = spec.resources
    if catalog.accelerators()[res.accelerator].kind != "tpu":
        return []
    found = []
    if res.hosts > 1:
        found.append(
            f"resources.hosts: TPU jobs on Vertex AI run as one worker pool with one replica, "
            f"but resources.hosts={res.hosts}. Set resources.hosts: 1 and choose the slice "
            f"size with resources.per_host (chips)."
        )
    if res.spot and res.per_host > 8:
        found.append("resources.spot: Vertex AI does not support Spot VMs with TPU Pods.")
    return found


def _flex_start_problems(spec: JobSpec) -> list[str]:
    vertex, res = VertexSettings.of(spec), spec.resources
    if not vertex.flex_start:
        if vertex.max_wait is not None:
            return [
                "vertex.max_wait only applies with vertex.flex_start: true. Remove it, or set flex_start."
            ]
        return []
    if res.spot:
        return ["vertex.flex_start and resources.spot are two different schedulers. Choose one."]
    if res.accelerator not in FLEX_START_ACCELERATORS:
        return [
            f"vertex.flex_start: Dynamic Workload Scheduler does not serve {res.accelerator}. "
            f"Use one of {', '.join(FLEX_START_ACCELERATORS)}, or set flex_start: false."
        ]
    return []
