"""What the local provider and an emulated cloud provider agree on.

A cloud provider that can be emulated (``cloudtrain submit --emulate NAME``) implements
``Emulable.emulate``: it turns its own rendered request into the local replicas its
service would start, each with the environment its service gives a replica. The local
provider then runs them. The names and placeholders both sides use live here:

- ``<run>``: the run folder; ``<buckets>``: the stand-in buckets
  (``<buckets>/gcs/BUCKET``, ``<buckets>/s3/BUCKET``); ``<port:N>``: a free loopback port.
- ``CLOUDTRAIN_ROOT``: the folder that stands in for a replica's ``/``.
- ``CLOUDTRAIN_CPU_DEVICES``: how many logical CPU devices the replica's TensorFlow creates.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from cloudtrain.container import ROOT_ENV

if TYPE_CHECKING:
    from cloudtrain.planning import Plan

__all__ = [
    "CPU_DEVICES_ENV",
    "MOUNTS",
    "ROOT_ENV",
    "RUNTIME_ENTRYPOINT",
    "Emulable",
    "bucket_path",
    "container_path",
    "host_python",
]

CPU_DEVICES_ENV = "CLOUDTRAIN_CPU_DEVICES"
RUNTIME_ENTRYPOINT = ["-m", "cloudtrain_runtime"]
# Where each bucket scheme is mounted under a replica's root (Vertex: Cloud Storage FUSE).
MOUNTS = {"gs://": "/gcs/", "s3://": "/s3/"}


@runtime_checkable
class Emulable(Protocol):
    """A provider whose requests the local provider can run on this machine."""

    name: str

    def emulate(self, plan: Plan, request: dict[str, Any]) -> dict[str, Any]:
        """The local replicas (and anything to collect after success) that run ``request``.

        Returns:
            ``{"replicas": [...]}`` plus optional ``"cluster"`` (what every replica
            shares, written once) and ``"collect"``, in the local request's format (see
            ``cloudtrain.providers.local.render``).
        """
        ...


def container_path(uri: str) -> str:
    """Where a replica opens ``uri``: ``/gcs/B/p`` or ``/s3/B/p`` under its root, a local path as is.

    Example:
    >>> container_path("gs://bucket/code/abc.tar.gz"), container_path("/tmp/x")
    ('/gcs/bucket/code/abc.tar.gz', '/tmp/x')
    """
    for scheme, mount in MOUNTS.items():
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
