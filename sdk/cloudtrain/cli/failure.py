"""Why a job failed, in its own words: the failing replica's last lines, for ``status`` and ``wait``.

A provider's detail says which replica failed (``Replica chief-0 failed (exit 1)``,
Vertex's "The replica workerpool0-0 exited with a non-zero status of 1"), never why:
that is in the replica's log, which ``status`` and ``wait`` did not show. The runtime
ends a failing replica's output with its traceback (cut to the user's frames) and one
``cloudtrain-runtime: error:`` line, so the replica that printed the last such line is
the one that failed, and its lines from the traceback on are the reason. Every provider's
log lines carry the replica's ``[name]`` prefix, so this reads any provider's log alike.

Example:
>>> log = ["[worker-0] epoch 1/3", "[chief-0] Traceback (your code's frames; ...):",
...        '[chief-0]   File "trainer/task.py", line 12, in make_dataset', "[chief-0] KeyError: 'b'",
...        "[chief-0] cloudtrain-runtime: error: trainer/task.py:12: make_dataset() raised KeyError: 'b'",
...        "[cloudtrain] Job failed. Replica chief-0 failed (exit 1)."]
>>> found = last_lines(log)
>>> found.replica, len(found.lines), found.lines[-1][:40]
('chief-0', 4, '[chief-0] cloudtrain-runtime: error: tra')
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from cloudtrain.errors import CloudtrainError
from cloudtrain.provider import Job

# The runtime's last line on an error (cloudtrain_runtime.main), and where its traceback starts.
ERROR_MARK = "cloudtrain-runtime: error:"
TRACE_START = "Traceback ("
# Log lines read back from the end, and the most shown: a traceback longer than that is cut.
READ_LINES = 500
MOST_SHOWN = 40
# What a replica shows when no traceback is found (a replica killed, a crash in C++).
LAST_SHOWN = 20
PREFIXED = re.compile(r"\[(?P<name>[^\]]+)\] ")
LAUNCHER = "cloudtrain"  # the local launcher's own lines, not a replica's


@dataclass(frozen=True)
class LastLines:
    """The failing replica (None when no line names one) and its last lines, prefixes kept."""

    replica: str | None
    lines: list[str]


def failure_lines(job: Job) -> LastLines | str:
    """The failing replica's last lines from ``job``'s log, or why they could not be read."""
    try:
        return last_lines(list(job.logs(tail=READ_LINES)))
    except CloudtrainError as error:
        return f"Its log could not be read ({error}); see cloudtrain logs {job.id}."


def last_lines(log: Sequence[str]) -> LastLines:
    """The lines that say why: the last erring replica's, from its traceback to its error line.

    Without an error line, the last lines of replica output (the launcher's own left out).
    """
    named = [(_replica(line), line) for line in log]
    errors = [
        i for i, (name, line) in enumerate(named) if name not in (None, LAUNCHER) and ERROR_MARK in line
    ]
    if not errors:
        output = [line for name, line in named if name != LAUNCHER]
        return LastLines(None, output[-LAST_SHOWN:])
    replica = named[errors[-1]][0]
    own = [line for name, line in named[: errors[-1] + 1] if name == replica]
    starts = [i for i, line in enumerate(own) if TRACE_START in line]
    if not starts:
        return LastLines(replica, own[-LAST_SHOWN:])
    return LastLines(replica, own[max(starts[-1], len(own) - MOST_SHOWN) :])


def describe(found: LastLines | str, job_id: str) -> list[str]:
    """The heading and the lines as ``status`` and ``wait`` print them."""
    if isinstance(found, str):
        return [found]
    if not found.lines:
        return [f"Its log is empty; see cloudtrain logs {job_id}."]
    whose = f"Last lines of {found.replica}" if found.replica else "Last lines of its log"
    return [f"{whose} (all of them: cloudtrain logs {job_id}):", *found.lines]


def _replica(line: str) -> str | None:
    match = PREFIXED.match(line)
    return match["name"] if match else None
