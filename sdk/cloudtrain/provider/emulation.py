"""What the local provider and an emulated cloud provider agree on.

A cloud provider that can be emulated (``cloudtrain submit --emulate NAME``) implements
``Emulable.emulate``: it turns its own rendered request into the local replicas its
service would start, each with the environment its service gives a replica. The local
provider then runs them. The names and placeholders both sides use live here:

- ``<run>``: the run folder; ``<buckets>``: the stand-in buckets
  (``<buckets>/gcs/BUCKET``, ``<buckets>/s3/BUCKET``); ``<port:N>``: a free loopback port;
  ``<job>``: the name or ID the service gives the job, taken when the run is submitted
  from ``Emulable.job_names`` and never given twice, as on the service.
- ``CLOUDTRAIN_ROOT``: the folder that stands in for a replica's ``/``.
- ``CLOUDTRAIN_CPU_DEVICES``: how many logical CPU devices the replica's TensorFlow creates.
- ``CLOUDTRAIN_HOSTS``: ``name=127.0.0.1:<port:N>,...``, the loopback address of each host
  name the service's cluster would resolve (the runtime's ``hostmap``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from cloudtrain.container import ROOT_ENV
from cloudtrain.provider.base import Provider
from cloudtrain_runtime import environments

if TYPE_CHECKING:
    from cloudtrain.outputs import Outputs
    from cloudtrain.planning import Plan
    from cloudtrain.provider.failures import CallError
    from cloudtrain.provider.jobs import JobStatus

__all__ = [
    "CPU_DEVICES_ENV",
    "HOSTS_ENV",
    "JOB",
    "ROOT_ENV",
    "RUNTIME_ENTRYPOINT",
    "Emulable",
    "RefusesWhenEmulated",
    "bucket_path",
    "container_path",
    "deadline",
    "host_python",
    "restart",
    "stand_in",
]

CPU_DEVICES_ENV = "CLOUDTRAIN_CPU_DEVICES"
HOSTS_ENV = "CLOUDTRAIN_HOSTS"
JOB = "<job>"
RUNTIME_ENTRYPOINT = ["-m", "cloudtrain_runtime"]


@runtime_checkable
class Emulable(Provider, Protocol):
    """A provider whose requests the local provider can run on this machine."""

    def emulate(self, plan: Plan, request: dict[str, Any]) -> dict[str, Any]:
        """The local replicas (and anything to collect after success) that run ``request``.

        Returns:
            ``{"replicas": [...], "restarts": {...}}`` plus optional ``"cluster"`` (what
            every replica shares, written once), ``"collect"``, ``"job"`` (what the
            first submit's job would be called, for ``job_names``) and ``"deadline"``
            (when and how the provider stops a job that runs too long: ``deadline``), in the local request's format (see
            ``cloudtrain.providers.local.render``). ``restarts`` says, from the request's
            own fields, how often the provider restarts the job after a lost host
            (``"host"``) and after a spot interruption (``"spot"``): ``restart``.
            Wherever the job's name or ID goes (its variables, upload paths), it says ``<job>``.
        """
        ...

    def job_names(self, first: str) -> Iterator[str]:
        """The names or IDs the service gives successive jobs of the same request, in order.

        ``first`` is the request's ``"job"``. The emulator takes the first not yet given
        on this machine, so no two emulated jobs share a name, as no two real ones can.
        """
        ...


@runtime_checkable
class RefusesWhenEmulated(Protocol):
    """An emulable provider that can refuse a job here as its service would. Optional.

    ``cloudtrain submit --fault quota@PROVIDER:REGION`` and ``capacity@PROVIDER:REGION``
    make an emulated placement meet the provider's own refusals, in its own words, so
    that what reads them (``cloudtrain.provider.failures``, the placement's failover)
    runs as it would against the service.
    """

    def quota_refusal(self, plan: Plan) -> CallError:
        """The error creating ``plan``'s job raises when its quota is exhausted, as the service words it."""
        ...

    def stockout(self, plan: Plan) -> JobStatus:
        """The status of ``plan``'s job once the service found no capacity for it, as it reports it."""
        ...


def container_path(uri: str) -> str:
    """Where a replica opens ``uri``: ``/gcs/B/p`` or ``/s3/B/p`` under its root, a local path as is.

    Each scheme opens where the runtime's environments mount it (``cloudtrain_runtime.environments.mounts``),
    and the stand-in buckets keep the same layout under ``<buckets>``.

    Example:
    >>> container_path("gs://bucket/code/abc.tar.gz"), container_path("/tmp/x")
    ('/gcs/bucket/code/abc.tar.gz', '/tmp/x')
    """
    for scheme, mount in environments.mounts().items():
        if uri.startswith(scheme):
            return mount + uri.removeprefix(scheme)
    return uri


def bucket_path(uri: str) -> str:
    """Where ``uri`` lives on this machine: in the stand-in buckets, or the local path itself.

    Example:
    >>> bucket_path("s3://bucket/ckpt/")
    '<buckets>/s3/bucket/ckpt/'
    """
    path = container_path(uri)
    return f"<buckets>{path}" if path != uri else uri


def host_python(argv: list[str]) -> list[str]:
    """A container's command with its ``python``/``python3`` replaced by this machine's."""
    if argv and argv[0] in ("python", "python3"):
        return [sys.executable, *argv[1:]]
    return list(argv)


def restart(limit: int, rule: str) -> dict[str, Any]:
    """One entry of a local request's ``restarts``: how many restarts, and the rule that says so.

    Example:
    >>> restart(0, "the request has no RetryStrategy")
    {'limit': 0, 'rule': 'the request has no RetryStrategy'}
    """
    return {"limit": limit, "rule": rule}


def deadline(seconds: int, provider_state: str, code: str, rule: str) -> dict[str, Any]:
    """A local request's ``deadline``: the launcher stops the job after ``seconds`` of running, as its provider would.

    ``provider_state`` is the provider's word for a job so ended, ``code`` its reason
    (``status`` shows both), and ``rule`` the request field that sets the limit.

    Example:
    >>> deadline(20, "Stopped/MaxRuntimeExceeded", "MaxRuntimeExceeded", "StoppingCondition.MaxRuntimeInSeconds")["seconds"]
    20
    """
    return {"seconds": seconds, "provider_state": provider_state, "code": code, "rule": rule}


def stand_in(outputs: Outputs) -> dict[str, str]:
    """Where each of ``outputs`` is once a job has run on this machine.

    Cloud URIs are in the stand-in buckets, local paths stay as they are, and the logs
    are the run's ``output.log`` (``<run>`` until the run folder exists).
    """
    located = {name: bucket_path(uri) for name, uri in outputs.to_dict().items()}
    return {**located, "logs": "<run>/output.log"}
