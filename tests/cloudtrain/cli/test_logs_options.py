"""``logs --since DURATION|TIME`` and ``--tail N``: what parses, and the error for what does not."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone

import pytest

from cloudtrain.cli.since import SINCE_FIX, LogOptionError, parse_since, parse_tail
from tests.conftest import Result

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10m", NOW - timedelta(minutes=10)),  # minutes
        ("2h", NOW - timedelta(hours=2)),  # hours
        ("1d", NOW - timedelta(days=1)),  # days
        ("45s", NOW - timedelta(seconds=45)),  # seconds
        ("1h30m", NOW - timedelta(minutes=90)),  # parts add up, as in docker logs --since
        (" 2H ", NOW - timedelta(hours=2)),  # case and spaces do not matter
        ("2026-12-03T10:00:00Z", datetime(2026, 12, 3, 10, tzinfo=UTC)),  # ISO 8601 in UTC
        (  # with an offset: the same instant
            "2026-12-03T11:00:00+01:00",
            datetime(2026, 12, 3, 11, tzinfo=timezone(timedelta(hours=1))),
        ),
        ("2026-12-03T10:00:00.250Z", datetime(2026, 12, 3, 10, 0, 0, 250000, tzinfo=UTC)),  # fractions
    ],
)
def test_parse_since(text: str, expected: datetime) -> None:
    assert parse_since(text, now=NOW) == expected


def test_a_time_without_an_offset_is_local_time() -> None:
    parsed = parse_since("2026-12-03T10:00:00", now=NOW)
    assert parsed == datetime(2026, 12, 3, 10).astimezone()
    assert parsed.tzinfo is not None


@pytest.mark.parametrize("text", ["10x", "m10", "-5m", "yesterday", "", "10 m", "2026-13-01"])
def test_bad_since_names_the_value_and_the_fix(text: str) -> None:
    with pytest.raises(LogOptionError) as raised:
        parse_since(text, now=NOW)
    assert str(raised.value) == f"--since {text!r} is neither a duration nor an ISO 8601 time. {SINCE_FIX}"


@pytest.mark.parametrize(("text", "expected"), [("0", 0), ("20", 20), (" 5 ", 5)])
def test_parse_tail(text: str, expected: int) -> None:
    assert parse_tail(text) == expected


@pytest.mark.parametrize("text", ["-1", "ten", "1.5", "١٢", ""])  # "١٢": Arabic-Indic digits
def test_bad_tail_is_refused(text: str) -> None:
    with pytest.raises(LogOptionError, match=r"Use a whole number >= 0"):
        parse_tail(text)


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--since", "10x"], f"--since '10x' is neither a duration nor an ISO 8601 time. {SINCE_FIX}"),
        (["--tail", "-3"], "--tail '-3' is not a number of lines. Use a whole number >= 0, e.g. --tail 50."),
    ],
)
def test_the_cli_exits_2_with_the_fix_before_reaching_any_job(
    run_cli: Callable[..., Result], args: list[str], error: str
) -> None:
    result = run_cli("logs", "local:no-such-run-20260101-000000-0000", *args)
    assert result.code == 2
    assert result.errors == [error]
    assert "Traceback" not in result.err
