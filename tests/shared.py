"""Expensive test fixtures made once for the whole suite, whichever parallel worker asks first.

pytest's ``scope="session"`` is one per process, and the suite runs in pytest-xdist's
workers: a documentation build or a pair of training runs would be made once per worker
that needs them. ``made_once`` makes the value in a folder every worker of the session
sees, under an exclusive lock, and the other workers wait for it and read it back.
"""

from __future__ import annotations

import fcntl
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")


def shared_folder(factory: pytest.TempPathFactory, name: str) -> Path:
    """``name``'s folder in this session's temporary root, the same for every worker.

    pytest-xdist gives each worker ``<session root>/popen-gwN`` as its own root.
    """
    own = factory.getbasetemp()
    root = own.parent if os.environ.get("PYTEST_XDIST_WORKER") else own
    return root / "shared" / name


def made_once(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], T]) -> T:
    """``make(folder)``, called by the first worker to ask; the others get its pickled value.

    A ``make`` that raises leaves nothing behind: the next worker to ask tries again and
    fails its own tests the same way.
    """
    folder = shared_folder(factory, name)
    folder.mkdir(parents=True, exist_ok=True)
    value_file = folder / "value.pickle"
    with (folder / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not value_file.exists():
            value = make(folder)
            value_file.write_bytes(pickle.dumps(value))
            return value
    loaded: T = pickle.loads(value_file.read_bytes())
    return loaded
