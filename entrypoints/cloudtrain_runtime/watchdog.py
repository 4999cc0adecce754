"""The hang watchdog: a replica that makes no step progress for too long ends its attempt with exit 75.

A collective whose peer is gone, a data loader stuck on a bucket or a deadlocked worker
leaves a job RUNNING until ``limits.max_runtime``. Each replica watches the time since its
last training step ended. The bound is ``max(floor, 5 × the median step)``
(``bound_s``): a slow model is never cut short, a fast one is caught after the floor
(``training.hang_timeout``, 60 s by default).

Nothing is watched where a long pause is normal: before the first ``ARM_AFTER_STEPS``
steps of each epoch have ended (tracing and compiling, the first step, an input
pipeline filling its buffers), during evaluation (``on_test_begin`` to ``on_test_end``)
and the backup on the provider's notice (``unwatched``), from the end of an epoch's training to the next epoch's steps (the backup written at
the epoch's end) and after training (the export).

On the alarm the replica says which it is and where its training thread is stuck (a
Python stack dump), then ends the process with exit 75 (``Reclaimed``): a hung
collective cannot be unwound, and the run resumes from its last backup as after a reclaim.
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from cloudtrain_runtime.errors import exit_reclaimed

if TYPE_CHECKING:
    _KerasBase = Any  # the Keras Callback this mixin meets in ``callbacks.keras_callback``
else:
    _KerasBase = object

FLOOR_S = 60
STEP_MULTIPLE = 5.0
# Steps of each epoch that must end before the watchdog is armed: the first one traces and
# compiles, and the interval to the second is the first step time worth measuring.
ARM_AFTER_STEPS = 2
# The step times the median is taken over: the most recent ones.
STEPS_KEPT = 101
# How often the watching thread looks.
LOOK_EVERY_S = 1.0


def bound_s(step_times: list[float], floor_s: float) -> float:
    """How long a replica may go without a step: ``floor_s``, or 5 × the median step where that is longer.

    >>> bound_s([], floor_s=60)
    60
    >>> bound_s([0.01, 0.02, 9.0], floor_s=60)  # a fast model: the floor
    60
    >>> bound_s([20.0, 30.0, 25.0], floor_s=60)  # a slow one: 5 × its median
    125.0
    """
    if not step_times:
        return floor_s
    return max(floor_s, STEP_MULTIPLE * statistics.median(step_times))


class Watch:
    """The watchdog's state, driven by the training hooks and read by the watching thread.

    Armed once ``ARM_AFTER_STEPS`` steps of the epoch have ended; ``pause`` and ``resume``
    bracket the work that is not a step (evaluation); ``disarm`` ends an epoch's watch.
    """

    def __init__(self, floor_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.floor_s, self.clock = floor_s, clock
        self.step_times: deque[float] = deque(maxlen=STEPS_KEPT)
        self.steps = 0  # steps ended in this epoch's watch
        self.paused = False
        self._last: float | None = None  # when the last step ended, or the watch resumed

    def __repr__(self) -> str:
        return (
            f"Watch(floor_s={self.floor_s}, steps={self.steps}, paused={self.paused}, bound_s={self.bound_s})"
        )

    @property
    def bound_s(self) -> float:
        return bound_s(list(self.step_times), self.floor_s)

    def step_ended(self) -> None:
        now = self.clock()
        if self._last is not None and not self.paused:
            self.step_times.append(now - self._last)
        self.steps, self._last = self.steps + 1, now

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        """Watch again, counting from now: the paused time was no step's."""
        self.paused, self._last = False, self.clock()

    @contextlib.contextmanager
    def unwatched(self) -> Iterator[None]:
        """Pause the watch for the work inside (the backup on the provider's notice), then resume it."""
        self.pause()
        try:
            yield
        finally:
            self.resume()

    def disarm(self) -> None:
        """Stop watching until ``ARM_AFTER_STEPS`` more steps have ended (the next epoch's)."""
        self.steps, self._last = 0, None

    def overdue_s(self) -> float | None:
        """Seconds since the last step ended, where that passes the bound; None while unarmed, paused or in time."""
        if self.paused or self.steps < ARM_AFTER_STEPS or self._last is None:
            return None
        waited = self.clock() - self._last
        return waited if waited > self.bound_s else None


def unwatched(watch: Watch | None, work: Callable[[int], None]) -> Callable[[int], None]:
    """``work`` with ``watch`` paused while it runs; ``work`` itself where nothing is watched."""
    if watch is None:
        return work

    def run(argument: int) -> None:
        with watch.unwatched():
            work(argument)

    return run


def stack_of(thread_id: int) -> str:
    """The Python stack of the thread ``thread_id`` as a traceback prints it; "" when it has ended."""
    frame = sys._current_frames().get(thread_id)
    return "".join(traceback.format_stack(frame)) if frame is not None else ""


def report(line: str) -> None:
    """Every replica's alarm reaches the log (``Session.say`` is the chief's alone)."""
    print(line, file=sys.stderr, flush=True)


class HangWatchdog(_KerasBase):
    """The Keras side of the watchdog: feeds a ``Watch`` and runs the thread that reads it.

    ``replica`` names this replica in the alarm (``worker:1``). ``alarm`` ends the process;
    tests pass their own.
    """

    def __init__(
        self,
        watch: Watch,
        replica: str,
        say: Callable[[str], None] = report,
        alarm: Callable[[], None] = exit_reclaimed,
    ) -> None:
        super().__init__()
        self.watch, self.replica, self.say, self.alarm = watch, replica, say, alarm
        self._stopped = threading.Event()
        self._training_thread = threading.get_ident()

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        self._training_thread = threading.get_ident()
        self._stopped.clear()
        threading.Thread(target=self._look, name="cloudtrain-hang-watchdog", daemon=True).start()

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self.watch.step_ended()

    def on_test_begin(self, logs: dict[str, Any] | None = None) -> None:
        self.watch.pause()

    def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
        self.watch.resume()

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self.watch.disarm()

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        self.watch.disarm()
        self._stopped.set()

    def _look(self) -> None:
        while not self._stopped.wait(LOOK_EVERY_S):
            if self.check():
                return

    def check(self) -> bool:
        """Raise the alarm where the watch is overdue; whether it did."""
        waited = self.watch.overdue_s()
        if waited is None:
            return False
        self.say(
            f"hang watchdog: replica {self.replica} made no training step for {waited:.0f}s (bound "
            f"{self.watch.bound_s:.0f}s: training.hang_timeout, or 5 x the median step); its training "
            f"thread is at:\n{stack_of(self._training_thread)}"
            "ending this attempt with exit 75 so the run resumes from its last backup"
        )
        self.alarm()
        return True
