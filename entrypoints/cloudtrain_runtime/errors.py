"""The runtime's exceptions: each one names what was wrong and how to fix it.

Only ``main`` turns them into one ``error:`` line on stderr and an exit code, so the
rest of the runtime raises and never prints or exits.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn


class RuntimeFailure(Exception):
    """Base of every error the runtime raises on purpose."""

    exit_code = 1
    # How its one line on stderr begins, after ``cloudtrain-runtime:``.
    label = "error: "


class ConfigError(RuntimeFailure):
    """The runtime configuration is missing, malformed or impossible on this cluster."""

    exit_code = 2


class ClusterError(RuntimeFailure):
    """The environment describes a cluster the runtime cannot join."""

    exit_code = 2


class UserCodeError(RuntimeFailure):
    """The user's module or script broke the contract or raised; the message names the file.

    ``trace``: for an exception the user's code raised, its traceback as Python prints it,
    cut to the user's own frames (or whole, when asked for): ``main`` prints it before
    the one-line error.
    """

    exit_code = 1

    def __init__(self, message: str, trace: str = "") -> None:
        super().__init__(message)
        self.trace = trace


class PeerLost(RuntimeFailure):
    """Another replica of the job died or stopped answering; the job must restart."""

    exit_code = 1


class Reclaimed(RuntimeFailure):
    """The provider asked for the machines back (its notice, SIGTERM); the run resumes elsewhere.

    Exit 75, ``EX_TEMPFAIL`` of BSD's sysexits.h (Python's ``os.EX_TEMPFAIL``): "a temporary
    failure ... the user is invited to retry later". The launcher and the providers' retries
    read it as a reclaim, never as the user's code failing.
    """

    exit_code = 75
    label = ""  # not an error: its message says what happened and where the run resumes


def exit_reclaimed() -> NoReturn:
    """End the process at once with ``Reclaimed``'s exit 75, its output flushed.

    For a thread that cannot raise into a main thread stuck where no exception reaches
    (a hung collective, a backup past its budget): no cleanup, no exit handlers.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(Reclaimed.exit_code)
