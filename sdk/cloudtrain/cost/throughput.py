"""A measured training speed: the input every time and cost estimate starts from.

Given as ``RATE@ACCELERATOR`` (examples per second of ONE device, e.g. ``1200@a100-40gb``)
or as the path of the throughput JSON the runtime writes after a run
(``cloudtrain-throughput.json``, beside ``cloudtrain-result.json``), of the run's folder
that holds it, or of the storage root's ``latest.json``, which names the latest run's. The JSON needs
``examples_per_sec`` (or ``examples_per_second``): the whole job's rate after warm-up.
The accelerator is its ``accelerator`` key or follows the path (``PATH@t4``); the rate
is divided by the devices it ran on (``devices`` or ``replicas`` in the JSON, else
``replicas`` of the result file beside it, else 1), so the run's own scaling loss
stays folded into the per-device figure.

``cloudtrain bench --json`` output is a throughput JSON with more in it: ``runs`` holds
the 1-replica run and the spec's N-replica run. Then the per-device rate is the 1-replica
run's (measured, with no scaling loss in it), and the scaling efficiency of N replicas on
H hosts is measured too (``MeasuredScaling``): the cost table uses it for that layout and
extrapolates it to the others (``cost.option.efficiency_for``), so ``cost --throughput
bench.json`` ranks the options as ``bench`` itself does.

Example:
>>> parse_throughput("1200@a100-40gb")
Throughput(1200 examples/s on 1 × a100-40gb, from --throughput)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cloudtrain import catalog, files
from cloudtrain.errors import SpecError, did_you_mean
from cloudtrain.messages import quote
from cloudtrain_runtime.config import COUNT_MAX

RESULT_FILE = "cloudtrain-result.json"  # written by the runtime next to the throughput JSON
THROUGHPUT_FILE = "cloudtrain-throughput.json"
# A throughput, result or bench JSON is a few kB; a file past this is not one.
MAX_FILE_BYTES = 16 * 1024 * 1024
THROUGHPUT_HELP = (
    "Pass --throughput EXAMPLES_PER_SEC@ACCELERATOR (e.g. 1200@a100-40gb, measured on one device), "
    "or the path of the cloudtrain-throughput.json a run wrote (its run folder, or the root's latest.json)."
)
# For a throughput file without a rate: how to get one, not the same file again.
MEASURE_AGAIN = (
    "Train 2 epochs or more and pass the cloudtrain-throughput.json that run writes, or measure with "
    "cloudtrain bench JOB --json > bench.json and pass bench.json, or give RATE@ACCELERATOR (e.g. 1200@t4)."
)
# What a run's file says when its timed epochs began before the full warm-up (callbacks.Throughput).
SHORT_WARMUP = "timed after a short warm-up"


@dataclass(frozen=True)
class MeasuredScaling:
    """A scaling efficiency ``bench`` measured: ``replicas`` replicas on ``hosts`` hosts."""

    replicas: int
    hosts: int
    efficiency: float

    @property
    def per_host(self) -> int:
        return max(self.replicas // self.hosts, 1)


@dataclass(frozen=True)
class Throughput:
    """Measured training speed of ONE device of ``accelerator``, in examples per second.

    ``scaling``: the scaling efficiency measured with it (a bench's), or None: assumed.
    """

    examples_per_sec: float
    accelerator: str
    source: str
    scaling: MeasuredScaling | None = None

    def __repr__(self) -> str:
        return (
            f"Throughput({self.examples_per_sec:g} examples/s on 1 × {self.accelerator}, from {self.source})"
        )


def parse_throughput(value: str | Throughput) -> Throughput:
    """``"1200@a100-40gb"``, or a throughput JSON path, optionally with ``@ACCELERATOR``.

    Example:
    >>> parse_throughput("1200@a100-40gb").examples_per_sec
    1200.0
    """
    if isinstance(value, Throughput):
        return value
    head, at, accelerator = value.rpartition("@")
    if Path(value).exists() or (at and Path(head).exists()):
        path = Path(value) if Path(value).exists() else Path(head)
        return _throughput_file(_run_file(path), accelerator.strip() if path != Path(value) else None)
    if not at:
        raise SpecError(f"--throughput {value!r} is neither RATE@ACCELERATOR nor a file. {THROUGHPUT_HELP}")
    return Throughput(_rate(head, value), _accelerator(accelerator.strip()), "--throughput")


def _rate(text: Any, where: str) -> float:
    try:
        rate = float(text)
    except (TypeError, ValueError):
        rate = 0.0
    if not rate > 0 or math.isinf(rate):
        raise SpecError(f"{where}: the rate must be examples per second > 0. Received: {text!r}.")
    return rate


def _accelerator(name: Any) -> str:
    names = catalog.accelerator_names()
    if name not in names:
        raise SpecError(f"throughput accelerator {name!r} is unknown.{did_you_mean(str(name), names)}")
    return str(name)


def _run_file(path: Path) -> Path:
    """The throughput file ``path`` names: itself, the one in a run's folder, or the latest run's.

    ``latest.json`` (``cloudtrain_runtime.latest``) names the latest run's model; its
    throughput file sits beside the model, in the run's folder.
    """
    if path.is_dir():
        return path / THROUGHPUT_FILE
    data = _json(path)
    if {"run_id", "model"} <= set(data) and "examples_per_sec" not in data:
        model = str(data["model"])
        if "://" in model:
            raise SpecError(
                f"{path} points at a run in {model.split('://')[0]}:// storage. Download its "
                f"{THROUGHPUT_FILE} and pass that, or give RATE@ACCELERATOR (e.g. 1200@t4)."
            )
        return Path(model).parent / THROUGHPUT_FILE
    return path


def _throughput_file(path: Path, accelerator: str | None) -> Throughput:
    data = _json(path)
    if isinstance(data.get("runs"), list) and data["runs"]:
        return from_bench(data, str(path), accelerator)
    rate = data.get("examples_per_sec", data.get("examples_per_second"))
    if rate is None:
        note = str(data.get("note") or "no examples_per_sec (or examples_per_second) key").rstrip(".")
        raise SpecError(f"{path}: no measured throughput ({note}). {MEASURE_AGAIN}")
    accelerator = accelerator or data.get("accelerator")
    if not accelerator:
        raise SpecError(
            f"{path} does not say which accelerator it was measured on. "
            f"Add it after the path, e.g. --throughput {path}@a100-40gb."
        )
    devices = _devices(path, data)
    per_device = _rate(rate, str(path)) / devices
    short = f", {SHORT_WARMUP}" if data.get("steady") is False else ""
    return Throughput(per_device, _accelerator(accelerator), f"{path}, ÷ {devices} device(s){short}")


def from_bench(data: dict[str, Any], source: str, accelerator: str | None = None) -> Throughput:
    """The 1-replica rate and the measured scaling of a ``cloudtrain bench --json`` result.

    Raises:
        SpecError: a run lacks its rate, replicas or hosts.
    """
    runs = data["runs"]
    counts = [_counts(run) for run in runs]
    if None in counts:
        raise SpecError(
            f"{source}: not a bench result (each run needs pipeline_examples_per_sec, replicas, hosts)."
        )
    rates = [_rate(run.get("pipeline_examples_per_sec"), source) for run in runs]
    (replicas, _), (n, hosts) = counts[0] or (0, 0), counts[-1] or (0, 0)
    one, many = rates[0], rates[-1]
    if replicas != 1:
        raise SpecError(
            f"{source}: a bench result's first run is on 1 replica. Received: {replicas} replicas."
        )
    scaling = MeasuredScaling(n, hosts, many / (n * one)) if n > 1 else None
    measured = accelerator or data.get("accelerator") or runs[0].get("accelerator")
    how = f"{source}: bench, 1 replica" + (
        f"; scaling measured on {n} replicas, {hosts} host(s)" if scaling else ""
    )
    return Throughput(one, _accelerator(measured), how, scaling)


def _counts(run: Any) -> tuple[int, int] | None:
    """A bench run's replicas and hosts, whole numbers from 1 (never booleans); None if it has none."""
    replicas, hosts = (run.get("replicas"), run.get("hosts")) if isinstance(run, dict) else (None, None)
    if type(replicas) is int and type(hosts) is int and replicas >= 1 and hosts >= 1:
        return replicas, hosts
    return None


def _json(path: Path) -> dict[str, Any]:
    try:
        data = files.read_json(path, limit=MAX_FILE_BYTES)
    except FileNotFoundError:
        raise SpecError(f"{path}: cannot be read (No such file or directory). {THROUGHPUT_HELP}") from None
    except files.UnreadableFile as exc:
        raise SpecError(f"{exc} {THROUGHPUT_HELP}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: not a throughput JSON (expected an object). {THROUGHPUT_HELP}")
    return data


def _devices(path: Path, data: dict[str, Any]) -> int:
    """Devices the rate was measured over: the JSON's, else the run's result file beside it.

    Raises:
        SpecError: the count is not a whole number from 1 to ``COUNT_MAX`` (the runtime's int32).
    """
    count = data.get("devices") or data.get("replicas")
    result = path.with_name(RESULT_FILE)
    where = path
    if count is None and result.is_file():
        count, where = _json(result).get("replicas"), result
    if count is None:
        return 1
    if type(count) is not int or not 1 <= count <= COUNT_MAX:
        raise SpecError(
            f"{where}: the replicas it was measured on must be a whole number from 1 to {COUNT_MAX:,}. "
            f"Received: {quote(count)}. {MEASURE_AGAIN}"
        )
    return count
