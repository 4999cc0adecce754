"""Fixed container paths and storage URIs, resolved under ``CLOUDTRAIN_ROOT``.

Every path the providers fix (``/gcs/BUCKET``, ``/opt/ml/...``, ``/tmp/cloudtrain``)
is joined under one root, ``/`` in a real container. The local provider points the
root at a folder and so stands in for Vertex's FUSE mount and SageMaker's tree; the
runtime has no other way to learn that it is emulated.

Example:
>>> str(storage_path("gs://bucket/run/model", "/sandbox", {"gs://": "/gcs/"}))
'/sandbox/gcs/bucket/run/model'
>>> str(storage_path("/data/outputs/model", "/sandbox", {"gs://": "/gcs/"}))
'/data/outputs/model'
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from cloudtrain_runtime.errors import ConfigError

ROOT_ENV = "CLOUDTRAIN_ROOT"


def root_from(env: Mapping[str, str]) -> str:
    """The root every fixed container path lives under: ``CLOUDTRAIN_ROOT`` or ``/``."""
    return env.get(ROOT_ENV) or "/"


def under_root(root: str, path: str) -> Path:
    """``path`` (absolute, as the provider fixes it) joined under ``root``."""
    return Path(root, path.lstrip("/"))


def scratch_dir(root: str) -> Path:
    """The runtime's scratch folder, ``<root>/tmp/cloudtrain``, created on demand."""
    path = under_root(root, "/tmp/cloudtrain")
    path.mkdir(parents=True, exist_ok=True)
    return path


def storage_path(uri: str, root: str, mounts: Mapping[str, str]) -> Path:
    """Where this replica opens a storage URI, with ``mounts`` (scheme -> folder) saying where each scheme is.

    ``gs://B/p`` is ``<root>/gcs/B/p`` with Vertex's FUSE mount (``cloudtrain_runtime.environments.mounts``
    has every environment's). Local paths stay as they are, made absolute now, before
    the runtime changes into the code's folder.

    Raises:
        ConfigError: for an unknown scheme or a NUL character.
    """
    schemes = ", ".join(mounts)
    if "\x00" in uri:
        raise ConfigError(f"{uri!r} contains a NUL character; storage URIs are {schemes} or local paths.")
    for scheme, mount in mounts.items():
        if uri.startswith(scheme):
            return under_root(root, mount + uri[len(scheme) :])
    if "://" in uri:
        raise ConfigError(f"{uri!r} uses an unsupported scheme; use {schemes} or a local path.")
    return Path(os.path.abspath(uri))
