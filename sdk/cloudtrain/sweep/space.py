"""A sweep's search space, and the spec of one trial given its values.

A trial is the job with the trial's values: those named like a spec field
(``cloudtrain_runtime.hparams.OVERRIDES``: ``learning_rate``, ``per_replica_batch``,
``epochs``) set that field, so the plan (global batch, scaled learning rate, warm-up)
is resolved for the trial as for any job; every value is also ``config.hparams[name]``.

Example:
>>> from cloudtrain.spec import JobSpec
>>> spec = JobSpec(name="demo", code={"module": "t"}, tuning={
...     "objective": {"metric": "val_loss", "goal": "minimize"},
...     "parameters": {"learning_rate": {"type": "float", "min": 0.001, "max": 0.1}}})
>>> trial_spec(spec, {"learning_rate": 0.05}).training.learning_rate.base
0.05
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cloudtrain.spec import JobSpec, Parameter, Tuning

Values = Mapping[str, int | float | str]


def trial_spec(spec: JobSpec, values: Values) -> JobSpec:
    """``spec`` with the fields the trial's values set: learning rate base, per-replica batch, epochs."""
    training = spec.training
    changes: dict[str, Any] = {}
    if "learning_rate" in values:
        changes["learning_rate"] = training.learning_rate.model_copy(
            update={"base": float(values["learning_rate"])}
        )
    if "per_replica_batch" in values:
        changes |= {"per_replica_batch": int(values["per_replica_batch"]), "global_batch": None}
    if "epochs" in values:
        changes["epochs"] = int(values["epochs"])
    return spec.model_copy(update={"training": training.model_copy(update=changes)})


def worst_case_spec(spec: JobSpec) -> JobSpec:
    """The trial that trains longest: the most epochs the sweep may try (for the cost of a sweep)."""
    tuning = spec.tuning
    epochs = tuning.parameters.get("epochs") if tuning else None
    if epochs is None:
        return spec
    return trial_spec(spec, {"epochs": int(max(numbers(epochs)))})


def numbers(parameter: Parameter) -> list[float]:
    """The numeric values a parameter can take at its ends (a range) or all of them (discrete)."""
    return parameter.numbers


def grid(tuning: Tuning) -> dict[str, list[int | float | str]]:
    """Every value of every parameter, for a grid search (``algorithm: grid``; no float ranges).

    Example:
    >>> from cloudtrain.spec import Tuning
    >>> grid(Tuning(objective={"metric": "loss", "goal": "minimize"},
    ...             parameters={"units": {"type": "int", "min": 1, "max": 3}}))
    {'units': [1, 2, 3]}
    """
    return {name: grid_values(parameter) for name, parameter in tuning.parameters.items()}


def grid_values(parameter: Parameter) -> list[int | float | str]:
    """Every value of one parameter of a grid: its values, or every whole number of its range.

    Listed only once the spec has bounded the grid (``Tuning``: at most ``MAX_TRIALS``).
    """
    if parameter.values is not None:
        return [as_kind(parameter, value) for value in parameter.values]
    return list(range(int(parameter.min or 0), int(parameter.max or 0) + 1))


def grid_size(tuning: Tuning) -> int:
    """How many trials a grid search has: counted, never listed (``Parameter.grid_values``)."""
    return math.prod(parameter.grid_values or 0 for parameter in tuning.parameters.values())


def as_kind(parameter: Parameter, value: int | float | str) -> int | float | str:
    """``value`` as the parameter's kind: whole-number discrete values as ints."""
    if parameter.kind == "int":
        return int(float(value))
    if parameter.kind == "float":
        return float(value)
    return str(value)
