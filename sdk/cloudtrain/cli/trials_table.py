"""A sweep's trials as ``submit`` and ``status`` print them: one row each, the best marked, then the best."""

from __future__ import annotations

from typing import Any

import click

from cloudtrain.cli import tables
from cloudtrain.provider.sweeps import HasTrials, Trial, describe_values


def columns(names: list[str], metric: str) -> list[tables.Column]:
    """trial, state, one column per parameter, the objective, epochs, then the trial's id."""
    return [
        tables.Column("trial", justify="right"),
        tables.Column("state"),
        *(tables.Column(name, justify="right") for name in names),
        tables.Column(metric, justify="right"),
        tables.Column("epochs", priority=2, justify="right"),
        tables.Column("id", priority=1),
    ]


def rows(trials: list[Trial], names: list[str], best: Trial | None) -> list[list[str]]:
    return [
        [
            f"{'*' if best is not None and trial.number == best.number else ''}{trial.number}",
            trial.state,
            *(_cell(trial.values.get(name, "")) for name in names),
            "-" if trial.objective is None else f"{trial.objective:.4f}",
            str(trial.epochs),
            trial.job or trial.id,
        ]
        for trial in trials
    ]


def _cell(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def echo(sweep: HasTrials, *, err: bool = False) -> None:
    """The trials table on stdout (stderr with ``err``), then ``Best: trial N metric=... values`` and its model."""
    metric = sweep.metric
    trials = sweep.trials()
    names = sorted({name for trial in trials for name in trial.values})
    best = sweep.best()
    tables.echo(columns(names, metric), rows(trials, names, best), err=err)
    if best is None:
        click.echo("Best: no trial succeeded with an objective yet.", err=err)
    else:
        click.echo(
            f"Best: trial {best.number} {metric}={best.objective:.4f} {describe_values(best.values)}", err=err
        )
        if best.model:
            click.echo(f"Model: {best.model}", err=err)


def as_json(sweep: HasTrials) -> dict[str, Any]:
    """The trials and the best one, for ``--json``."""
    best = sweep.best()
    return {"trials": [trial.to_dict() for trial in sweep.trials()], "best": best.to_dict() if best else None}
