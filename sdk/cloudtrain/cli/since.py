"""``logs --since`` and ``--tail``: the text users type, turned into a time and a count.

``--since`` takes what ``docker logs --since`` and ``kubectl logs --since`` take: a
duration back from now (``10m``, ``2h``, ``1d``, ``1h30m``) or an ISO 8601 time
(``2026-12-03T14:00:00Z``; without an offset, the time is this machine's local time).
Every value is bounded, so none reaches date arithmetic or ``int()`` that it would
break: durations up to ``MAX_DURATION``, times from 1970, ``--tail`` up to ``MAX_TAIL``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from cloudtrain.errors import SpecError
from cloudtrain.messages import quote

DURATION = re.compile(r"\A(?:[0-9]+[smhd])+\Z")
COUNT = re.compile(r"\A[0-9]+\Z")  # [0-9], not isdigit(), which takes any Unicode digit
PART = re.compile(r"([0-9]+)([smhd])")
SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
SINCE_FIX = "Use a duration like 10m, 2h or 1d, or an ISO 8601 time like 2026-12-03T14:00:00Z."
# Longer ago than any log line or cache entry; and a date time arithmetic can still reach.
MAX_DURATION = timedelta(days=100 * 365)
# More lines than one screen of anything; --tail left out prints them all.
MAX_TAIL = 10_000_000
# No log line was written before this.
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class LogOptionError(SpecError):
    """A ``--since``, ``--older-than`` or ``--tail`` value that means nothing; the message says what would."""


def parse_since(text: str, *, now: datetime) -> datetime:
    """The time ``--since`` names: ``now`` minus a duration, or an ISO 8601 time.

    Args:
        text: what the user typed.
        now: the current time, timezone-aware (durations count back from it).

    Returns:
        A timezone-aware time.

    Raises:
        LogOptionError: ``text`` is neither a duration nor an ISO 8601 time, or is a
            duration over ``MAX_DURATION`` or a time before 1970.

    Example:
    >>> from datetime import UTC
    >>> now = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
    >>> parse_since("1h30m", now=now).isoformat()
    '2026-12-03T10:30:00+00:00'
    """
    cleaned = text.strip().lower()
    if DURATION.match(cleaned):
        return now - _duration(cleaned, text, option="--since")
    try:
        when = datetime.fromisoformat(text.strip())
        when = when if when.tzinfo is not None else when.astimezone()
        too_early = when < EPOCH
    except (ValueError, OverflowError):
        raise LogOptionError(
            f"--since {quote(text)} is neither a duration nor an ISO 8601 time. {SINCE_FIX}"
        ) from None
    if too_early:
        raise LogOptionError(f"--since {quote(text)} is before 1970, older than any log line. {SINCE_FIX}")
    return when


def parse_age(text: str, *, option: str) -> timedelta:
    """A duration like ``7d`` or ``12h``: how old something must be (``cache clean --older-than``).

    Raises:
        LogOptionError: ``text`` is not a duration (an empty one included, as an unset
            ``$AGE`` gives), or is over ``MAX_DURATION``; the message names ``option``.

    Example:
    >>> parse_age("1d12h", option="--older-than")
    datetime.timedelta(days=1, seconds=43200)
    """
    cleaned = text.strip().lower()
    if not DURATION.match(cleaned):
        raise LogOptionError(f"{option} {quote(text)} is not a duration. Use one like 30m, 12h or 7d.")
    return _duration(cleaned, text, option=option)


def parse_tail(text: str) -> int:
    """The number of last lines ``--tail`` asks for.

    Raises:
        LogOptionError: ``text`` is not a whole number from 0 to ``MAX_TAIL``.

    Example:
    >>> parse_tail("20")
    20
    """
    cleaned = text.strip()
    if not COUNT.match(cleaned):
        raise LogOptionError(
            f"--tail {quote(text)} is not a number of lines. Use a whole number >= 0, e.g. --tail 50."
        )
    if len(cleaned.lstrip("0")) > len(str(MAX_TAIL)) or int(cleaned) > MAX_TAIL:
        raise LogOptionError(
            f"--tail {quote(text)} is more than {MAX_TAIL:,} lines. Leave --tail out for every line."
        )
    return int(cleaned)


def _duration(cleaned: str, text: str, *, option: str) -> timedelta:
    """The duration ``cleaned`` (a match of ``DURATION``) spells, at most ``MAX_DURATION``."""
    limit = int(MAX_DURATION.total_seconds())
    parts = PART.findall(cleaned)
    # a part of more digits than the limit's is over it, whatever its unit: int() never sees 5,000 digits
    if any(len(number.lstrip("0")) > len(str(limit)) for number, _ in parts):
        seconds = limit + 1
    else:
        seconds = sum(int(number) * SECONDS[unit] for number, unit in parts)
    if seconds > limit:
        raise LogOptionError(
            f"{option} {quote(text)} is longer than {MAX_DURATION.days // 365} years. "
            "Use a shorter duration like 30d."
        )
    return timedelta(seconds=seconds)
