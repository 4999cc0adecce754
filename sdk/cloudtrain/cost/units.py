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


# Units for a time people wait on (``clock_time``): seconds, name, short name.
_CLOCK_UNITS = ((86400, "d", "d"), (3600, "h", "h"), (60, "min", "m"), (1, "s", "s"))


def clock_time(seconds: float, *, compact: bool = False) -> str:
    """Seconds as a person says a time left: its two largest units, the smaller one rounded.

    ``duration``'s decimals (``2.2h``) suit a table of estimates; a countdown reads as a
    clock does. ``compact`` drops the spaces and shortens minutes, for a narrow column.

    >>> clock_time(7790), clock_time(7790, compact=True)
    ('2 h 10 min', '2h10m')
    >>> clock_time(245), clock_time(7200), clock_time(93_600), clock_time(42.4), clock_time(0.2)
    ('4 min 5 s', '2 h', '1 d 2 h', '42 s', '0 s')
    >>> clock_time(3599.7), clock_time(86_399)  # rounding up into the next unit
    ('1 h', '1 d')
    """
    total = round(max(seconds, 0.0))
    for index, (size, _, _) in enumerate(_CLOCK_UNITS[:-1]):
        if total < size:
            continue
        smaller = _CLOCK_UNITS[index + 1][0]
        rounded = round(total / smaller) * smaller
        if index and rounded >= _CLOCK_UNITS[index - 1][0]:
            return clock_time(rounded, compact=compact)
        counts = (rounded // size, rounded % size // smaller)
        words = [
            f"{count}{short}" if compact else f"{count} {name}"
            for count, (_, name, short) in zip(counts, _CLOCK_UNITS[index : index + 2], strict=True)
            if count
        ]
        return ("" if compact else " ").join(words)
    return f"{total}s" if compact else f"{total} s"
