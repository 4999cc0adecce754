"""Providers: where jobs run. One package per provider, one protocol, one registry.

- ``base``: the ``Provider`` protocol every provider implements, the ``Job`` handle and
  the neutral job states.
- ``installed``: which providers exist and what the spec and the catalog need of them
  (sections, schemes, catalog rows), known without loading them.
- ``registry``: the provider objects (built-ins, the ``cloudtrain.providers`` entry-point
  group, and ``register`` at run time).
- ``local``, ``vertex``, ``sagemaker``: the built-in providers, each a package with the
  same rooms (``settings``, ``checks``, ``render``, ``outputs``, ``clients``, ``job``,
  ``logs``, ``upload``, ``emulate``) and a provider object calling them.
- Written once for all of them: ``cloud`` (what the cloud providers' objects share),
  ``follow`` (the log-follow loop), ``transfer`` (upload once, progress, the bundle check),
  ``emulation`` (what the local provider and an emulated cloud agree on).

The names below are loaded on first use, so importing one module of this package (the
spec imports ``installed``) loads no provider.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> the module that defines it
_EXPORTS = {
    "TERMINAL_STATES": "cloudtrain.providers.jobs",
    "Job": "cloudtrain.providers.jobs",
    "JobStatus": "cloudtrain.providers.jobs",
    "Provider": "cloudtrain.providers.base",
    "for_job": "cloudtrain.providers.registry",
    "get": "cloudtrain.providers.registry",
    "names": "cloudtrain.providers.registry",
    "poll_until_done": "cloudtrain.providers.jobs",
    "register": "cloudtrain.providers.registry",
}

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

if TYPE_CHECKING:
    from cloudtrain.providers.base import Provider
    from cloudtrain.providers.jobs import TERMINAL_STATES, Job, JobStatus, poll_until_done
    from cloudtrain.providers.registry import for_job, get, names, register


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'cloudtrain.providers' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
