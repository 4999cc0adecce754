"""Providers: where jobs run. One package per provider, one protocol, one registry.

- ``base``: the ``Provider`` protocol every provider implements, the ``Job`` handle and
  the neutral job states.
- ``registry``: the one list of providers (built-ins, the ``cloudtrain.providers``
  entry-point group, and ``register`` at run time).
- ``local``, ``vertex``, ``sagemaker``: the built-in providers, each a package with the
  same rooms (``checks``, ``render``, ``outputs``, ``clients``, ``job``, ``logs``, ``upload``, ``emulate``).
- Written once for all of them: ``cloud`` (a cloud provider object wired to its rooms),
  ``follow`` (the log-follow loop), ``transfer`` (upload once, progress, the bundle check),
  ``emulation`` (what the local provider and an emulated cloud agree on).
"""

from __future__ import annotations

from cloudtrain.providers.base import TERMINAL_STATES, Job, JobStatus, Provider, poll_until_done
from cloudtrain.providers.registry import for_job, get, names, register

__all__ = [
    "TERMINAL_STATES",
    "Job",
    "JobStatus",
    "Provider",
    "for_job",
    "get",
    "names",
    "poll_until_done",
    "register",
]
