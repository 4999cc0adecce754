"""A TensorFlow Profiler trace of chosen training steps, where TensorBoard's profile plugin finds it.

``training.profile: {epoch: 2, steps: "10-20"}`` in the spec (``cloudtrain bench
--profile`` for a bench) reaches every replica as ``CLOUDTRAIN_TRACE_STEPS=2:10-20``: the
chief traces steps 10 to 20 (1-based, within that epoch) and writes the trace to its
TensorBoard folder, as ``<logdir>/plugins/profile/<run>/<host>.xplane.pb``, the layout
the profile plugin reads (``tf.profiler.experimental.start(logdir)``; on JAX
``jax.profiler.start_trace(logdir)`` writes the same). The folder is the run's own:
``AIP_TENSORBOARD_LOG_DIR`` on Vertex AI, which Vertex AI TensorBoard reads
(https://cloud.google.com/vertex-ai/docs/experiments/tensorboard-training),
``/opt/ml/output/tensorboard`` on SageMaker (uploaded with ``TensorBoardOutputConfig``),
the plan's ``logs`` folder elsewhere.

Off unless asked: without the variable no callback is added, so nothing runs per step.
With it, the callback's batch hooks return at once outside the chosen steps. Under
``steps_per_execution`` Keras calls them once per execution (begin: its first step, end:
its last), so the trace covers whole executions: from the one that runs the first chosen
step (an epoch's first execution is known by its first step only) to the one that runs
the last.

Example:
>>> parse("2:10-20")
Window(epoch=2, first=10, last=20)
>>> window_problem(epoch=1, first=5, last=3)
'steps 5-3 end before they start (FIRST <= LAST)'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from cloudtrain_runtime.config import COUNT_MAX
from cloudtrain_runtime.errors import ConfigError

PROFILE_ENV = "CLOUDTRAIN_TRACE_STEPS"
PLUGIN_DIR = ("plugins", "profile")
_WINDOW = re.compile(r"([0-9]{1,10}):([0-9]{1,10})-([0-9]{1,10})")
_STEPS = re.compile(r"([0-9]{1,10})-([0-9]{1,10})")


@dataclass(frozen=True)
class Window:
    """Steps ``first`` to ``last`` (1-based, within the epoch) of epoch ``epoch`` (1-based)."""

    epoch: int
    first: int
    last: int

    def __str__(self) -> str:
        return f"{self.epoch}:{self.first}-{self.last}"


def window_problem(*, epoch: int, first: int, last: int) -> str | None:
    """Why these numbers are no window to profile; None when they are one.

    The spec (``cloudtrain.spec``) checks with this too, so the rule is written once.
    """
    if not all(1 <= value <= COUNT_MAX for value in (epoch, first, last)):
        return f"epoch and steps are whole numbers from 1 to {COUNT_MAX}"
    if first > last:
        return f"steps {first}-{last} end before they start (FIRST <= LAST)"
    return None


def parse_steps(text: str) -> tuple[int, int] | None:
    """``"10-20"`` as ``(10, 20)``; None when it is not ``FIRST-LAST``."""
    match = _STEPS.fullmatch(text.strip())
    return (int(match[1]), int(match[2])) if match else None


def parse(text: str) -> Window:
    """``EPOCH:FIRST-LAST`` as a ``Window``.

    Raises:
        ConfigError: naming the variable, the value and the form expected.
    """
    match = _WINDOW.fullmatch(text.strip())
    epoch, first, last = (int(group) for group in match.groups()) if match else (0, 0, 0)
    problem = window_problem(epoch=epoch, first=first, last=last) if match else "write EPOCH:FIRST-LAST"
    if problem:
        raise ConfigError(
            f'{PROFILE_ENV} must be EPOCH:FIRST-LAST, e.g. "2:10-20" ({problem}). Received: {text!r}'
        )
    return Window(epoch, first, last)


def requested(env: Mapping[str, str]) -> Window | None:
    """The window ``CLOUDTRAIN_TRACE_STEPS`` asks for, or None: no profile."""
    value = env.get(PROFILE_ENV, "")
    return parse(value) if value else None


def tracer(tf: ModuleType, keras_backend: str) -> tuple[Callable[[str], None], Callable[[], None]]:
    """Start and stop of the profiler that sees this backend's work: TensorFlow's, or JAX's."""
    if keras_backend == "jax":
        import jax

        return jax.profiler.start_trace, jax.profiler.stop_trace
    return tf.profiler.experimental.start, tf.profiler.experimental.stop


def traces(logdir: Path) -> list[Path]:
    """The trace files under ``logdir`` that the profile plugin opens, oldest run first."""
    return sorted(logdir.joinpath(*PLUGIN_DIR).glob("*/*.xplane.pb"))


@dataclass
class StepProfiler:
    """Traces the window's steps into ``logdir``, then says where the trace is.

    Attributes:
        window: what to trace.
        logdir: the run's TensorBoard folder.
        start, stop: the profiler (``tracer``).
        say: one log line.
    """

    window: Window
    logdir: Path
    start: Callable[[str], None]
    stop: Callable[[], None]
    say: Callable[[str], None]
    tracing: bool = False
    done: bool = False
    _epoch: int = 0
    _begun: int = 0
    _per_call: int = 1  # steps one call of the step function runs (steps_per_execution), once seen

    def epoch_begins(self, epoch: int) -> None:
        """``epoch`` 0-based, as Keras counts."""
        self._epoch = epoch + 1

    def step_begins(self, step: int) -> None:
        """``step`` 0-based within the epoch: the trace starts with the call that runs the window's first step."""
        self._begun = step
        idle = not (self.tracing or self.done)
        if self._epoch == self.window.epoch and idle and step + self._per_call >= self.window.first:
            self.logdir.mkdir(parents=True, exist_ok=True)
            self.start(str(self.logdir))
            self.tracing = True

    def step_ends(self, step: int) -> None:
        """``step``: the last step the call ran; the trace stops once the window's last step has run."""
        self._per_call = max(1, step - self._begun + 1)
        if self.tracing and step + 1 >= self.window.last:
            self.finish()

    def finish(self) -> None:
        """Stop a trace still running (the epoch had fewer steps than the window)."""
        if not self.tracing:
            return
        self.stop()
        self.tracing, self.done = False, True
        found = traces(self.logdir)
        where = found[-1].parent if found else self.logdir
        self.say(
            f"profile of epoch {self.window.epoch}, steps {self.window.first}-{self.window.last}: {where}"
        )


class ProfileSteps:
    """The Keras side of ``StepProfiler``: its hooks, in the chosen epoch only."""

    def __init__(self, profiler: StepProfiler) -> None:
        super().__init__()
        self.profiler = profiler

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self.profiler.epoch_begins(epoch)

    def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self.profiler.step_begins(batch)

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self.profiler.step_ends(batch)

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self.profiler.finish()

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        self.profiler.finish()
