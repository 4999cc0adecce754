"""What a provider is, and what every provider shares: the interface below all of them.

A provider is where jobs run (``cloudtrain.providers.local``, ``.vertex``, ``.sagemaker``,
``.kubernetes``, or a third-party package). Everything that is not one provider's own
answer lives here, so planning, the cost table, sweeps and the CLI talk to this package
and never to a provider's:

- ``base``: the ``Provider`` protocol and the optional protocols a provider may add
  (``ListsJobs``, ``FindsRuns``, ``DiscoversSettings``, ``DiscoversTargetSettings``,
  ``ChecksSetup``, ``ReadsOutputs``, ``NamesRuns``, ``OffersPlans``).
- ``jobs``: the ``Job`` handle, the neutral job states and what a job reports.
- ``failures``: why a job did not start or stopped (capacity, quota, permission,
  configuration, user code, preempted, internal), the words every provider maps its
  own errors onto.
- ``pending``: waiting for any job to start, for at most ``limits.max_pending``.
- ``calls``: how a provider's calls to its cloud are retried and their errors worded.
- ``registry``: the provider objects (built-ins, the ``cloudtrain.providers`` entry-point
  group, ``register`` at run time).
- ``sweeps``: what a provider that runs sweeps does, and what its sweep handle reports.
- ``backups``: the optional ``StoresBackups``: a run's files in the provider's storage, read
  and written as streams, so a run's backup can move to where it resumes (``cloudtrain.resume``).
- Written once for every provider: ``cloud`` (what the cloud providers' objects share),
  ``emulation`` (what the local provider and an emulated cloud agree on), ``discovery``
  (reading the clouds' own tools' settings), ``transfer`` (upload once, with progress),
  ``follow`` (the log-follow loop).

Which providers are installed, and what the spec needs of them before any is loaded,
is ``cloudtrain.installed``, below the spec.

The names below are loaded on first use, so importing this package loads no provider.

Example:
>>> from cloudtrain.provider import get
>>> get("local").title
'this machine'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cloudtrain import lazy

# public name -> the module that defines it
_EXPORTS = {
    "TERMINAL_STATES": "cloudtrain.provider.jobs",
    "WAITING_STATES": "cloudtrain.provider.jobs",
    "CloudProvider": "cloudtrain.provider.cloud",
    "Failure": "cloudtrain.provider.failures",
    "Job": "cloudtrain.provider.jobs",
    "JobStatus": "cloudtrain.provider.jobs",
    "OffersPlans": "cloudtrain.provider.base",
    "PlanOffer": "cloudtrain.provider.base",
    "Provider": "cloudtrain.provider.base",
    "Reason": "cloudtrain.provider.failures",
    "for_job": "cloudtrain.provider.registry",
    "get": "cloudtrain.provider.registry",
    "names": "cloudtrain.provider.registry",
    "poll_until_done": "cloudtrain.provider.jobs",
    "register": "cloudtrain.provider.registry",
    "wait_to_start": "cloudtrain.provider.pending",
}

__all__ = [
    "TERMINAL_STATES",
    "WAITING_STATES",
    "CloudProvider",
    "Failure",
    "Job",
    "JobStatus",
    "OffersPlans",
    "PlanOffer",
    "Provider",
    "Reason",
    "for_job",
    "get",
    "names",
    "poll_until_done",
    "register",
    "wait_to_start",
]

if TYPE_CHECKING:
    from cloudtrain.provider.base import OffersPlans, PlanOffer, Provider
    from cloudtrain.provider.cloud import CloudProvider
    from cloudtrain.provider.failures import Failure, Reason
    from cloudtrain.provider.jobs import TERMINAL_STATES, WAITING_STATES, Job, JobStatus, poll_until_done
    from cloudtrain.provider.pending import wait_to_start
    from cloudtrain.provider.registry import for_job, get, names, register


def __getattr__(name: str) -> Any:
    return lazy.attribute(__name__, _EXPORTS, name)
