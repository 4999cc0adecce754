"""The profile window: parsed from its variable, and traced where it says, driven through the hooks."""

from __future__ import annotations

from pathlib import Path

import pytest

from cloudtrain_runtime import profiling
from cloudtrain_runtime.errors import ConfigError


class Tracer:
    """start/stop of a profiler, recording what it was asked."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def start(self, logdir: str) -> None:
        self.calls.append(f"start {Path(logdir).name}")

    def stop(self) -> None:
        self.calls.append("stop")


def profiler(window: str, tmp_path: Path, said: list[str]) -> tuple[profiling.StepProfiler, Tracer]:
    tracer = Tracer()
    found = profiling.StepProfiler(
        profiling.parse(window), tmp_path / "logs", tracer.start, tracer.stop, said.append
    )
    return found, tracer


def drive(found: profiling.StepProfiler, epochs: int, steps: int, per_call: int = 1) -> list[tuple[int, int]]:
    """Keras's hook order for ``epochs`` epochs of ``steps`` steps, ``per_call`` steps per execution."""
    traced = []
    for epoch in range(epochs):
        found.epoch_begins(epoch)
        for first in range(0, steps, per_call):
            last = min(first + per_call, steps) - 1
            found.step_begins(first)
            if found.tracing:
                traced.append((epoch + 1, first + 1))
            found.step_ends(last)
        found.finish()
    return traced


def test_only_the_windows_steps_of_its_epoch_are_traced(tmp_path: Path) -> None:
    said: list[str] = []
    found, tracer = profiler("2:3-5", tmp_path, said)
    assert drive(found, epochs=3, steps=8) == [(2, 3), (2, 4), (2, 5)]
    assert tracer.calls == ["start logs", "stop"]
    assert said == [f"profile of epoch 2, steps 3-5: {tmp_path / 'logs'}"]


def test_a_window_past_the_epochs_end_stops_with_the_epoch(tmp_path: Path) -> None:
    found, tracer = profiler("1:5-50", tmp_path, [])
    assert drive(found, epochs=2, steps=8) == [(1, step) for step in range(5, 9)]
    assert tracer.calls == ["start logs", "stop"]


def test_with_several_steps_per_execution_the_executions_holding_the_window_are_traced(
    tmp_path: Path,
) -> None:
    found, tracer = profiler("1:20-40", tmp_path, [])
    # executions of 16 steps: 1-16 (its size unknown until it ends), 17-32 and 33-48 hold 20-40
    assert drive(found, epochs=1, steps=64, per_call=16) == [(1, 17), (1, 33)]
    assert tracer.calls == ["start logs", "stop"]


def test_an_epoch_outside_the_run_traces_nothing(tmp_path: Path) -> None:
    found, tracer = profiler("9:1-2", tmp_path, [])
    assert drive(found, epochs=3, steps=4) == []
    assert tracer.calls == []
    assert not (tmp_path / "logs").exists()  # off costs nothing: not even a folder


@pytest.mark.parametrize(
    "text",
    ["", "2", "2:10", "2:20-10", "0:1-2", "2:0-3", "a:1-2", "2:1-2:3", "2:1-99999999999", "2:1-2\x00"],
)
def test_a_bad_window_names_the_variable_and_the_form(text: str) -> None:
    with pytest.raises(
        ConfigError, match=r'CLOUDTRAIN_TRACE_STEPS must be EPOCH:FIRST-LAST, e\.g\. "2:10-20"'
    ):
        profiling.parse(text)


def test_no_variable_no_profile() -> None:
    assert profiling.requested({}) is None
    assert profiling.requested({"CLOUDTRAIN_TRACE_STEPS": " 2:10-20 "}) == profiling.Window(2, 10, 20)


def test_the_settings_profile_variable_is_no_trace_request() -> None:
    # regression: the trace window travelled as CLOUDTRAIN_PROFILE, the variable that names the
    # settings profile (--profile), so a shell with CLOUDTRAIN_PROFILE=research broke local replicas
    assert profiling.requested({"CLOUDTRAIN_PROFILE": "research"}) is None
