"""The hardware catalog: accelerators and the machine shapes each provider offers.

The facts live in CSV files beside this module, one row per shape with its source;
this module only reads them. Adding a machine is a row, never an ``if`` in code.

Example:
>>> machine_for("vertex", "a100-40gb", 8).machine_type
'a2-highgpu-8g'
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_HERE = Path(__file__).parent
PROVIDERS = ("vertex", "sagemaker")


@dataclass(frozen=True)
class Accelerator:
    """One neutral accelerator: its kind (cpu, gpu, tpu), architecture and memory."""

    name: str
    kind: str
    architecture: str
    memory_gb: int
    bf16: bool
    source: str


@dataclass(frozen=True)
class Machine:
    """One machine shape of one provider, as a row of ``machines.csv``."""

    provider: str
    machine_type: str
    accelerator: str
    provider_accelerator: str
    accelerator_count: int
    accelerator_memory_gb: int
    vcpus: int
    memory_gb: int
    intra_host: str
    network_gbps: int
    rdma: str
    tpu_topology: str
    source: str

    @property
    def devices(self) -> int:
        """Devices the runtime sees on one host: accelerators, or 1 for a CPU-only machine."""
        return max(self.accelerator_count, 1)


def _rows(name: str) -> list[dict[str, str]]:
    with (_HERE / name).open(newline="") as f:
        return list(csv.DictReader(f))


@functools.cache
def accelerators() -> dict[str, Accelerator]:
    """Every neutral accelerator by name."""
    return {
        row["name"]: Accelerator(
            name=row["name"],
            kind=row["kind"],
            architecture=row["architecture"],
            memory_gb=int(row["memory_gb"]),
            bf16=row["bf16"] == "true",
            source=row["source"],
        )
        for row in _rows("accelerators.csv")
    }


@functools.cache
def images() -> tuple[dict[str, str], ...]:
    """Rows of ``images.csv``: the maintained image per provider and hardware kind."""
    return tuple(_rows("images.csv"))


def accelerator_names() -> list[str]:
    return list(accelerators())


_INT_FIELDS = ("accelerator_count", "accelerator_memory_gb", "vcpus", "memory_gb", "network_gbps")


@functools.cache
def _machines() -> tuple[Machine, ...]:
    return tuple(Machine(**_typed(row)) for row in _rows("machines.csv"))


def _typed(row: dict[str, str]) -> dict[str, Any]:
    return {k: int(v) if k in _INT_FIELDS else v for k, v in row.items()}


def machines(provider: str | None = None, accelerator: str | None = None) -> list[Machine]:
    """Machine shapes, filtered by provider and accelerator, in catalog (preference) order."""
    return [
        m
        for m in _machines()
        if (provider is None or m.provider == provider)
        and (accelerator is None or m.accelerator == accelerator)
    ]


def device_counts(provider: str, accelerator: str) -> list[int]:
    """The accelerators-per-host counts ``provider`` offers for ``accelerator``, ascending."""
    return sorted({m.devices for m in machines(provider, accelerator)})


def machine_for(provider: str, accelerator: str, per_host: int) -> Machine | None:
    """The preferred shape with exactly ``per_host`` accelerators, or None if none exists.

    The first matching row wins, so the CSV's order is the preference order (for
    example g2-standard-8 before g2-standard-4 for one L4).
    """
    for machine in machines(provider, accelerator):
        if machine.devices == per_host:
            return machine
    return None
