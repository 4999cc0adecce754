"""``logs --since`` and ``--tail``: the text users type, turned into a time and a count.

``--since`` takes what ``docker logs --since`` and ``kubectl logs --since`` take: a
duration back from now (``10m``, ``2h``, ``1d``, ``1h30m``) or an ISO 8601 time
(``2026-12-03T14:00:00Z``; without an offset, the time is this machine's local time).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from cloudtrain.errors import SpecError

DURATION = re.compile(r"\A(?:[0-9]+[smhd])+\Z")
COUNT = re.compile(r"\A[0-9]+\Z")  # [0-9], not isdigit(), which takes any Unicode digit
PART = re.compile(r"([0-9]+)([smhd])")
SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
SINCE_FIX = "Use a duration like 10m, 2h or 1d, or an ISO 8601 time like 2026-12-03T14:00:00Z."


class LogOptionError(SpecError):
    """A ``--since`` or ``--tail`` value that means nothing; the message says what would."""


def parse_since(text: str, *, now: datetime) -> datetime:
    """The time ``--since`` names: ``now`` minus a duration, or an ISO 8601 time.

    Args:
        text: what the user typed.
        now: the current time, timezone-aware (durations count back from it).

    Returns:
        A timezone-aware time.

    Raises:
        LogOptionError: ``text`` is neither a duration nor an ISO 8601 time.

    Example:
    >>> from datetime import UTC
    >>> now = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
    >>> parse_since("1h30m", now=now).isoformat()
    '2026-12-03T10:30:00+00:00'
    """
    cleaned = text.strip().lower()
    if DURATION.match(cleaned):
        return now - timedelta(seconds=sum(int(n) * SECONDS[unit] for n, unit in PART.findall(cleaned)))
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise LogOptionError(
            f"--since {text!r} is neither a duration nor an ISO 8601 time. {SINCE_FIX}"
        ) from None
    return when if when.tzinfo is not None else when.astimezone()


def parse_age(text: str, *, option: str) -> timedelta:
    """A duration like ``7d`` or ``12h``: how old something must be (``cache clean --older-than``).

    Raises:
        LogOptionError: ``text`` is not a duration; the message names ``option``.

    Example:
    >>> parse_age("1d12h", option="--older-than")
    datetime.timedelta(days=1, seconds=43200)
    """
    cleaned = text.strip().lower()
    if not DURATION.match(cleaned):
        raise LogOptionError(f"{option} {text!r} is not a duration. Use one like 30m, 12h or 7d.")
    return timedelta(seconds=sum(int(n) * SECONDS[unit] for n, unit in PART.findall(cleaned)))


def parse_tail(text: str) -> int:
    """The number of last lines ``--tail`` asks for.

    Raises:
        LogOptionError: ``text`` is not a whole number >= 0.

    Example:
    >>> parse_tail("20")
    20
    """
    if not COUNT.match(text.strip()):
        raise LogOptionError(
            f"--tail {text!r} is not a number of lines. Use a whole number >= 0, e.g. --tail 50."
        )
    return int(text)
