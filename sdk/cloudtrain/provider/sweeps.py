"""What a provider that runs sweeps does, and what its sweep handle reports.

A provider that runs sweeps is ``TunesJobs``: ``render_sweep(plan)`` is the request
(pure: a Vertex HyperparameterTuningJob, SageMaker CreateHyperParameterTuningJob
arguments, the local driver's request), ``submit_sweep`` creates it and returns a handle
that is a ``Job`` and ``HasTrials``.

Every provider's sweep handle (a ``Job`` that is also ``HasTrials``) describes its trials
in these words, whatever the service calls them, so ``status`` prints one table and
``cloudtrain.submit`` returns the same handle everywhere.

Example:
>>> trials = [Trial(1, "s-t1", "succeeded", {"units": 8}, 0.3), Trial(2, "s-t2", "succeeded", {"units": 16}, 0.2)]
>>> best_of(trials, "minimize").number
2
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from cloudtrain.provider.follow import read_until_done

if TYPE_CHECKING:
    from datetime import datetime

    from cloudtrain.bundle import Bundle
    from cloudtrain.outputs import Outputs
    from cloudtrain.planning import Plan
    from cloudtrain.progress import OnProgress
    from cloudtrain.provider.jobs import Job, JobStatus

# Neutral trial states: a job's (provider.jobs.TERMINAL_STATES and the rest), and ``stopped``:
# ended early by the search's early stopping (Optuna: pruned; Vertex AI: the stopping rule).
STOPPED = "stopped"
# Where a sweep's outputs name one trial's, before the best one is known: every trial has its own.
TRIAL = "{trial}"


@dataclass(frozen=True)
class Trial:
    """One trial of a sweep.

    Attributes:
        number: 1, 2, ... in the order the trials started.
        id: the trial's run id (``<sweep run id>-t<N>``) or the service's trial id.
        state: queued, running, succeeded, failed, cancelled or stopped.
        values: the hyperparameters it ran with.
        objective: its objective (the last value reported), None before any.
        epochs: how many epochs it reported.
        job: the id of the job that ran it (a local run, a Vertex CustomJob, a SageMaker
            training job), where known.
        model: where its exported model is, where known.
    """

    number: int
    id: str
    state: str
    values: Mapping[str, int | float | str]
    objective: float | None = None
    epochs: int = 0
    job: str | None = None
    model: str | None = None
    detail: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``status --json``)."""
        found = asdict(self)
        found["values"] = dict(self.values)
        found.pop("extra")
        return found


@runtime_checkable
class TunesJobs(Protocol):
    """A provider that runs hyperparameter sweeps (optional)."""

    def render_sweep(self, plan: Plan) -> dict[str, Any]:
        """The exact request ``submit_sweep`` sends for the sweep of ``plan``: pure."""
        ...

    def sweep_outputs(self, plan: Plan, request: dict[str, Any] | None = None) -> Outputs:
        """Where the sweep's artifacts land: the best trial's, ``{trial}`` until it is known.

        With the rendered ``request``, whatever it already names is filled in.
        """
        ...

    def submit_sweep(
        self,
        plan: Plan,
        request: dict[str, Any],
        bundle: Bundle,
        *,
        clients: Any = None,
        progress: OnProgress | None = None,
    ) -> Job:
        """Upload the code once and create the sweep; the handle is also ``HasTrials``."""
        ...


@runtime_checkable
class HasTrials(Protocol):
    """A sweep: ``cloudtrain.submit`` of a spec with ``tuning:`` returns a ``Job`` that is also this."""

    @property
    def goal(self) -> str:
        """``maximize`` or ``minimize``."""
        ...

    @property
    def metric(self) -> str:
        """The objective's metric, as the epoch lines name it."""
        ...

    def trials(self) -> list[Trial]:
        """Every trial so far, by number."""
        ...

    def best(self) -> Trial | None:
        """The succeeded trial with the best objective so far; None before one has ended."""
        ...


def best_of(trials: Sequence[Trial], goal: str) -> Trial | None:
    """The succeeded trial whose objective is best for ``goal``; the first of equals."""
    done = [trial for trial in trials if trial.state == "succeeded" and trial.objective is not None]
    if not done:
        return None
    pick = max if goal == "maximize" else min
    return pick(done, key=lambda trial: trial.objective or 0.0)


