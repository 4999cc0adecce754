"""Following a job's output: the one loop behind every provider's ``Job.logs(follow=True)``.

A provider says how to read what is new since its last read (Cloud Logging entries
after a cursor, CloudWatch streams from their tokens, the end of a local file); this
loop reads once, or, when following, reads again every ``poll_s`` until the job has
ended. The job's state is asked *before* each read, so what the job wrote just before
it ended is still read after the end is seen. ``tail`` keeps the last lines of the first
read only, so ``logs --tail 20 --follow`` prints the last 20 and then whatever is new,
as ``kubectl logs --tail`` does.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def read_until_done(
    read_new: Callable[[], Iterable[T]],
    *,
    follow: bool,
    is_done: Callable[[], bool],
    sleep: Callable[[float], None],
    poll_s: float,
    tail: int | None = None,
) -> Iterator[T]:
    """What ``read_new()`` returns; with ``follow``, again every ``poll_s`` until ``is_done()``.

    Args:
        read_new: reads what was written since its previous call.
        follow: keep reading until the job ends; otherwise read once.
        is_done: whether the job has ended (asked only when following).
        sleep: how to wait between reads (``time.sleep``; tests pass a recorder).
        poll_s: seconds between reads.
        tail: of the first read, keep only the last ``tail`` items (None: all of them).

    Example:
    >>> batches, states = iter([["a"], [], ["b"]]), iter([False, False, True])
    >>> waits = []
    >>> list(read_until_done(lambda: next(batches), follow=True, is_done=lambda: next(states),
    ...                      sleep=waits.append, poll_s=2.0)), waits
    (['a', 'b'], [2.0, 2.0])
    """
    first = True
    while True:
        done = not follow or is_done()
        new = read_new()
        yield from collections.deque(new, maxlen=tail) if first and tail is not None else new
        first = False
        if done:
            return
        sleep(poll_s)
