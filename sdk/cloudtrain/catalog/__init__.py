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

from cloudtrain import installed
from cloudtrain.errors import SpecError, did_you_mean

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


installed.watch(forget)


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
    return [folder for folder in installed.catalog_dirs() if folder != HERE]


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


@dataclass(frozen=True)
class ImageStartup:
    """What a maintained image runs before the command it is given: a row of ``image_startup.csv``.

    Attributes:
        entrypoint: the image's own ENTRYPOINT, kept so its start-up runs first.
        setup: a script of the image whose environment (CUDA forward compatibility) must
            reach the training process, so it is sourced by the shell that starts it.
    """

    provider: str
    kind: str
    entrypoint: tuple[str, ...]
    setup: str
    source: str


@cached
def image_startup(provider: str, kind: str) -> ImageStartup | None:
    """The start-up of ``provider``'s maintained ``kind`` image (``image: auto``); None where none is kept.

    Example:
    >>> image_startup("sagemaker", "gpu").entrypoint
    ('bash', '-m', '/usr/local/bin/entrypoint.sh')
    """
    for row in rows("image_startup.csv"):
        if (row["provider"], row["kind"]) == (provider, kind):
            entrypoint = tuple(row["entrypoint"].split())
            return ImageStartup(provider, kind, entrypoint, row["setup"], row["source"])
    return None


@dataclass(frozen=True)
class ImageRegistry:
    """Where a provider's maintained images live in one region: a row of ``image_registries.csv``.

    SageMaker's Deep Learning Containers sit in a different AWS account in some regions
    (opt-in regions such as af-south-1 or il-central-1), and China's regions answer on
    ``amazonaws.com.cn``: one account for every region renders URIs that do not exist.
    """

    provider: str
    region: str
    account: str
    domain: str
    source: str


@cached
def image_registries(provider: str) -> dict[str, ImageRegistry]:
    """Every region with a registry of ``provider``'s maintained images, by region name."""
    return {
        row["region"]: ImageRegistry(**row)
        for row in rows("image_registries.csv")
        if row["provider"] == provider
    }


def image_registry(provider: str, region: str) -> ImageRegistry:
    """The registry of ``provider``'s maintained images in ``region``.

    Raises:
        SpecError: naming ``<provider>.region`` and the regions that have one.

    Example:
    >>> image_registry("sagemaker", "il-central-1").account
    '780543022126'
    """
    known = image_registries(provider)
    if region in known:
        return known[region]
    raise SpecError(
        f"{provider}.region: {region!r} has no registry of the image: auto TensorFlow image."
        f"{did_you_mean(region, known, noun='regions')} Or set image: to an image URI that region can pull."
    )


def image_uri(row: Row, region: str) -> str:
    """The URI of an ``images.csv`` row in ``region``.

    ``{region}`` is filled in; ``{account}`` and ``{domain}``, when the URI has them,
    come from ``image_registries.csv`` (which raises for a region without a registry).

    Example:
    >>> row = {"provider": "sagemaker", "uri": "{account}.dkr.ecr.{region}.{domain}/tensorflow-training:2.21.0"}
    >>> image_uri(row, "af-south-1")
    '626614931356.dkr.ecr.af-south-1.amazonaws.com/tensorflow-training:2.21.0'
    >>> image_uri({"provider": "vertex", "uri": "tensorflow/tensorflow:2.21.0"}, "us-central1")
    'tensorflow/tensorflow:2.21.0'
    """
    fields = {"region": region}
    if "{account}" in row["uri"] or "{domain}" in row["uri"]:
        found = image_registry(row["provider"], region)
        fields |= {"account": found.account, "domain": found.domain}
    return row["uri"].format(**fields)


def accelerator_names() -> list[str]:
    return list(accelerators())


def accelerator_aliases() -> list[str]:
    """Every provider name ``accelerator_alias`` takes: accelerator names, then machine types."""
    named = dict.fromkeys(m.provider_accelerator for m in _machines() if m.provider_accelerator)
    return [*named, *dict.fromkeys(m.machine_type for m in _machines())]


