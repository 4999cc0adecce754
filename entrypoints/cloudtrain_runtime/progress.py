"""The chief's progress record: where training is now, for ``cloudtrain status`` and ``list``.

The chief keeps ``cloudtrain-progress.json`` beside the run's history (the same folder under
the run's prefix; on SageMaker, whose results reach S3 only when the job ends, beside the
durable history in the checkpoint folder it syncs while the job runs:
``replica.Locations.progress_file``): the epoch and step, the steps per
epoch, examples/s over the recent steps, the last loss, the attempt and the time. The SDK
reads it back to show an ETA and the cost to finish (``cloudtrain.run_progress``).

Writing never holds training up: at most every ``INTERVAL_S`` (and at an epoch's end, where
the last record is ``EPOCH_GAP_S`` old or more, and at the end of ``fit``) a
step hands the newest record to a thread of the writer's own (``Writer.offer``), which
writes it through a temporary file and ``os.replace`` so a reader never sees half. A slow
store delays only the thread, which then writes the newest record and drops the ones it
missed; a store that fails prints one warning and training goes on.

Example:
>>> rate = Rate(window=3)
>>> for step, seconds in [(0, 0.0), (10, 1.0), (20, 2.0)]:
...     rate.add(step, seconds)
>>> rate.steps_per_s()
10.0
"""

from __future__ import annotations

import collections
import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    _KerasBase = Any  # meets the Keras Callback in ``callbacks.keras_callback``
else:
    _KerasBase = object

FORMAT = 1
# At most one record this often within an epoch: a write is a few hundred bytes, but on a
# bucket's FUSE mount it is a request; every 5 s keeps a status fresh.
INTERVAL_S = 5.0
# An epoch's end writes at once unless a record went less than this long ago: epochs of
# minutes each get theirs, the bundled example's 30 ms epochs do not write 30 times a second.
EPOCH_GAP_S = 1.0
# The rate is over this many of the latest records (about half a minute at 5 s each),
# so a status shows the speed now rather than since the start (compilation and a
# restart's warm-up fall out of it).
RATE_WINDOW = 6


class Rate:
    """Steps per second over the latest ``window`` (step, time) samples."""

    def __init__(self, window: int = RATE_WINDOW) -> None:
        self.samples: collections.deque[tuple[int, float]] = collections.deque(maxlen=window)

    def add(self, step: int, seconds: float) -> None:
        """A sample: the optimizer's ``step`` at ``seconds``; a step that went back (a restore) starts over."""
        if self.samples and step == self.samples[-1][0]:
            return
        if self.samples and step < self.samples[-1][0]:
            self.samples.clear()
        self.samples.append((step, seconds))

    def steps_per_s(self) -> float | None:
        """The recent rate; None before two samples."""
        if len(self.samples) < 2:
            return None
        (first, started), (last, ended) = self.samples[0], self.samples[-1]
        return (last - first) / (ended - started) if ended > started else None


def record(
    *,
    epoch: int,
    epochs: int,
    step: int,
    steps_per_epoch: int | None,
    steps_per_s: float | None,
    global_batch: int,
    loss: float | None,
    wall_s: float,
    attempt: int | None,
    now: float,
) -> dict[str, Any]:
    """One progress record as JSON-ready data.

    ``epoch`` is 1-based and ``step`` the step within it (the last one finished);
    ``steps_per_s`` the recent rate (None before two steps), which ``global_batch`` turns into examples;
    ``wall_s`` the seconds since this attempt started; ``now`` Unix seconds (``updated_at``).
    """
    return {
        "format": FORMAT,
        "epoch": epoch,
        "epochs": epochs,
        "step": step,
        "steps_per_epoch": steps_per_epoch,
        "steps_per_s": steps_per_s,
        "examples_per_s": None if steps_per_s is None else steps_per_s * global_batch,
        "loss": loss,
        "wall_s": round(wall_s, 3),
        "attempt": attempt,
        "updated_at": now,
    }


