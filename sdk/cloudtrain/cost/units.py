"""Seconds and dollars: the cost model's arithmetic, and how each figure is written.

Example:
>>> seconds = run_seconds(12_000, 100.0, 0.1)
>>> seconds, billed_seconds(seconds, 30), duration(seconds)
(132.0, 150, '2.2m')
>>> dollars(charge(150, 2.0, 2)), dollars(1234.5)
('$0.1667', '$1,234.50')
"""

from __future__ import annotations

import math


def run_seconds(work: int, examples_per_sec: float, overhead: float) -> float:
    """Wall-clock seconds to process ``work`` examples, plus the spot overhead fraction."""
    return work / examples_per_sec * (1 + overhead)


def charge(billed: int, usd_per_host_hour: float, hosts: int) -> float:
    """Dollars for ``billed`` seconds of ``hosts`` hosts (each host is billed)."""
    return billed / 3600 * usd_per_host_hour * hosts


def billed_seconds(seconds: float, increment: int) -> int:
    """Seconds billed: rounded up to the price row's billing increment.

    Example:
    >>> billed_seconds(31.0, 30)
    60
    """
    return math.ceil(round(seconds / increment, 9)) * increment


def dollars(usd: float) -> str:
    """``$0.0123`` below a dollar (small jobs stay visible), else ``$1,234.56``."""
    return f"${usd:.4f}" if usd < 1 else f"${usd:,.2f}"


def duration(seconds: float) -> str:
    """Seconds as ``12s``, ``4.5m``, ``3.2h`` or ``2.1d``."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.1f}s" if seconds < 10 else f"{seconds:.0f}s"