def accelerator_alias(name: str) -> tuple[str, Machine | None] | None:
    """The neutral accelerator a provider's own name stands for, and the machine when it names one.

    A provider's accelerator name (``NVIDIA_TESLA_T4``, any case) is that accelerator; a
    machine or instance type (``ml.g4dn.xlarge``, ``a2-highgpu-1g``) is its accelerator on
    that machine. None when ``name`` is neither.

    Example:
    >>> accelerator_alias("nvidia_tesla_t4")
    ('t4', None)
    >>> accelerator, machine = accelerator_alias("ml.g5.2xlarge")
    >>> accelerator, machine.accelerator_count
    ('a10g', 1)
    """
    for machine in _machines():
        if machine.machine_type == name:
            return machine.accelerator, machine
    folded = name.casefold()
    return next(
        (
            (m.accelerator, None)
            for m in _machines()
            if m.provider_accelerator.casefold() == folded and folded
        ),
        None,
    )


@cached
def regions(provider: str) -> tuple[str, ...]:
    """The regions ``provider`` runs training jobs in (``regions.csv``), in catalog order."""
    return tuple(row["region"] for row in rows("regions.csv") if row["provider"] == provider)


def region_problem(provider: str, title: str, region: str) -> str | None:
    """Why ``region`` is not one ``provider`` trains in, naming ``<provider>.region``; None if it is.

    A provider without rows in ``regions.csv`` is not judged. SageMaker's rows are the
    regions of its API's endpoints in botocore's data (every partition's), so an image of
    one's own is judged too, not only ``image: auto``'s registry.

    Example:
    >>> region_problem("vertex", "Vertex AI", "us-centrl1")
    "vertex.region: 'us-centrl1' is not a region Vertex AI trains in. Did you mean 'us-central1'?"
    """
    known = regions(provider)
    if not known or region in known:
        return None
    return f"{provider}.region: {region!r} is not a region {title} trains in.{did_you_mean(region, known, noun='regions')}"


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


@dataclass(frozen=True)
class CapacityOffer:
    """Whether a provider offers one capacity mode, and how: a row of ``capacity.csv``.

    Attributes:
        offered: whether the provider renders the mode natively.
        native: the request fields that carry it.
        accelerators: the accelerators it serves; empty: any.
        quota: the quota the mode draws on (spot and flex-start use the preemptible one
            on Vertex AI), for a quota check before submit.
        instead: what the provider offers in its place, when it does not offer it.
        example: an example of the mode's option (a reservation, a plan, a queue).
    """

    provider: str
    mode: str
    offered: bool
    native: str
    accelerators: tuple[str, ...]
    quota: str
    instead: str
    example: str
    source: str

    def serves(self, accelerator: str) -> bool:
        """Whether the mode serves ``accelerator`` (it is offered, for it or for any)."""
        return self.offered and (not self.accelerators or accelerator in self.accelerators)


@cached
def capacity_offers(provider: str) -> dict[str, CapacityOffer]:
    """The capacity modes ``provider``'s rows of ``capacity.csv`` describe, by mode; empty for a provider without rows.

    Example:
    >>> capacity_offers("sagemaker")["flex"].instead
    'SageMaker has no flex-start; use a Training Plan (capacity: plan) or spot'
    >>> capacity_offers("vertex")["flex"].accelerators
    ('l4', 'a100-40gb', 'a100-80gb', 'h100-80gb', 'h200-141gb')
    >>> capacity_offers("vertex")["flex"].quota.split()[0]
    'aiplatform.googleapis.com/custom_model_training_preemptible_nvidia_<gpu>_gpus'
    """
    return {
        row["mode"]: CapacityOffer(
            **{**row, "offered": row["offered"] == "yes", "accelerators": tuple(row["accelerators"].split())}  # type: ignore[arg-type]
        )
        for row in rows("capacity.csv")
        if row["provider"] == provider
    }
