"""A measured training speed: the input every time and cost estimate starts from.

Given as ``RATE@ACCELERATOR`` (examples per second of ONE device, e.g. ``1200@a100-40gb``)
or as the path of the throughput JSON the runtime writes after a run
(``cloudtrain-throughput.json``, next to the export). That JSON needs
``examples_per_sec`` (or ``examples_per_second``) and ``accelerator``; a ``devices`` (or
``replicas``) count above 1 means the rate is the whole job's, and it is divided by
that count to get one device's (the run's own scaling loss stays folded in).

Example:
>>> parse_throughput("1200@a100-40gb")
Throughput(1200 examples/s on 1 × a100-40gb, from --throughput)
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cloudtrain import catalog
from cloudtrain.errors import SpecError, did_you_mean

THROUGHPUT_HELP = (
    "Pass --throughput EXAMPLES_PER_SEC@ACCELERATOR (e.g. 1200@a100-40gb, measured on one device), "
    "or the path of the cloudtrain-throughput.json a run wrote."
)


@dataclass(frozen=True)
class Throughput:
    """Measured training speed of ONE device of ``accelerator``, in examples per second."""

    examples_per_sec: float
    accelerator: str
    source: str

    def __repr__(self) -> str:
        return (
            f"Throughput({self.examples_per_sec:g} examples/s on 1 × {self.accelerator}, from {self.source})"
        )


def parse_throughput(value: str | Throughput) -> Throughput:
    """``"1200@a100-40gb"``, or the path of a throughput JSON written by the runtime.

    The JSON needs ``examples_per_sec`` (or ``examples_per_second``) and ``accelerator``;
    with ``devices`` (or ``replicas``) > 1 the rate is divided by them to get one device's.

    Example:
    >>> parse_throughput("1200@a100-40gb").examples_per_sec
    1200.0
    """
    if isinstance(value, Throughput):
        return value
    if Path(value).is_file():
        return _throughput_file(Path(value))
    rate, at, accelerator = value.partition("@")
    if not at:
        raise SpecError(f"--throughput {value!r} is neither RATE@ACCELERATOR nor a file. {THROUGHPUT_HELP}")
    return Throughput(_rate(rate, value), _accelerator(accelerator.strip()), "--throughput")


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


def _throughput_file(path: Path) -> Throughput:
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: not a throughput JSON ({exc}). {THROUGHPUT_HELP}") from None
    rate = data.get("examples_per_sec", data.get("examples_per_second")) if isinstance(data, dict) else None
    if rate is None or "accelerator" not in data:
        raise SpecError(
            f"{path}: needs the keys examples_per_sec (or examples_per_second) and accelerator. {THROUGHPUT_HELP}"
        )
    devices = int(data.get("devices") or data.get("replicas") or 1)
    per_device = _rate(rate, str(path)) / max(devices, 1)
    return Throughput(per_device, _accelerator(data["accelerator"]), f"{path} ({devices} device(s))")
