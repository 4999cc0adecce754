"""What a sweep costs: every trial priced as the longest one, the wall time in rounds of parallel trials.

A sweep runs ``trials`` jobs (``max_trials``, or a grid's size), ``parallel_trials`` at a
time. Its cost is the trials' sum, each priced as the trial that trains longest (the most
epochs the sweep may try: ``space.worst_case_spec``), and its wall time that trial's time
once per round, ``ceil(trials / parallel_trials)`` rounds. Without a measured throughput
the budget guard's worst case is every trial's hosts billed for all of
``limits.max_runtime``.

Example:
>>> from cloudtrain.spec import Tuning
>>> tuning = Tuning(objective={"metric": "loss", "goal": "minimize"}, max_trials=40, parallel_trials=4,
...                 parameters={"units": {"type": "int", "min": 1, "max": 9}})
>>> trials(tuning), rounds(tuning)
(40, 10)
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from cloudtrain.sweep import search

if TYPE_CHECKING:
    from cloudtrain.cost.option import CostOption
    from cloudtrain.planning import Plan
    from cloudtrain.spec import Tuning


def of_plan(planned: Plan) -> Tuning | None:
    """The sweep ``planned`` is the template of; None for a job, or for one trial of a sweep."""
    return planned.spec.tuning if not planned.hparams else None


def trials(tuning: Tuning) -> int:
    return search.trials_in_all(tuning)


def rounds(tuning: Tuning) -> int:
    return math.ceil(trials(tuning) / tuning.parallel_trials)


def scaled(option: CostOption, tuning: Tuning) -> CostOption:
    """``option`` (one trial) as the whole sweep: every trial's dollars and billed hours, the rounds' time."""
    count = trials(tuning)
    return dataclasses.replace(
        option,
        usd=None if option.usd is None else option.usd * count,
        billed_hours=option.billed_hours * count,
        hours=option.hours * rounds(tuning),
    )


def note(tuning: Tuning, epochs: int, *, worst: bool = False) -> str:
    """The line the cost table and the budget guard show for a sweep."""
    each = (
        "every trial's hosts for all of limits.max_runtime"
        if worst
        else f"each priced as the longest ({epochs} epochs)"
    )
    return (
        f"Sweep: {trials(tuning)} trials, {tuning.parallel_trials} at a time; {each}: "
        f"the cost of all {trials(tuning)}, the time of {rounds(tuning)} rounds."
    )
