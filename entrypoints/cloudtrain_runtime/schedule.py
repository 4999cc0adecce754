"""Learning-rate warm-up: linear from ~0 to the plan's scaled rate, then constant.

A large global batch trains with a proportionally larger rate (the plan scales it),
and starting at that rate from random weights diverges; ramping up over the first
epochs avoids it (Goyal et al. 2017, "Accurate, Large Minibatch SGD").
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any


def warmup_steps(warmup_epochs: float, steps_per_epoch: int | None) -> int:
    """Warm-up length in steps; 0 when there is no warm-up or the epoch length is unknown.

    Example:
    >>> warmup_steps(1.5, 16)
    24
    """
    if not warmup_epochs or not steps_per_epoch:
        return 0
    return math.ceil(warmup_epochs * steps_per_epoch)


def learning_rate(keras: ModuleType, ops: Any, peak: float, steps: int) -> Any:
    """``peak``, or a Keras schedule ramping linearly to it over ``steps`` steps.

    Args:
        keras: Keras 3 or tf_keras; the schedule subclasses its LearningRateSchedule.
        ops: ``keras.ops`` (Keras 3, any backend) or ``tensorflow`` (tf_keras).
        peak: the scaled learning rate.
        steps: warm-up steps; 0 for none.
    """
    if steps <= 0:
        return peak
    schedule: Any = keras.optimizers.schedules.LearningRateSchedule  # this Keras's, known at run time

    class LinearWarmup(schedule):
        def __init__(self, peak: float, steps: int) -> None:
            self.peak, self.steps = peak, steps

        def __call__(self, step: Any) -> Any:
            progress = (ops.cast(step, "float32") + 1.0) / float(self.steps)
            return self.peak * ops.minimum(progress, 1.0)

        def get_config(self) -> dict[str, Any]:
            return {"peak": self.peak, "steps": self.steps}

    return LinearWarmup(peak, steps)
