"""The user's code: unpack the bundle, import the module or run the script, name its file in errors.

``CLOUDTRAIN_BUNDLE`` is the bundle's path in the container, resolved under
``CLOUDTRAIN_ROOT``. The runtime checks it against its name's SHA-256 and unpacks it
into a fresh folder under ``<root>/tmp/cloudtrain`` within size and file limits
(``cloudtrain_runtime.bundle``); the ``image: auto`` bootstrap takes only the runtime
package out of it first. Without the variable, the code is in the current folder (a
bare machine, or an image with the code baked in).
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from cloudtrain_runtime import bundle
from cloudtrain_runtime.errors import UserCodeError
from cloudtrain_runtime.paths import scratch_dir, under_root


def code_dir(env: Mapping[str, str], root: str) -> Path:
    """The folder holding the user's code, unpacking the bundle when needed."""
    if env.get(bundle.BUNDLE_ENV):
        return bundle.unpack(under_root(root, env[bundle.BUNDLE_ENV]), scratch_dir(root))
    return Path.cwd()


def enter(directory: Path) -> None:
    """Make ``directory`` the current folder and the first place imports look."""
    sys.path.insert(0, str(directory))
    os.chdir(directory)


def import_module(name: str, directory: Path) -> ModuleType:
    """Import the user's module, turning import failures into one clear error."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name and name.startswith(err.name):
            raise UserCodeError(
                f"code.module {name!r} was not found in the code folder {str(directory)!r}. "
                "Check code.module and code.source_dir in the spec."
            ) from None
        raise user_error(err, f"importing {name}", directory) from None
    except Exception as err:
        raise user_error(err, f"importing {name}", directory) from None


def call(fn: Callable[..., Any], *args: Any, directory: Path) -> Any:
    """Call a user function; an exception it raises becomes a UserCodeError naming its file."""
    try:
        return fn(*args)
    except Exception as err:
        raise user_error(err, f"{fn.__name__}()", directory) from None


def user_error(err: BaseException, doing: str, directory: Path) -> UserCodeError:
    """``trainer/task.py:12: make_dataset() raised ValueError: ...`` for the user's deepest frame."""
    frames = traceback.extract_tb(err.__traceback__)
    mine = [f for f in frames if _inside(f.filename, directory)] or frames[-1:]
    where = f"{_relative(mine[-1].filename, directory)}:{mine[-1].lineno}" if mine else "user code"
    return UserCodeError(f"{where}: {doing} raised {type(err).__name__}: {_first_line(err)}")


def _first_line(err: BaseException) -> str:
    """TensorFlow errors span many lines; the first one says what happened."""
    lines = [line for line in str(err).splitlines() if line.strip()]
    return lines[0] if lines else ""


def source_file(module: ModuleType, directory: Path) -> str:
    """The module's file relative to the code folder, for error messages."""
    return _relative(getattr(module, "__file__", None) or module.__name__, directory)


def _inside(filename: str, directory: Path) -> bool:
    return os.path.abspath(filename).startswith(str(directory.resolve()) + os.sep)


def _relative(filename: str, directory: Path) -> str:
    path = os.path.abspath(filename)
    return os.path.relpath(path, directory.resolve()) if _inside(path, directory) else filename
