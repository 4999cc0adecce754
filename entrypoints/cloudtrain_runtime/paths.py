"""Fixed container paths and storage URIs, resolved under ``CLOUDTRAIN_ROOT``.

Every path the providers fix (``/gcs/BUCKET``, ``/opt/ml/...``, ``/tmp/cloudtrain``)
is joined under one root, ``/`` in a real container. The local provider points the
root at a folder and so stands in for Vertex's FUSE mount and SageMaker's tree; the
runtime has no other way to learn that it is emulated.

Example:
>>> str(storage_path("gs://bucket/run/model", "/sandbox"))
'/sandbox/gcs/bucket/run/model'
>>> str(storage_path("/data/outputs/model", "/sandbox"))
'/data/outputs/model'
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from cloudtrain_runtime.errors import ConfigError

ROOT_ENV = "CLOUDTRAIN_ROOT"
# Where each bucket scheme is mounted under the root: Vertex's FUSE mount, and the local
# provider's stand-in for S3.
_MOUNTS = {"gs://": "/gcs/", "s3://": "/s3/"}


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


def storage_path(uri: str, root: str) -> Path:
    """Where this replica opens a storage URI.

    ``gs://B/p`` is Vertex's FUSE path ``<root>/gcs/B/p``. ``s3://B/p`` is the local
    provider's stand-in bucket ``<root>/s3/B/p`` (SageMaker mounts no bucket, so there the
    runtime uses the fixed ``/opt/ml`` paths instead). Local paths stay as they are, made
    absolute now, before the runtime changes into the code's folder.

    Raises:
        ConfigError: for an unknown scheme or a NUL character.
    """
    if "\x00" in uri:
        raise ConfigError(f"{uri!r} contains a NUL character; storage URIs are gs://, s3:// or local paths.")
    for scheme, mount in _MOUNTS.items():
        if uri.startswith(scheme):
            return under_root(root, mount + uri[len(scheme) :])
    if "://" in uri:
        raise ConfigError(f"{uri!r} uses an unsupported scheme; use gs://, s3:// or a local path.")
    return Path(os.path.abspath(uri))
