"""The catalog: accelerators, machine shapes, prices and the cost model's numbers, as CSV rows.

The facts live in CSV files beside this module, one row per fact with its source;
this module only reads them. Adding a machine is a row, never an ``if`` in code.

Every catalog file is read by ``rows``: the shipped file's rows first, then the rows of
the same file in each registered provider's ``catalog_dir`` (a third-party provider
ships its machines, prices and images that way). The rows are read once and read again
when the registered providers change.

Example:
>>> accelerators()["a100-40gb"].memory_gb
40
>>> [m.machine_type for m in machines(accelerator="tpu-v5e")][:1]
['ct5lp-hightpu-1t']
"""

from __future__ import annotations

import csv
import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

from cloudtrain.errors import SpecError
from cloudtrain.providers import registry

HERE = Path(__file__).parent
Row = dict[str, str]
F = TypeVar("F", bound=Callable[..., Any])
_CACHES: list[Any] = []


def cached(func: F) -> F:
    """``functools.cache`` that is emptied whenever the registered providers change.

    Anything computed from catalog rows is cached with it, so a provider registered at
    run time (and its ``catalog_dir`` rows) is seen on the next call.
    """
    wrapper = functools.cache(func)
    _CACHES.append(wrapper)
    return cast(F, wrapper)


def forget() -> None:
    """Read every catalog file again on next use."""
    for wrapper in _CACHES:
        wrapper.cache_clear()


registry.watch(forget)


def read(path: str | Path, required: tuple[str, ...] = ()) -> list[Row]:
    """The rows of one CSV file, each a dict keyed by the header.

    Raises:
        SpecError: naming the file, when it is missing or lacks a ``required`` column.
    """
    path = Path(path)
    try:
        with path.open(newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in required if c not in (reader.fieldnames or [])]
            found = list(reader)
    except FileNotFoundError:
        raise SpecError(f"{path}: no such file.") from None
    if missing:
        raise SpecError(f"{path}: missing column(s) {', '.join(missing)}. Expected: {', '.join(required)}.")
    return found


@cached
def rows(name: str) -> tuple[Row, ...]:
    """The rows of catalog file ``name``: the shipped ones, then each provider's ``catalog_dir`` ones.

    A provider's file must have the shipped file's columns; other columns are dropped.
    """
    shipped = read(HERE / name)
    columns = tuple(shipped[0]) if shipped else ()
    extra = [
        {column: row[column] for column in columns}
        for folder in _provider_folders()
        if (folder / name).is_file()
        for row in read(folder / name, columns)
    ]
    return (*shipped, *extra)


def _provider_folders() -> list[Path]:
    folders = (provider.catalog_dir for provider in registry.providers())
    return [Path(folder) for folder in folders if folder is not None and Path(folder) != HERE]


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


@cached
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
        for row in rows("accelerators.csv")
    }


def images() -> tuple[Row, ...]:
    """Rows of ``images.csv``: the maintained image per provider and hardware kind."""
    return rows("images.csv")


def accelerator_names() -> list[str]:
    return list(accelerators())


_INT_FIELDS = ("accelerator_count", "accelerator_memory_gb", "vcpus", "memory_gb", "network_gbps")


@cached
def _machines() -> tuple[Machine, ...]:
    return tuple(Machine(**_typed(row)) for row in rows("machines.csv"))


def _typed(row: Row) -> dict[str, Any]:
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
