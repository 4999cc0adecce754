"""A failed job's reason where the user looks: the failing replica's last lines in ``status`` and ``wait``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from cloudtrain.cli.failure import LAST_SHOWN, MOST_SHOWN, last_lines
from tests.cloudtrain.cli.conftest import Scripted
from tests.conftest import Result

Run = Callable[..., Result]
TRACE = [
    "[chief-0] Traceback (your code's frames; CLOUDTRAIN_DEBUG=1 shows every frame):",
    '[chief-0]   File "trainer/task.py", line 12, in make_dataset',
    "[chief-0] KeyError: 'b'",
    "[chief-0] cloudtrain-runtime: error: trainer/task.py:12: make_dataset() raised KeyError: 'b'",
]
OUTPUT = [f"[chief-0] line {n}" for n in range(60)]
WORKER = [f"[worker-0] line {n}" for n in range(60)]
FAILED = [
    "[cloudtrain] Replica chief-0 failed (exit 1).",
    "[cloudtrain] Job failed. Replica chief-0 failed (exit 1).",
]


@pytest.mark.parametrize(
    ("log", "replica", "shown"),
    [
        (OUTPUT + TRACE + FAILED, "chief-0", TRACE),  # from its traceback to its error line
        (
            [*OUTPUT[:3], TRACE[0], *WORKER, *TRACE[1:], *FAILED],
            "chief-0",
            TRACE,
        ),  # another replica's lines between
        (
            [*OUTPUT, TRACE[0], *OUTPUT, *TRACE[1:]],
            "chief-0",
            (OUTPUT + TRACE[1:])[-MOST_SHOWN:],
        ),  # too long: the end
        (
            [*OUTPUT, TRACE[-1]],
            "chief-0",
            ([*OUTPUT, TRACE[-1]])[-LAST_SHOWN:],
        ),  # an error line, no traceback
        (
            OUTPUT + WORKER + FAILED,
            None,
            WORKER[-LAST_SHOWN:],
        ),  # no error line: the last output, not the launcher's
        ([], None, []),  # nothing written
    ],
)
def test_the_lines_shown_are_the_failing_replicas_reason(
    log: list[str], replica: str | None, shown: list[str]
) -> None:
    found = last_lines(log)
    assert (found.replica, found.lines) == (replica, shown)


FAILING = """\
import sys
print("epoch 1/3 loss=0.5")
print("Traceback (your code's frames; CLOUDTRAIN_DEBUG=1 shows every frame):")
print('  File "trainer/task.py", line 66, in make_dataset')
print("KeyError: 'b'")
print("cloudtrain-runtime: error: trainer/task.py:66: make_dataset() raised KeyError: 'b'", flush=True)
sys.exit(1)
"""
SHOWN = [
    "[chief-0] Traceback (your code's frames; CLOUDTRAIN_DEBUG=1 shows every frame):",
    '[chief-0]   File "trainer/task.py", line 66, in make_dataset',
    "[chief-0] KeyError: 'b'",
    "[chief-0] cloudtrain-runtime: error: trainer/task.py:66: make_dataset() raised KeyError: 'b'",
]


@pytest.fixture
def failed(run_cli: Run, scripted_job: Scripted) -> str:
    """The ID of a local run whose replica printed a traceback and exited 1."""
    return run_cli("submit", str(scripted_job(FAILING)), "--no-wait").out.strip()


# regression: a failed job's status and wait said "see its lines above" with nothing above
def test_wait_on_a_failed_job_shows_the_failing_replicas_last_lines(run_cli: Run, failed: str) -> None:
    result = run_cli("wait", failed, "--poll", "0.2")
    assert result.code == 1
    err = result.err.splitlines()
    heading = err.index(f"Last lines of chief-0 (all of them: cloudtrain logs {failed}):")
    assert err[heading + 1 : heading + 5] == SHOWN
    assert result.errors == ["Job ended failed (FAILED). Replica chief-0 failed (exit 1)."]


def test_status_of_a_failed_job_shows_them_too_and_in_json(run_cli: Run, failed: str) -> None:
    run_cli("wait", failed, "--poll", "0.2")
    out = run_cli("status", failed).out.splitlines()
    assert out[0] == "failed (FAILED): Replica chief-0 failed (exit 1)."
    assert out[1] == "why: user_code: the training code failed; see its last lines (exit 1)"
    assert out[-5:] == [f"Last lines of chief-0 (all of them: cloudtrain logs {failed}):", *SHOWN]
    document = json.loads(run_cli("status", failed, "--json").out)
    assert (document["failed_replica"], document["last_lines"]) == ("chief-0", SHOWN)
    assert document["failure"] == {
        "reason": "user_code",
        "message": "Replica chief-0 failed (exit 1).",
        "code": "exit 1",
    }


def test_a_job_that_succeeded_shows_no_lines(run_cli: Run, scripted_job: Scripted, tmp_path: Path) -> None:
    job_id = run_cli("submit", str(scripted_job("print('fine')\n"))).out.strip()
    assert "Last lines" not in run_cli("status", job_id).out
    assert "last_lines" not in json.loads(run_cli("status", job_id, "--json").out)