def write(data: Mapping[str, Any], path: Path) -> None:
    """Write ``data`` whole to ``path``, through a temporary file, so a reader never sees half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.partial")
    partial.write_text(json.dumps(data) + "\n")
    os.replace(partial, path)


class Writer:
    """Writes the newest record offered, from a thread of its own; at most one record every ``interval_s``.

    A step asks ``due`` (one clock read) and only then builds a record to ``offer``; an
    epoch's end offers one after a shorter gap, the end of ``fit`` after none. The thread writes the newest record it holds and drops
    any it had no time for.

    Args:
        path: the progress file.
        say: where the one warning goes when a write fails.
        interval_s: the shortest time between two records offered (an epoch's end excepted).
        store: writes one record (``write``; a test passes a slow or failing one).
        clock: monotonic seconds.
    """

    def __init__(
        self,
        path: Path,
        say: Callable[[str], None],
        *,
        interval_s: float = INTERVAL_S,
        store: Callable[[Mapping[str, Any], Path], None] = write,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path, self.say, self.interval_s, self.store, self.clock = path, say, interval_s, store, clock
        self.written = 0
        self.warned = False
        self._offered = -float("inf")
        self._latest: Mapping[str, Any] | None = None
        self._closed = False
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self.start()

    def __repr__(self) -> str:
        return f"Writer(path={str(self.path)!r}, written={self.written})"

    def due(self) -> bool:
        """Whether a record offered now would be kept: a step asks before it builds one."""
        return self.clock() - self._offered >= self.interval_s

    def offer(self, data: Mapping[str, Any], *, after_s: float | None = None) -> None:
        """Keep ``data`` as the record to write next, if the last was offered ``after_s`` ago or more
        (None: ``interval_s``; 0: always). Never waits for the store."""
        if self.clock() - self._offered < (self.interval_s if after_s is None else after_s):
            return
        self._offered = self.clock()
        with self._wake:
            self._latest = data
            self._wake.notify()

    def start(self) -> None:
        """Start the writing thread, unless it runs: each ``fit`` of a session starts it, and its end ``close``s it."""
        if self._thread is not None and self._thread.is_alive():
            return
        with self._wake:
            self._closed = False
        self._thread = threading.Thread(target=self._run, name="cloudtrain-progress", daemon=True)
        self._thread.start()

    def close(self, timeout_s: float = 5.0) -> None:
        """Write what is left and stop the thread, waiting at most ``timeout_s`` for a slow store."""
        with self._wake:
            self._closed = True
            self._wake.notify()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _run(self) -> None:
        while True:
            with self._wake:
                while self._latest is None and not self._closed:
                    self._wake.wait()
                data, self._latest, closed = self._latest, None, self._closed
            if data is not None:
                self._store(data)
            if closed:
                return

    def _store(self, data: Mapping[str, Any]) -> None:
        try:
            self.store(data, self.path)
            self.written += 1
        except Exception as error:  # a store that fails must never fail training
            if not self.warned:
                self.warned = True
                self.say(
                    f"warning: cannot write the progress record {str(self.path)!r} ({error}); "
                    "training goes on, and status shows no progress until a write succeeds."
                )


class ReportProgress(_KerasBase):
    """The chief's Keras callback: offers a progress record after a step when one is due, and at every epoch's end.

    A step costs a clock read unless a record is due. Steps are counted by the batch hooks, whose index counts steps. The steps per epoch come
    from ``fit``'s ``params`` until the first epoch ends and from the count after: some
    Keras versions give there the calls into the step function, each of
    ``steps_per_execution`` steps, and a step past that figure shows it was one;
    a step costs a clock read unless a write is due. ``attempt`` gives the attempt's number
    in the run's history (None before it joined); ``global_batch`` turns steps into examples.
    """

    def __init__(
        self,
        writer: Writer,
        epochs: int,
        global_batch: int,
        attempt: Callable[[], int | None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.writer, self.epochs, self.global_batch, self.attempt = writer, epochs, global_batch, attempt
        self.clock = clock
        self.started = clock()
        self.rate = Rate()
        self.epoch = 0
        self.step = 0
        self.before = 0  # steps of this attempt's earlier epochs
        self.steps_per_epoch: int | None = None
        self.loss: float | None = None

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        # A session's callbacks serve every ``fit`` of a script: the end of the last one
        # closed the writer, so this one starts it again.
        self.writer.start()
        steps = (getattr(self, "params", None) or {}).get("steps")
        self.steps_per_epoch = int(steps) if steps else None

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self.epoch, self.before, self.step = epoch, self.before + self.step, 0

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self.step = batch + 1
        if self.writer.due():
            self.writer.offer(self._record(logs))

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self.steps_per_epoch = max(self.steps_per_epoch or 0, self.step)
        self.writer.offer(self._record(logs), after_s=EPOCH_GAP_S)

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        if self.epoch or self.step:  # trained this attempt: the last record says where it ended
            self.writer.offer(self._record(logs), after_s=0.0)
        self.writer.close()

    def _record(self, logs: Mapping[str, Any] | None) -> dict[str, Any]:
        """The record now; the rate is over the steps between the latest records (``Rate``)."""
        now = self.clock()
        if self.steps_per_epoch is not None and self.step > self.steps_per_epoch:
            self.steps_per_epoch = None  # Keras counted calls of several steps: known at the epoch's end
        self.rate.add(self.before + self.step, now)
        loss = (logs or {}).get("loss")
        self.loss = self.loss if loss is None else float(loss)
        return record(
            epoch=self.epoch + 1,
            epochs=self.epochs,
            step=self.step,
            steps_per_epoch=self.steps_per_epoch,
            steps_per_s=self.rate.steps_per_s(),
            global_batch=self.global_batch,
            loss=self.loss,
            wall_s=now - self.started,
            attempt=self.attempt(),
            now=time.time(),
        )
