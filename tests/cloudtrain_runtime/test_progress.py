"""The chief's progress record: bounded, atomic, and never in training's way."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from cloudtrain_runtime import progress


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_rate_is_over_the_recent_steps_and_starts_over_after_a_restore() -> None:
    rate = progress.Rate(window=3)
    for step, seconds in [(0, 0.0), (1, 10.0), (11, 11.0), (21, 12.0)]:
        rate.add(step, seconds)
    assert rate.steps_per_s() == 10.0  # the slow first step fell out of the window
    rate.add(5, 13.0)
    assert rate.steps_per_s() is None


def test_write_replaces_the_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "run" / "cloudtrain-progress.json"
    progress.write({"step": 1}, path)
    progress.write({"step": 2}, path)
    assert json.loads(path.read_text()) == {"step": 2}
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_a_record_is_written_at_most_once_an_interval_unless_an_epoch_ends(tmp_path: Path) -> None:
    clock, stored = _Clock(), []
    done = threading.Event()

    def store(data: Mapping[str, Any], path: Path) -> None:
        stored.append(dict(data))
        done.set()

    writer = progress.Writer(tmp_path / "p.json", print, interval_s=5.0, store=store, clock=clock)
    writer.offer({"step": 1})
    assert done.wait(5)
    done.clear()
    assert not writer.due()
    writer.offer({"step": 2})
    assert not done.wait(0.2)  # not due: dropped
    writer.offer({"step": 3}, after_s=0.0)  # the end of fit writes at once
    assert done.wait(5)
    writer.close()
    assert stored == [{"step": 1}, {"step": 3}]


def test_a_slow_store_never_holds_up_a_step_and_gets_the_newest_record(tmp_path: Path) -> None:
    release, stored = threading.Event(), []

    def slow(data: Mapping[str, Any], path: Path) -> None:
        release.wait(10)
        stored.append(data["step"])

    writer = progress.Writer(tmp_path / "p.json", print, interval_s=0.0, store=slow)
    for step in range(1000):  # returns at once though the store hangs
        writer.offer({"step": step})
    release.set()
    writer.close()
    assert stored[-1] == 999
    assert len(stored) <= 3  # the records it missed were dropped, not queued


def test_a_failing_store_warns_once_and_never_raises(tmp_path: Path) -> None:
    said: list[str] = []

    def down(data: Mapping[str, Any], path: Path) -> None:
        raise OSError("Transport endpoint is not connected")

    writer = progress.Writer(tmp_path / "p.json", said.append, interval_s=0.0, store=down)
    for step in range(5):
        writer.offer({"step": step}, after_s=0.0)
    writer.close()
    assert len(said) == 1 and "not connected" in said[0] and "training goes on" in said[0]
    assert writer.written == 0


def test_the_callback_reports_epoch_step_rate_and_loss(tmp_path: Path) -> None:
    clock = _Clock()
    path = tmp_path / "p.json"
    writer = progress.Writer(path, print, interval_s=0.5, clock=clock)
    callback = progress.ReportProgress(writer, 3, 32, lambda: 2, clock)
    callback.params = {"steps": 10}
    callback.on_train_begin()
    callback.on_epoch_begin(0)
    for batch in range(10):
        clock.now += 0.5
        callback.on_train_batch_end(batch, {"loss": 1.0 - batch / 10})
    callback.on_epoch_end(0, {"loss": 0.1})
    callback.on_epoch_begin(1)
    clock.now += 0.5
    callback.on_train_batch_end(0, {"loss": 0.09})
    callback.on_train_end()
    found = json.loads(path.read_text())
    assert {k: found[k] for k in ("epoch", "epochs", "step", "steps_per_epoch", "attempt")} == {
        "epoch": 2,
        "epochs": 3,
        "step": 1,
        "steps_per_epoch": 10,
        "attempt": 2,
    }
    assert found["examples_per_s"] == 2.0 * 32  # 2 steps/s of 32 examples
    assert found["loss"] == 0.09


def test_every_fit_of_a_session_writes_its_progress(tmp_path: Path) -> None:
    """A script may call ``fit`` more than once with the session's callbacks: the end of the first
    stopped the writer, and the next ``fit`` starts it again (a real single-process Keras fit)."""
    keras = pytest.importorskip("keras")
    import numpy as np

    from cloudtrain_runtime import callbacks

    path = tmp_path / "cloudtrain-progress.json"
    writer = progress.Writer(path, print)
    callback = callbacks.keras_callback(keras, progress.ReportProgress, writer, 5, 8, lambda: 1)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((16, 4), "float32"), np.ones((16, 1), "float32")

    model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[callback])
    assert json.loads(path.read_text())["epoch"] == 1
    model.fit(x, y, batch_size=8, epochs=3, verbose=0, callbacks=[callback])
    found = json.loads(path.read_text())
    assert (found["epoch"], found["step"], found["steps_per_epoch"]) == (3, 2, 2)
    assert writer.written >= 2
