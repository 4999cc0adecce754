"""The hang watchdog's bound and when it watches, on a clock the test moves (no sleeps)."""

from __future__ import annotations

import pytest

from cloudtrain_runtime import watchdog
from cloudtrain_runtime.watchdog import HangWatchdog, Watch


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("steps", "floor", "bound"),
    [
        ([], 60, 60),  # nothing measured yet: the floor
        ([0.01] * 50, 60, 60),  # a fast model: the floor
        ([30.0, 20.0, 25.0], 60, 125.0),  # a slow one: 5 x the median
        ([1.0, 1.0, 1.0, 900.0], 5, 5.0),  # one slow step does not move the median
        ([2.0], 5, 10.0),  # one step is its own median
    ],
)
def test_the_bound_is_the_floor_or_five_median_steps(steps: list[float], floor: float, bound: float) -> None:
    assert watchdog.bound_s(steps, floor) == bound


def _stepped(clock: Clock, watch: Watch, steps: int, step_s: float) -> None:
    for _ in range(steps):
        clock.now += step_s
        watch.step_ended()


def test_nothing_is_overdue_before_the_epochs_first_steps_end() -> None:
    clock = Clock()
    watch = Watch(floor_s=5, clock=clock)
    clock.now += 3600  # compiling, the first step
    assert watch.overdue_s() is None
    watch.step_ended()
    clock.now += 3600  # the second step: still not armed
    assert watch.overdue_s() is None
    watch.step_ended()
    assert watch.overdue_s() is None  # armed, and in time: 5 x that slow step
    _stepped(clock, watch, 2, step_s=0.5)  # the median is 0.5s now: the floor rules
    clock.now += 5.5
    assert watch.overdue_s() == 5.5


def test_a_slow_model_is_given_five_median_steps() -> None:
    clock = Clock()
    watch = Watch(floor_s=5, clock=clock)
    watch.step_ended()
    _stepped(clock, watch, 5, step_s=10.0)
    clock.now += 49.0
    assert watch.overdue_s() is None
    clock.now += 2.0
    assert watch.overdue_s() == 51.0


def test_evaluation_pauses_the_watch_and_its_time_is_no_step() -> None:
    clock = Clock()
    watch = Watch(floor_s=5, clock=clock)
    watch.step_ended()
    _stepped(clock, watch, 3, step_s=0.1)
    watch.pause()
    clock.now += 3600
    assert watch.overdue_s() is None
    watch.resume()
    assert watch.overdue_s() is None  # counted from the resume
    clock.now += 0.1
    watch.step_ended()
    assert max(watch.step_times) == pytest.approx(0.1)
    clock.now += 6
    assert watch.overdue_s() == pytest.approx(6)


def test_the_epoch_end_disarms_until_the_next_epochs_first_steps() -> None:
    clock = Clock()
    watch = Watch(floor_s=5, clock=clock)
    _stepped(clock, watch, 4, step_s=0.1)
    watch.disarm()
    clock.now += 3600  # the backup written at the epoch's end, the next epoch's first step
    assert watch.overdue_s() is None
    watch.step_ended()
    assert watch.overdue_s() is None
    assert max(watch.step_times) == pytest.approx(0.1)  # the gap was no step
    _stepped(clock, watch, 1, step_s=0.1)
    clock.now += 6
    assert watch.overdue_s() == pytest.approx(6)


def test_the_alarm_names_the_replica_and_shows_where_training_is_stuck() -> None:
    clock, said, alarms = Clock(), [], []
    callback = HangWatchdog(Watch(floor_s=5, clock=clock), "worker:1", said.append, lambda: alarms.append(1))
    for _ in range(3):
        clock.now += 0.1
        callback.on_train_batch_end(0)
    assert not callback.check() and not said
    clock.now += 7
    assert callback.check()
    assert alarms == [1]
    (line,) = said
    assert line.startswith("hang watchdog: replica worker:1 made no training step for 7s (bound 5s")
    # the stack of the thread that trains: this test, where it called check()
    assert "in test_the_alarm_names_the_replica_and_shows_where_training_is_stuck" in line
    assert line.endswith("ending this attempt with exit 75 so the run resumes from its last backup")


def test_evaluation_hooks_pause_and_resume_the_watch() -> None:
    clock, said = Clock(), []
    callback = HangWatchdog(Watch(floor_s=5, clock=clock), "chief:0", said.append, lambda: None)
    for _ in range(3):
        clock.now += 0.1
        callback.on_train_batch_end(0)
    callback.on_test_begin()
    clock.now += 600
    assert not callback.check()
    callback.on_test_end()
    callback.on_epoch_end(0)
    clock.now += 600
    assert not callback.check() and not said


def test_the_backup_on_notice_is_not_watched() -> None:
    clock = Clock()
    watch = Watch(floor_s=5, clock=clock)
    _stepped(clock, watch, 3, step_s=0.1)
    seen = []

    def backup(batches: int) -> None:  # a slow store: the write takes ten minutes
        clock.now += 600
        seen.append((batches, watch.overdue_s()))

    watchdog.unwatched(watch, backup)(7)
    assert seen == [(7, None)]
    assert watch.overdue_s() is None and not watch.paused  # watched again, from the write's end
    assert watchdog.unwatched(None, backup) is backup