def describe_values(values: Mapping[str, int | float | str]) -> str:
    """``learning_rate=0.0123 width=32``: numbers to 4 significant digits.

    >>> describe_values({"learning_rate": 0.012345, "width": 32, "optimizer": "adam"})
    'learning_rate=0.01235 width=32 optimizer=adam'
    """
    return " ".join(
        f"{name}={value:.4g}" if isinstance(value, float) else f"{name}={value}"
        for name, value in values.items()
    )


def events(before: Sequence[Trial], now: Sequence[Trial], metric: str) -> list[str]:
    """The lines that tell what changed between two readings of a sweep's trials.

    >>> first = [Trial(1, "1", "running", {"units": 8})]
    >>> events([], first, "val_loss")
    ['trial 1 running: units=8']
    >>> events(first, [Trial(1, "1", "succeeded", {"units": 8}, 0.25, 2)], "val_loss")
    ['trial 1 epoch 2 val_loss=0.2500', 'trial 1 succeeded val_loss=0.2500']
    """
    known = {trial.number: trial for trial in before}
    lines: list[str] = []
    for trial in now:
        old = known.get(trial.number)
        if old is None:
            lines.append(f"trial {trial.number} {trial.state}: {describe_values(trial.values)}")
        if trial.objective is not None and (old is None or trial.epochs != old.epochs):
            lines.append(f"trial {trial.number} epoch {trial.epochs} {metric}={trial.objective:.4f}")
        if old is not None and old.state != trial.state:
            shown = "" if trial.objective is None else f" {metric}={trial.objective:.4f}"
            lines.append(f"trial {trial.number} {trial.state}{shown}")
    return lines


class FollowedSweep(HasTrials, Protocol):
    """A sweep whose ``logs`` are its trials' events: one that also says whether it has ended."""

    def status(self) -> JobStatus: ...


class PolledSweep(FollowedSweep, Protocol):
    """A ``FollowedSweep`` that names the clock its clients sleep on (as ``WaitsByPolling`` asks)."""

    def _sleep(self, seconds: float) -> None: ...


# How often a cloud sweep's trials are read again while its logs are followed.
TRIAL_POLL_S = 30.0


class TrialEventLogs:
    """``Job.logs`` for a cloud sweep: its trials' events (``trial_events``), read every ``TRIAL_POLL_S``.

    A mixin, as every cloud tuning job's logs are made alike from its trials; the
    handle gives ``trials``, ``metric``, ``status`` and its clients' ``_sleep``.
    """

    def logs(
        self: PolledSweep, follow: bool = False, *, since: datetime | None = None, tail: int | None = None
    ) -> Iterator[str]:
        """The trials' events: started, each objective read, ended (each trial's own logs: its job's)."""
        return trial_events(self, follow=follow, tail=tail, sleep=self._sleep, poll_s=TRIAL_POLL_S)


def trial_events(
    sweep: FollowedSweep, *, follow: bool, tail: int | None, sleep: Callable[[float], None], poll_s: float
) -> Iterator[str]:
    """A cloud sweep's ``logs``: the ``events`` between successive readings of its trials.

    A tuning job on a cloud service writes no log of its own (each trial's job does), so
    what ``cloudtrain logs`` shows of it is made here, from its trials, read again every
    ``poll_s`` while following (``cloudtrain.provider.follow.read_until_done``). The
    objective's name is read once: a sweep's objective never changes.

    Example:
    >>> import types
    >>> running, ended = Trial(1, "1", "running", {"units": 8}), Trial(1, "1", "succeeded", {"units": 8}, 0.5, 1)
    >>> readings, states = iter([[running], [ended]]), iter([False, True])
    >>> sweep = types.SimpleNamespace(
    ...     metric="loss", trials=lambda: next(readings), status=lambda: types.SimpleNamespace(done=next(states))
    ... )
    >>> list(trial_events(sweep, follow=True, tail=None, sleep=lambda s: None, poll_s=1.0))
    ['trial 1 running: units=8', 'trial 1 epoch 1 loss=0.5000', 'trial 1 succeeded loss=0.5000']
    """
    seen: Sequence[Trial] = []
    metric = sweep.metric

    def read_new() -> list[str]:
        nonlocal seen
        now = sweep.trials()
        lines, seen = events(seen, now, metric), now
        return lines

    return read_until_done(
        read_new, follow=follow, is_done=lambda: sweep.status().done, sleep=sleep, poll_s=poll_s, tail=tail
    )
