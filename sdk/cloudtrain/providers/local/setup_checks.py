"""``cloudtrain check --provider local``: can this machine run a job's replicas?

Three lines: the Python the replicas run with, whether what they import is installed,
and the free disk where their outputs go. Nothing here imports TensorFlow or a cloud
SDK: installed modules are found with ``importlib.util.find_spec`` (through
``cloudtrain.errors.require_all``), which locates a module without running it, so the
check takes milliseconds (``tests/cloudtrain/test_startup.py`` holds it to that).

Example:
>>> from cloudtrain.spec import JobSpec
>>> spec = JobSpec(name="demo", code={"module": "trainer.task"}, storage={"root": "/"})
>>> [check.check for check in check_setup(spec, require=lambda: None)]
['python', 'runtime', 'outputs']
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from cloudtrain.errors import MissingDependencyError
from cloudtrain.providers.local.job import local_home
from cloudtrain_runtime.diagnosis import FAIL, OK, WARN, Check

if TYPE_CHECKING:
    from cloudtrain.spec import JobSpec

# Below this a run may stop half-way: each epoch's backup, the checkpoints and the
# export of a mid-size Keras model take a few GiB together.
MIN_FREE_BYTES = 5 * 1024**3
GIB = 1024**3


def check_setup(spec: JobSpec, *, require: Callable[[], None]) -> list[Check]:
    """The local provider's lines for ``spec``.

    Args:
        spec: the job (or the settings alone) to check for.
        require: raises ``MissingDependencyError`` naming what the replicas would import
            and this Python lacks (``Local.check_setup`` passes the checks ``submit`` runs).
    """
    return [python_check(), runtime_check(require), outputs_check(outputs_root(spec.storage.root))]


def python_check() -> Check:
    """The interpreter every replica runs: the one running cloudtrain."""
    return Check("python", OK, f"Python {platform.python_version()} ({sys.executable}) runs the replicas")


def runtime_check(require: Callable[[], None]) -> Check:
    """Whether the replicas would find TensorFlow, Keras and the job's requirements, without importing them."""
    try:
        require()
    except MissingDependencyError as missing:
        return Check("runtime", FAIL, "the replicas could not start", str(missing))
    return Check("runtime", OK, "the runtime, TensorFlow and Keras are installed (found, not imported)")


def outputs_root(root: str) -> Path:
    """The folder a local run writes ``root`` to: a bucket URI goes to the stand-in buckets."""
    return local_home() / "buckets" if "://" in root else Path(root).resolve()


def outputs_check(root: Path) -> Check:
    """Free space, and write permission, where the outputs go (the folder may not exist yet)."""
    existing = next(folder for folder in (root, *root.parents) if folder.exists())
    if not os.access(existing, os.W_OK):
        return Check(
            "outputs",
            FAIL,
            f"{root}: {existing} is not writable",
            "Make it writable, or set storage.root to a folder you own.",
        )
    free = shutil.disk_usage(existing).free
    detail = f"{root}: {free / GIB:.1f} GiB free"
    if free < MIN_FREE_BYTES:
        return Check(
            "outputs",
            WARN,
            f"{detail}, less than {MIN_FREE_BYTES // GIB} GiB",
            "Free some space there, or set storage.root to a larger disk.",
        )
    return Check("outputs", OK, detail)
