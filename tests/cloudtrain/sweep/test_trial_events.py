"""A cloud sweep's logs: the trials' events between readings, once or followed to the end."""

from __future__ import annotations

from collections.abc import Iterator

from cloudtrain.provider.jobs import JobStatus
from cloudtrain.provider.sweeps import Trial, trial_events

RUNNING = Trial(1, "s-t1", "running", {"units": 8})
MEASURED = Trial(1, "s-t1", "running", {"units": 8}, 0.5, 1)
ENDED = Trial(1, "s-t1", "succeeded", {"units": 8}, 0.25, 2)
SECOND = Trial(2, "s-t2", "running", {"units": 16})


class Sweep:
    """Readings of a sweep's trials, one per ``trials()``, and its states, one per ``status()``."""

    goal = "minimize"

    def __init__(self, readings: list[list[Trial]], states: list[str]) -> None:
        self._readings: Iterator[list[Trial]] = iter(readings)
        self._states = iter(states)
        self.metric_reads = 0

    @property
    def metric(self) -> str:
        self.metric_reads += 1
        return "val_loss"

    def trials(self) -> list[Trial]:
        return next(self._readings)

    def best(self) -> Trial | None:
        return None

    def status(self) -> JobStatus:
        state = next(self._states)
        return JobStatus(state, state.upper())


def test_followed_to_the_end_each_change_once() -> None:
    sweep = Sweep([[RUNNING], [MEASURED], [ENDED, SECOND]], ["running", "running", "succeeded"])
    waits: list[float] = []
    lines = list(trial_events(sweep, follow=True, tail=None, sleep=waits.append, poll_s=30.0))
    assert lines == [
        "trial 1 running: units=8",
        "trial 1 epoch 1 val_loss=0.5000",
        "trial 1 epoch 2 val_loss=0.2500",
        "trial 1 succeeded val_loss=0.2500",
        "trial 2 running: units=16",
    ]
    assert waits == [30.0, 30.0]
    assert sweep.metric_reads == 1  # the objective never changes: asked once, not once per reading


def test_not_followed_reads_once_and_tail_keeps_the_last_lines() -> None:
    sweep = Sweep([[ENDED, SECOND]], [])
    lines = list(trial_events(sweep, follow=False, tail=1, sleep=lambda _: None, poll_s=30.0))
    assert lines == ["trial 2 running: units=16"]
