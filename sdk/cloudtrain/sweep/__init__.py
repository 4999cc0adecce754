"""Hyperparameter sweeps: one ``tuning:`` section, many trials, the best one kept.

A sweep is many runs of the same job. Each trial is a run of its own, with the run id
``<sweep run id>-t<N>`` (``trial_run_id``), its own values and its own artifacts. Where
the search runs depends on the provider: Vertex AI and SageMaker search themselves (a
HyperparameterTuningJob, a CreateHyperParameterTuningJob); on this machine the search
runs in cloudtrain's own process, never in the training runtime, with Optuna
(``search``). Whatever runs them, the trials get their values the same way in user code
(``config.hparams``) and report the objective after every epoch
(``cloudtrain_runtime.hparams``).

The rooms: ``space`` (a trial's spec from its values), ``search`` (the Optuna study of a
local sweep), ``objective`` (reading the objective off the epoch lines), ``cost`` (a sweep's
price), ``submit`` (plan, render and submit a sweep on any provider that runs sweeps).
What such a provider does, and what its sweep handle reports (its trials), is
``cloudtrain.provider.sweeps``.
"""

from __future__ import annotations

import re

from cloudtrain.errors import SpecError

# ``<sweep run id>-t<N>`` must stay a run id (planning.RUN_ID: at most 63 characters).
TRIAL_SUFFIX_MAX = len("-t10000")


def trial_run_id(sweep_run_id: str, number: int) -> str:
    """The run id of trial ``number`` (1-based) of the sweep run ``sweep_run_id``.

    Example:
    >>> trial_run_id("20261205-101500-a1b2c3", 3)
    '20261205-101500-a1b2c3-t3'
    """
    return f"{sweep_run_id}-t{number}"


def check_sweep_run_id(run_id: str) -> str:
    """A sweep's run id leaves room for its trials' ``-t<N>``.

    Raises:
        SpecError: ``run_id`` is longer than 63 minus the suffix, or not a run id.
    """
    limit = 63 - TRIAL_SUFFIX_MAX
    if not re.fullmatch(rf"[a-z0-9][a-z0-9_-]{{0,{limit - 1}}}", run_id):
        raise SpecError(
            f"run_id: {run_id[:80]!r} cannot name a sweep: its trials are <run id>-t<N>, so it needs "
            f"1-{limit} lowercase letters, digits, '-' or '_'. Use a shorter --run-id."
        )
    return run_id
