"""``provider.pending``: the deadline counts the wait a provider already reports."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cloudtrain.provider.jobs import JobStatus
from cloudtrain.provider.pending import Deadline, describe_limit, waited_s


def test_a_job_that_already_waited_has_that_much_less_left() -> None:
    since = datetime.now(UTC) - timedelta(seconds=50)
    now = [0.0]
    deadline = Deadline(60, lambda: now[0])
    assert not deadline.passed(JobStatus("queued", "QUEUED", pending_since=since))
    now[0] = 11.0  # 50 s before, 11 s since: past the minute
    assert deadline.passed(JobStatus("queued", "QUEUED", pending_since=since))


def test_no_limit_never_passes() -> None:
    assert not Deadline(0, lambda: 10.0**9).passed(JobStatus("queued", "QUEUED"))


@pytest.mark.parametrize(
    ("since_s", "expected"),
    [
        (None, 0.0),  # the provider does not say
        (-30, 0.0),  # a clock ahead of this one: no negative wait
        (90, 90.0),
    ],
)
def test_waited_s(since_s: int | None, expected: float) -> None:
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    since = None if since_s is None else now - timedelta(seconds=since_s)
    assert waited_s(JobStatus("queued", "QUEUED", pending_since=since), now=now) == expected


def test_describe_limit() -> None:
    assert [describe_limit(s) for s in (0, 2, 90, 3600, 86400 + 60)] == [
        "for ever",
        "2s",
        "1m30s",
        "1h",
        "1d1m",
    ]
