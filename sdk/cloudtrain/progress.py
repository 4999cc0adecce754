"""What a long step reports while it runs, for whoever wants to show it.

The library never draws anything: ``submit(..., progress=callback)`` calls ``callback``
with a ``Progress`` as the code bundle uploads, and the caller decides what to show (the
CLI draws a bar on stderr; a pipeline might log every tenth of the way, or nothing).

Example:
>>> seen = []
>>> report = reporter(seen.append, step="upload", name="3f2a.tar.gz", total=10)
>>> report(4), report(6)
(None, None)
>>> [f"{event.done}/{event.total}" for event in seen]
['0/10', '4/10', '10/10']
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Progress:
    """How far a step has got.

    Attributes:
        step: what is under way: ``"upload"`` (of the code bundle) or ``"copy"`` (of a run's
            backup to where it resumes, ``cloudtrain.resume``).
        name: what the step works on (the bundle's file name, the backup's folder).
        done: how much is done, in bytes for an upload.
        total: how much there is in all; ``done == total`` when the step has finished.

    Example:
    >>> Progress("upload", "3f2a.tar.gz", done=5, total=20).fraction
    0.25
    """

    step: str
    name: str
    done: int
    total: int

    @property
    def fraction(self) -> float:
        """``done / total``, 1.0 for an empty step."""
        return self.done / self.total if self.total else 1.0


# A caller's progress callback: ``submit(..., progress=print)``.
OnProgress = Callable[[Progress], None]
# What a step calls with each amount just done (bytes sent); ``reporter`` turns it into Progress.
Advance = Callable[[int], None]


def reporter(progress: OnProgress | None, *, step: str, name: str, total: int) -> Advance:
    """An ``Advance`` that adds up what is done and calls ``progress`` with the running total.

    ``progress`` is called at once with nothing done, so a caller can show the step as it
    starts. Uploads advance from several threads (s3transfer's workers), so the sum and
    the call are made under a lock: ``progress`` sees one call at a time, in order.
    """
    if progress is None:
        return _ignore
    lock = threading.Lock()
    done = 0

    def advance(amount: int) -> None:
        nonlocal done
        with lock:
            done += amount
            progress(Progress(step, name, done=done, total=total))

    progress(Progress(step, name, done=0, total=total))
    return advance


def _ignore(amount: int) -> None:
    """The ``Advance`` of a caller that asked for no progress."""
