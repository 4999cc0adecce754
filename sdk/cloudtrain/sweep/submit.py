"""Submitting a sweep: the submission ``api.prepare`` returns, for any provider that runs sweeps.

What such a provider does is ``cloudtrain.provider.sweeps.TunesJobs``. The plan is the
trials' template: its values come later, from the search, one set per trial.

With ``tracking:`` on, the sweep is one MLflow run and each trial a run nested under it:
the submit finds or makes the sweep's run (``cloudtrain.tracking.submitting.parent_env``)
and renders the request again with its id in the trials' environment, where each trial's
chief reads it (``cloudtrain_runtime.tracking``).
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
        """Create the sweep; a tracked one is recorded here, so the command that sees it end closes
        its MLflow run (``cloudtrain.tracking.closing``)."""
        plan, request = self.tracked()
        job = tuner(self.provider).submit_sweep(
            plan, request, self.bundle, clients=clients, progress=progress
        )
        if plan.spec.tracking is not None:
            from cloudtrain.tracking import record

            record.remember(plan, job.id)
        return job

    def tracked(self) -> tuple[Plan, dict[str, Any]]:
        """The plan and request that hand every trial the sweep's MLflow run (``tracking:``).

        A store out of reach leaves both as they are, as a job's submit does
        (``api.Submission.tracked``): each trial's chief then logs a run of its own, not nested.
        """
        if self.plan.spec.tracking is None:
            return self.plan, self.request
        from cloudtrain.tracking import submitting

        render = tuner(self.provider).render_sweep
        return submitting.tracked(self.plan, self.request, submitting.parent_env, render)
