"""The search of a sweep run on this machine: an Optuna study, asked for one trial at a time.

Optuna (``pip install 'cloudtrain[tuning]'``) does the searching; cloudtrain runs the
trials. ``algorithm`` maps to a sampler: ``auto`` and ``bayesian`` to TPE (Optuna's
default, a Bayesian method), ``random`` to random search, ``grid`` to every combination.
Seeded, so the same sweep asks the same values. ``early_stopping`` prunes with the
median rule: from a trial's second epoch on, once two trials have ended, a trial whose
objective is worse than the median of the others' at the same epoch is stopped.

Example:
>>> from cloudtrain.spec import Tuning
>>> tuning = Tuning(objective={"metric": "val_loss", "goal": "minimize"}, max_trials=2,
...                 parameters={"units": {"type": "discrete", "values": [8, 16]}}, algorithm="grid")
>>> study = create_study(tuning)
>>> sorted(values(ask(study, tuning), tuning)["units"] for _ in range(2))
[8, 16]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cloudtrain.errors import require
from cloudtrain.sweep import space

if TYPE_CHECKING:
    import optuna

    from cloudtrain.spec import Parameter, Tuning

SEED = 0
# The median rule waits for this many ended trials, and compares from this epoch on (Optuna's
# MedianPruner skips steps below n_warmup_steps; the runtime reports epochs from 1).
PRUNE_AFTER_TRIALS = 2
PRUNE_FROM_EPOCH = 2


def create_study(tuning: Tuning) -> optuna.Study:
    """An in-memory study for ``tuning``: its direction, sampler and pruner.

    Raises:
        MissingDependencyError: Optuna is not installed (with the pip command).
    """
    require("optuna", "tuning")
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)  # library code prints nothing
    return optuna.create_study(
        direction=tuning.objective.goal,
        sampler=_sampler(tuning),
        pruner=_pruner(tuning),
    )


def _sampler(tuning: Tuning) -> optuna.samplers.BaseSampler:
    import optuna

    if tuning.algorithm == "grid":
        return optuna.samplers.GridSampler(space.grid(tuning), seed=SEED)
    if tuning.algorithm == "random":
        return optuna.samplers.RandomSampler(seed=SEED)
    return optuna.samplers.TPESampler(seed=SEED)


def _pruner(tuning: Tuning) -> optuna.pruners.BasePruner:
    import optuna

    if not tuning.early_stopping:
        return optuna.pruners.NopPruner()
    return optuna.pruners.MedianPruner(n_startup_trials=PRUNE_AFTER_TRIALS, n_warmup_steps=PRUNE_FROM_EPOCH)


def ask(study: optuna.Study, tuning: Tuning) -> optuna.Trial:
    """The next trial, its values drawn from the parameters' distributions."""
    return study.ask({name: _distribution(p) for name, p in tuning.parameters.items()})


def values(trial: optuna.Trial, tuning: Tuning) -> dict[str, int | float | str]:
    """The trial's values as the parameters' kinds (whole-number discrete values as ints)."""
    return {name: space.as_kind(p, trial.params[name]) for name, p in tuning.parameters.items()}


def trials_in_all(tuning: Tuning) -> int:
    """How many trials the sweep runs: ``max_trials``, or fewer when a grid has fewer points."""
    if tuning.algorithm == "grid":
        return min(tuning.max_trials, space.grid_size(tuning))
    return tuning.max_trials


def _distribution(parameter: Parameter) -> Any:
    import optuna

    if parameter.values is not None:
        return optuna.distributions.CategoricalDistribution(
            [space.as_kind(parameter, value) for value in parameter.values]
        )
    log = parameter.scale == "log"
    low, high = float(parameter.min or 0), float(parameter.max or 0)
    if parameter.type == "int":
        return optuna.distributions.IntDistribution(int(low), int(high), log=log)
    return optuna.distributions.FloatDistribution(low, high, log=log)
