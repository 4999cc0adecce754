"""Every layout of the job's replica count on every provider: one big host, or several smaller ones.

Each layout keeps the planned replica count, so the global batch and the scaled
learning rate do not change; a layout the spec's strategy cannot drive is left out,
with the reason as a note.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from cloudtrain import catalog
from cloudtrain.errors import SpecError
from cloudtrain.messages import counted, sentence
from cloudtrain.planning import PicksMachine, choose_strategy
from cloudtrain.provider import registry

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

    def placed(self, region: str) -> dict[str, Any]:
        """The ``PlacedShape`` fields of this shape in ``region``: what a priced row is built from."""
        return {
            "provider": self.provider,
            "region": region,
            "machine_type": self.machine.machine_type,
            "accelerator": self.machine.accelerator,
            "hosts": self.hosts,
            "devices_per_host": self.machine.devices,
        }


@dataclass(frozen=True)
class PlacedShape:
    """A shape in one region, by name: the fields every priced row starts with.

    ``CostOption`` (time and dollars) and ``HourlyPrice`` (dollars per hour) both say
    where they run with these, so the tables, the plot and ``--json`` read them alike.
    """

    provider: str
    region: str
    machine_type: str
    accelerator: str
    hosts: int
    devices_per_host: int

    @property
    def label(self) -> str:
        return f"{self.hosts} × {self.machine_type}"

    def placement(self) -> dict[str, Any]:
        """The fields above, in their order, JSON-ready: the first keys of a priced row's ``to_dict``."""
        return {field.name: getattr(self, field.name) for field in fields(PlacedShape)}


def enumerate_shapes(planned: Plan, providers: tuple[str, ...]) -> tuple[list[Shape], list[str]]:
    """Every (machine, hosts) layout with the plan's replica count that its strategy can drive."""
    shapes: list[Shape] = []
    notes: list[str] = []
    for provider in providers:
        target = registry.get(provider)
        if isinstance(target, PicksMachine):
            found, skipped = _picked(planned, provider, target)
            shapes += found
            notes += skipped
            continue
        for accelerator in catalog.accelerator_names():
            found, skipped = _layouts(planned.spec, provider, accelerator, planned.replicas)
            shapes += found
            notes += skipped
    return shapes, notes


def _picked(planned: Plan, name: str, provider: PicksMachine) -> tuple[list[Shape], list[str]]:
    """The one layout of the machine the spec names on ``name`` (a cluster's node type), or why there is none."""
    why = provider.unpriced(planned.spec)
    if why is not None:
        return [], [sentence(f"{name}: unpriced: {why}")]
    try:
        machine = provider.machine(planned.spec)
    except SpecError as exc:
        return [], [f"{name}: {exc.problems[0]}"]
    if planned.replicas % machine.devices:
        return [], [
            f"{name}: {machine.machine_type} has {machine.devices} devices per node, "
            f"which {planned.replicas} replicas do not fill"
        ]
    shape = Shape(name, machine, planned.replicas // machine.devices)
    problem = _incompatible(planned.spec, shape)
    return ([], [f"{name}: {problem}"]) if problem else ([shape], [])


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
