"""Submitting a sweep: what a provider must do to run one, and the submission ``api.prepare`` returns.

A provider that runs sweeps is ``TunesJobs``: ``render_sweep(plan)`` is the request
(pure: a Vertex HyperparameterTuningJob, SageMaker CreateHyperParameterTuningJob
arguments, the local driver's request), ``submit_sweep`` creates it and returns a handle
that is a ``Job`` and ``HasTrials``. The plan is the trials' template: its values come
later, from the search, one set per trial.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from cloudtrain.errors import SpecError
from cloudtrain.outputs import Outputs

if TYPE_CHECKING:
    from cloudtrain.bundle import Bundle
    from cloudtrain.planning import Plan
    from cloudtrain.progress import OnProgress
    from cloudtrain.providers.base import Job, Provider


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


def tuner(provider: Provider) -> TunesJobs:
    """``provider`` as one that runs sweeps.

    Raises:
        SpecError: it runs none; the message names the ones that do.
    """
    if isinstance(provider, TunesJobs):
        return provider
    from cloudtrain.providers import registry

    able = [p.name for p in registry.providers() if isinstance(p, TunesJobs)]
    raise SpecError(
        f"tuning: {provider.name} runs no hyperparameter sweeps. Use --provider {' or '.join(able)}, "
        "or remove the tuning section."
    )


@dataclass(frozen=True)
class SweepSubmission:
    """A sweep ready to send: the trials' plan, the packed code, the provider and the request.

    Shaped like ``api.Submission``, so ``cloudtrain submit`` treats a job and a sweep alike.
    """

    plan: Plan
    bundle: Bundle
    provider: Provider
    request: dict[str, Any]

    @property
    def outputs(self) -> Outputs:
        return tuner(self.provider).sweep_outputs(self.plan, self.request)

    def submit(self, clients: Any = None, progress: OnProgress | None = None) -> Job:
        return tuner(self.provider).submit_sweep(
            self.plan, self.request, self.bundle, clients=clients, progress=progress
        )
