"""The user's code: unpack the bundle, import the module or run the script, name its file in errors.

``CLOUDTRAIN_BUNDLE`` is the bundle's path in the container, resolved under
``CLOUDTRAIN_ROOT``. The runtime checks it against its name's SHA-256 and unpacks it
into a fresh folder under ``<root>/tmp/cloudtrain`` within size and file limits
(``cloudtrain_runtime.bundle``); the ``image: auto`` bootstrap takes only the runtime
package out of it first. Without the variable, the code is in the current folder (a
bare machine, or an image with the code baked in).

An exception the user's code raises keeps its traceback, cut to the frames of the
user's own files (the code folder): the line that failed and every call of theirs that
led to it, as pytest and Keras show a user's error. ``CLOUDTRAIN_DEBUG=1`` (or
``CLOUDTRAIN_VERBOSE=1``, which ``cloudtrain submit -v`` sets) keeps every frame, the
runtime's and the libraries' included.
"""

from __future__ import annotations

import copy
import importlib
import os
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from cloudtrain_runtime import bundle
from cloudtrain_runtime.errors import UserCodeError
from cloudtrain_runtime.paths import scratch_dir, under_root

# Either one set to 1 keeps every frame of a user error's traceback.
WHOLE_TRACE_ENV = ("CLOUDTRAIN_DEBUG", "CLOUDTRAIN_VERBOSE")
USER_FRAMES = "Traceback (your code's frames; CLOUDTRAIN_DEBUG=1 shows every frame):\n"
LAST_FRAME = "Traceback (no frame is in your code; the last one; CLOUDTRAIN_DEBUG=1 shows every frame):\n"
# What TensorFlow says of an error in a tf.function, and the lines of its node frames (``_first_line``).
GRAPH_ERROR = "Graph execution error:"
_NODE_LINES = ("Detected at node ", "<stack traces unavailable>")
CAUSE_CHARS = 300


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


def user_error(
    err: BaseException, doing: str, directory: Path, *, whole: bool | None = None
) -> UserCodeError:
    """``trainer/task.py:12: make_dataset() raised ValueError: ...`` for the user's deepest frame.

    Where no frame is the user's (a Keras shape error inside ``model.fit()``), the line
    names the library file that raised, after the message, never as if it were theirs.
    The error's ``trace`` is the traceback cut to the user's frames, or whole with
    ``whole`` (default: ``CLOUDTRAIN_DEBUG`` or ``CLOUDTRAIN_VERBOSE`` is 1).
    """
    frames = traceback.extract_tb(err.__traceback__)
    mine = [f for f in frames if _inside(f.filename, directory)]
    message = f"{doing} raised {type(err).__name__}: {_first_line(err)}"
    if mine:
        message = f"{_relative(mine[-1].filename, directory)}:{mine[-1].lineno}: {message}"
    elif frames:
        message += f" [raised in {_library_path(frames[-1].filename)}:{frames[-1].lineno}, not in your code]"
    if whole is None:
        whole = any(os.environ.get(name) == "1" for name in WHOLE_TRACE_ENV)
    return UserCodeError(message, whole_trace(err) if whole else user_trace(err, frames, directory))


def user_trace(err: BaseException, frames: Sequence[traceback.FrameSummary], directory: Path) -> str:
    """The traceback as Python prints it, with only the user's frames, paths relative to the code folder.

    With none of theirs (an error inside Keras), the last frame, in the library that raised.
    """
    mine = [_renamed(f, _relative(f.filename, directory)) for f in frames if _inside(f.filename, directory)]
    last = [_renamed(f, _library_path(f.filename)) for f in frames[-1:]]
    header, shown = (USER_FRAMES, mine) if mine or not last else (LAST_FRAME, last)
    stack = traceback.StackSummary.from_list(shown)
    return header + "".join(stack.format()) + "".join(traceback.format_exception_only(err))


def _renamed(frame: traceback.FrameSummary, filename: str) -> traceback.FrameSummary:
    """``frame`` (its line and column markers kept) under another file name."""
    renamed = copy.copy(frame)
    renamed.filename = filename
    return renamed


def whole_trace(err: BaseException) -> str:
    """Every frame, the exceptions it came from included, as Python prints an uncaught error."""
    return "".join(traceback.format_exception(err))


def _library_path(filename: str) -> str:
    """``keras/src/layers/input_spec.py`` for a file of an installed package: its path on ``sys.path``."""
    path = os.path.abspath(filename)
    roots = [os.path.abspath(entry) + os.sep for entry in sys.path if entry]
    inside = [root for root in roots if path.startswith(root)]
    return path[len(max(inside, key=len)) :] if inside else filename


def _first_line(err: BaseException) -> str:
    """The line that says what happened: an error's first, or a graph error's cause.

    TensorFlow errors span many lines. One raised while a ``tf.function`` ran (every
    ``model.fit`` step) reads "Graph execution error:", then for each failing node
    "Detected at node N defined at (most recent call last):" and that node's frames, then
    the op's own message (tensorflow 2.21, ``polymorphic_function/atomic_function.py``,
    ``interpolate``): that message's first line is the cause, cut to ``CAUSE_CHARS``
    (it may list a whole batch of label values).

    Example:
    >>> lines = ["Graph execution error:", "", "Detected at node loss defined at (most recent call last):",
    ...          '  File "task.py", line 3, in f', "", "Received a label value of -6 which is outside the "
    ...          "valid range of [0, 3).", "  [[{{node loss}}]]"]
    >>> _first_line(ValueError(chr(10).join(lines)))
    'Graph execution error: Received a label value of -6 which is outside the valid range of [0, 3).'
    """
    lines = [line for line in str(err).splitlines() if line.strip()]
    if lines[:1] == [GRAPH_ERROR]:
        causes = [line for line in lines[1:] if not line[0].isspace() and not line.startswith(_NODE_LINES)]
        if causes:
            cause = causes[0] if len(causes[0]) <= CAUSE_CHARS else causes[0][:CAUSE_CHARS] + "…"
            return f"{GRAPH_ERROR} {cause}"
    return lines[0] if lines else ""


def source_file(module: ModuleType, directory: Path) -> str:
    """The module's file relative to the code folder, for error messages."""
    return _relative(getattr(module, "__file__", None) or module.__name__, directory)


def _inside(filename: str, directory: Path) -> bool:
    """Whether ``filename`` is a file in the code folder; never a frame of no file (``<frozen importlib._bootstrap>``).

    Such a name is no path: made absolute, it would land in the current folder, which is
    the code folder once the runtime entered it.
    """
    if filename.startswith("<"):
        return False
    return os.path.abspath(filename).startswith(str(directory.resolve()) + os.sep)


def _relative(filename: str, directory: Path) -> str:
    path = os.path.abspath(filename)
    return os.path.relpath(path, directory.resolve()) if _inside(path, directory) else filename
