"""A package's names, defined in its modules and imported on first use (PEP 562).

A provider package's ``__init__`` that imported every module it re-exports would load
them all whenever any one room is imported (``vertex.settings``, read whenever a spec is
built, would load the cloud clients). Its module ``__getattr__`` calls ``attribute``
instead, which imports the defining module when a name is first asked for and keeps the
value, so the next lookup is a plain one.

Example: a package's ``__init__`` holds ``_EXPORTS``, public name -> defining module, and

    def __getattr__(name: str) -> Any:
        return lazy.attribute(__name__, _EXPORTS, name)

>>> attribute("cloudtrain", {"JobSpec": "cloudtrain.spec"}, "JobSpec").__name__
'JobSpec'
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping


def attribute(package: str, exports: Mapping[str, str], name: str) -> Any:
    """``name`` from the module ``exports`` says defines it, kept on ``package`` for the next lookup.

    Raises:
        AttributeError: ``package`` exports no ``name`` (what ``getattr`` and ``hasattr`` expect).
    """
    if name not in exports:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(exports[name]), name)
    setattr(sys.modules[package], name, value)
    return value
