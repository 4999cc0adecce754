"""What Vertex AI refuses, checked before anything is rendered or sent."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from cloudtrain import catalog
from cloudtrain.providers.vertex.settings import VertexSettings

if TYPE_CHECKING:
    from cloudtrain.spec import JobSpec

# capacity.name for ReservationAffinity ANY_RESERVATION: "Consume any reservation available, falling back
# to on-demand" (google-cloud-aiplatform 2.7.0, aiplatform_v1/types/reservation_affinity.py).
ANY_RESERVATION = "any"
RESERVATION = re.compile(
    r"projects/(?P<project>[a-z0-9-]{1,63})/zones/(?P<zone>[a-z]+(-[a-z]+)+\d+-[a-z])/reservations/(?P<name>[a-z]([-a-z0-9]{0,61}[a-z0-9])?)"
)


def problems(spec: JobSpec) -> list[str]:
    """Every reason ``spec`` cannot run on Vertex AI, one message each."""
    found = _tpu_problems(spec) + _capacity_problems(spec)
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


def _capacity_problems(spec: JobSpec) -> list[str]:
    """What Vertex AI states against the capacity mode (which modes it offers: ``catalog/capacity.csv``).

    Flex-start's other rules always hold here: its timeout of at most 7 days is every
    Vertex job's (``Vertex.max_runtime_s``), and every worker pool gets the same machine.
    """
    capacity, res = spec.resources.capacity, spec.resources
    flex = catalog.capacity_offers("vertex")["flex"]  # its GPUs: schedule-jobs-dws, Requirements
    if capacity.mode == "flex" and not flex.serves(res.accelerator):
        return [
            f"resources.capacity: flex-start (Dynamic Workload Scheduler) does not serve {res.accelerator} on "
            f"Vertex AI. Use one of {', '.join(flex.accelerators)}, or capacity: spot or on_demand."
        ]
    if capacity.mode == "reservation" and capacity.name != ANY_RESERVATION:
        return _reservation_problems(str(capacity.name), VertexSettings.of(spec).region)
    return []


def _reservation_problems(name: str, region: str) -> list[str]:
    """A reservation named by its full resource name, in a zone of the job's region.

    ReservationAffinity.values: "This must be the full resource name of the reservation"
    (google-cloud-aiplatform 2.7.0, aiplatform_v1/types/reservation_affinity.py); a zonal
    reservation serves VMs of its zone only (cloud.google.com/compute/docs/instances/reservations-overview).
    """
    match = RESERVATION.fullmatch(name)
    if match is None:
        return [
            f"resources.capacity.name: Vertex AI names a reservation by its full resource name, "
            f"projects/PROJECT/zones/ZONE/reservations/NAME (received {name[:80]!r}), or use any."
        ]
    if not match["zone"].startswith(f"{region}-"):
        return [
            f"resources.capacity.name: the reservation is in zone {match['zone']}, outside vertex.region "
            f"{region}. Set vertex.region to {match['zone'].rsplit('-', 1)[0]}, or name a reservation in {region}."
        ]
    return []
