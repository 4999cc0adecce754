"""The providers: where jobs run, one package each.

- ``local``: this machine, the embedded default; it also runs any cloud's request as
  that cloud would (``--emulate``).
- ``vertex``: Vertex AI custom training.
- ``sagemaker``: SageMaker training jobs.
- ``kubernetes``: a JobSet on your own cluster.

Each package has the same rooms (``settings``, ``checks``, ``render``, ``outputs``,
``clients``, ``job``, ``logs``, ``upload``, ``emulate``) and a ``provider`` object calling
them. What a provider is, and what they all share, is ``cloudtrain.provider``: nothing
outside the CLI, the API and the registry names a package here.

The interface's public names are also importable from here, as plugins written against
earlier releases import them (``from cloudtrain.providers import Provider, register``);
they are ``cloudtrain.provider``'s, loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cloudtrain import lazy

if TYPE_CHECKING:
    from cloudtrain.provider import (
        TERMINAL_STATES,
        Job,
        JobStatus,
        Provider,
        for_job,
        get,
        names,
        poll_until_done,
        register,
    )

# public name -> the module that defines it
_EXPORTS = {
    name: "cloudtrain.provider"
    for name in (
        "TERMINAL_STATES",
        "Job",
        "JobStatus",
        "Provider",
        "for_job",
        "get",
        "names",
        "poll_until_done",
        "register",
    )
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


def __getattr__(name: str) -> Any:
    return lazy.attribute(__name__, _EXPORTS, name)
