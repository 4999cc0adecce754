"""Fixed container paths and storage URIs, resolved under ``CLOUDTRAIN_ROOT``.

Every path the providers fix (``/gcs/BUCKET``, ``/opt/ml/...``, ``/tmp/cloudtrain``)
is joined under one root, ``/`` in a real container. The local provider points the
root at a folder and so stands in for Vertex's FUSE mount and SageMaker's tree; the
runtime has no other way to learn that it is emulated.

Example:
>>> str(storage_path("gs://bucket/run/model", "/sandbox", on_sagemaker=False))
'/sandbox/gcs/bucket/run/model'
>>> str(storage_path("/data/outputs/model", "/sandbox", on_sagemaker=False))
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


def storage_path(uri: str, root: str, *, on_sagemaker: bool) -> Path:
    """Where this replica opens a storage URI.

    ``gs://B/p`` is Vertex's FUSE path ``<root>/gcs/B/p``. ``s3://B/p`` has no mount on
    SageMaker (the callers use the ``/opt/ml`` paths there), so off SageMaker it is the
    local provider's stand-in bucket ``<root>/s3/B/p``. Local paths stay as they are,
    made absolute now, before the runtime changes into the code's folder.

    Raises:
        ConfigError: for an s3:// URI on SageMaker or an unknown scheme.
    """
    if uri.startswith("gs://"):
        return under_root(root, "/gcs/" + uri[len("gs://") :])
    if uri.startswith("s3://"):
        if on_sagemaker:
            raise ConfigError(
                f"{uri!r} cannot be opened on SageMaker, which mounts no S3 bucket. "
                "Declare it in the spec's data: section so it arrives as an input channel."
            )
        return under_root(root, "/s3/" + uri[len("s3://") :])
    if "://" in uri:
        raise ConfigError(f"{uri!r} uses an unsupported scheme; use gs://, s3:// or a local path.")
    return Path(os.path.abspath(uri))
