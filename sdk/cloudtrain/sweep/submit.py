"""Submitting a sweep: the submission ``api.prepare`` returns, for any provider that runs sweeps.

What such a provider does is ``cloudtrain.provider.sweeps.TunesJobs``. The plan is the
trials' template: its values come later, from the search, one set per trial.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cloudtrain.errors import SpecError
from cloudtrain.outputs import Outputs
from cloudtrain.provider.sweeps import TunesJobs

if TYPE_CHECKING:
    from cloudtrain.bundle import Bundle
    from cloudtrain.planning import Plan
    from cloudtrain.progress import OnProgress
    from cloudtrain.provider.base import Job, Provider


def tuner(provider: Provider) -> TunesJobs:
    """``provider`` as one that runs sweeps.

    Raises:
        SpecError: it runs none; the message names the ones that do.
    """
    if isinstance(provider, TunesJobs):
        return provider
    from cloudtrain.provider import registry

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
