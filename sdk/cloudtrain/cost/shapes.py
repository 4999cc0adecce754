"""Every layout of the job's replica count on every provider: one big host, or several smaller ones.

Each layout keeps the planned replica count, so the global batch and the scaled
learning rate do not change; a layout the spec's strategy cannot drive is left out,
with the reason as a note.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from cloudtrain import catalog
from cloudtrain.errors import SpecError
from cloudtrain.messages import counted
from cloudtrain.planning import choose_strategy

if TYPE_CHECKING:
    from cloudtrain.planning import Plan
    from cloudtrain.spec import JobSpec


@dataclass(frozen=True)
class Shape:
    """``hosts`` × one machine shape of one provider."""

    provider: str
    machine: catalog.Machine
    hosts: int

    @property
    def devices(self) -> int:
        return self.machine.devices * self.hosts


def enumerate_shapes(planned: Plan, providers: tuple[str, ...]) -> tuple[list[Shape], list[str]]:
    """Every (machine, hosts) layout with the plan's replica count that its strategy can drive."""
    shapes: list[Shape] = []
    notes: list[str] = []
    for provider in providers:
        for accelerator in catalog.accelerator_names():
            found, skipped = _layouts(planned.spec, provider, accelerator, planned.replicas)
            shapes += found
            notes += skipped
    return shapes, notes


def _layouts(spec: JobSpec, provider: str, accelerator: str, replicas: int) -> tuple[list[Shape], list[str]]:
    counts = catalog.device_counts(provider, accelerator)
    shapes, problems = [], []
    for devices in (d for d in counts if replicas % d == 0):
        machine = catalog.machine_for(provider, accelerator, devices)
        assert machine is not None  # devices comes from device_counts
        shape = Shape(provider, machine, replicas // devices)
        problem = _incompatible(spec, shape)
        if problem:
            problems.append(problem)
        else:
            shapes.append(shape)
    if counts and not shapes:
        # The last problem is the fewest-hosts layout's: the most telling one.
        why = (
            problems[-1]
            if problems
            else f"no layout gives {counted(replicas, 'replica')} ({_counts(counts)} per host)"
        )
        return [], [f"{accelerator} on {provider}: {why}"]
    return shapes, []


def _counts(counts: list[int]) -> str:
    return ", ".join(map(str, counts))


def _incompatible(spec: JobSpec, shape: Shape) -> str | None:
    """Why the spec's strategy cannot drive ``shape``, or None when it can."""
    machine = shape.machine
    if catalog.accelerators()[machine.accelerator].kind == "tpu" and shape.hosts > 1:
        return f"TPU jobs run on one host, and no single slice has {shape.devices} chips"
    if spec.training.strategy == "mirrored" and shape.hosts > 1:
        return "strategy 'mirrored' runs on one host"
    resources = spec.resources.model_copy(
        update={"accelerator": machine.accelerator, "per_host": machine.devices, "hosts": shape.hosts}
    )
    try:
        choose_strategy(spec.model_copy(update={"resources": resources}), machine.devices)
    except SpecError as exc:
        return str(exc)
    return None
