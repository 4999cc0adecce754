"""The status line of ``wait`` and ``submit --wait``: plain lines per change, a live line on a terminal."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from cloudtrain.cli.live import StatusLine, elapsed
from cloudtrain.provider import JobStatus
from tests.conftest import Result

QUEUED = JobStatus("queued", "JOB_STATE_PENDING")
RUNNING = JobStatus("running", "JOB_STATE_RUNNING")
DONE = JobStatus("succeeded", "JOB_STATE_SUCCEEDED")
ESC = "\x1b"


class Clock:
    """A clock the test moves by hand, so the elapsed time shown is known."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0, "0s"),  # just seen
        (59.9, "59s"),  # whole seconds
        (72, "1m12s"),  # minutes and seconds
        (3600, "1h00m"),  # past an hour, seconds would only flicker
        (3725, "1h02m"),
    ],
)
def test_elapsed(seconds: float, shown: str) -> None:
    assert elapsed(seconds) == shown


def test_not_a_terminal_gets_one_plain_line_per_change_and_nothing_animated() -> None:
    out = io.StringIO()
    with StatusLine(Console(file=out, width=200)) as line:
        for status in (QUEUED, RUNNING, JobStatus("failed", "JOB_STATE_FAILED", "OOM in [chief-0]")):
            line(status)
    assert out.getvalue() == (
        "queued (JOB_STATE_PENDING)\nrunning (JOB_STATE_RUNNING)\nfailed (JOB_STATE_FAILED) OOM in [chief-0]\n"
    )


def test_a_terminal_gets_a_live_line_with_the_state_word_and_the_time_in_it() -> None:
    out, clock = io.StringIO(), Clock()
    line = StatusLine(Console(file=out, force_terminal=True, width=100), clock=clock)
    line(QUEUED)
    clock.now += 72
    assert line.text() == "Queued · JOB_STATE_PENDING · 1m12s"
    line.close()  # draws the line a last time, then removes it
    drawn = out.getvalue()
    assert drawn.startswith("queued (JOB_STATE_PENDING)\n")  # the plain line stays
    assert "Queued · JOB_STATE_PENDING · 1m12s" in drawn
    assert ESC in drawn  # drawn in place, with cursor moves


def test_a_change_of_state_restarts_the_count_and_the_end_stops_the_line() -> None:
    out, clock = io.StringIO(), Clock()
    line = StatusLine(Console(file=out, force_terminal=True, width=100), clock=clock)
    line(QUEUED)
    clock.now += 300
    line(RUNNING)
    clock.now += 5
    assert line.text() == "Running · JOB_STATE_RUNNING · 5s"
    line(DONE)
    assert repr(line) == "StatusLine(state='succeeded', live=False)"


@pytest.mark.usefixtures("toycloud")
def test_wait_prints_each_state_once_on_stderr(run_cli: Callable[..., Result], example_job: Path) -> None:
    job_id = run_cli("submit", str(example_job), "--provider", "toycloud", "--no-wait").out.strip()
    waited = run_cli("wait", job_id, "--poll", "0")
    assert (waited.code, waited.out) == (0, "")
    assert waited.err == "queued (QUEUED)\nrunning (RUNNING)\nsucceeded (DONE)\n"


@pytest.mark.usefixtures("toycloud")
def test_submit_wait_shows_the_states_until_it_starts_then_the_logs(
    run_cli: Callable[..., Result], example_job: Path
) -> None:
    submitted = run_cli("submit", str(example_job), "--provider", "toycloud", "--wait")
    job_id = submitted.out.strip()
    assert submitted.code == 0
    assert submitted.out.splitlines() == [job_id]  # not a terminal: the log goes to stderr
    assert "queued (QUEUED)\nrunning (RUNNING)\n" in submitted.err
    assert f"[chief-0] training {job_id}" in submitted.err.splitlines()
    assert "succeeded (DONE)" not in submitted.err  # the status wait stopped once it started
    assert ESC not in submitted.err
