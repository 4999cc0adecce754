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


DIGITS_5000 = "1" * 5000


@pytest.mark.parametrize(
    ("args", "error"),
    [
        # regression: OverflowError tracebacks, and int() refusing 5,000 digits
        (
            ["--since", "1000000d"],
            "--since '1000000d' is longer than 100 years. Use a shorter duration like 30d.",
        ),
        (
            ["--since", "99999999999999d"],
            "--since '99999999999999d' is longer than 100 years. Use a shorter duration like 30d.",
        ),
        (
            ["--since", DIGITS_5000 + "s"],
            f"--since '{'1' * 80}'… is longer than 100 years. Use a shorter duration like 30d.",
        ),
        (
            ["--since", "0001-01-01T00:00:00+01:00"],
            f"--since '0001-01-01T00:00:00+01:00' is before 1970, older than any log line. {SINCE_FIX}",
        ),
        (
            ["--since", "x" * 10_000],
            f"--since '{'x' * 80}'… is neither a duration nor an ISO 8601 time. {SINCE_FIX}",
        ),
        (
            ["--tail", DIGITS_5000],
            f"--tail '{'1' * 80}'… is more than 10,000,000 lines. Leave --tail out for every line.",
        ),
        (
            ["--tail", "10000001"],
            "--tail '10000001' is more than 10,000,000 lines. Leave --tail out for every line.",
        ),
        (
            ["--tail", "x" * 10_000],
            f"--tail '{'x' * 80}'… is not a number of lines. Use a whole number >= 0, e.g. --tail 50.",
        ),
    ],
)
def test_huge_and_long_values_are_one_short_line(
    run_cli: Callable[..., Result], args: list[str], error: str
) -> None:
    result = run_cli("logs", "local:no-such-run-20260101-000000-0000", *args)
    assert (result.code, result.errors) == (2, [error])


@pytest.mark.parametrize(("text", "days"), [("36500d", 36500), ("0001d", 1), ("876000h", 36500)])
def test_durations_up_to_the_bound_are_taken(text: str, days: int) -> None:
    assert parse_since(text, now=NOW) == NOW - timedelta(days=days)


def test_the_largest_tail_is_taken() -> None:
    assert parse_tail("0010000000") == 10_000_000
