"""Reading a file cloudtrain does not own: within a size, without waiting, one line per defect.

A path a user or another program controls (a kubeconfig, a run's result and history, a
local run's records) can name anything: a folder, a FIFO no one writes (reading it waits
for ever), ``/dev/zero`` (never ends, and its size says 0, so no size check on ``stat``
catches it), gigabytes, binary bytes. ``read_bytes`` opens without blocking and reads at
most ``limit`` bytes and one more, so each of these becomes one ``UnreadableFile`` whose
message is ``PATH: the problem``; its caller adds what to do.

A regular file is read as it is. Anything else is refused, unless the caller takes
``special`` files (a kubeconfig may be the shell's ``<(...)`` pipe, as ``kubectl`` reads
one): then it is read, still within ``limit``, until its writer closes it or ``wait_s``
seconds have passed.

Example:
>>> read_text("/dev/null", limit=100)
Traceback (most recent call last):
    ...
cloudtrain.files.UnreadableFile: /dev/null: not a regular file (a FIFO, socket or device).
"""

from __future__ import annotations

import os
import select
import stat
import time
from typing import Any

from cloudtrain.errors import CloudtrainError
from cloudtrain_runtime.inputs import loads

# How long a special file (a pipe) may stay silent before its reader gives up.
WAIT_S = 5.0
_CHUNK = 1 << 16
SHOWN_CHARS = 80


class FileProblem(CloudtrainError):
    """A file that cannot be read or written as the caller needs: ``str()`` is ``PATH: the problem``."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = str(path)
        self.problem = problem


class UnreadableFile(FileProblem):
    """A file that cannot be read as the caller needs it."""


class UnwritableFile(FileProblem):
    """A path the user named that cannot take what cloudtrain writes there."""


def read_bytes(
    path: str | os.PathLike[str], *, limit: int, special: bool = False, wait_s: float | None = None
) -> bytes:
    """The bytes of the file at ``path``, at most ``limit`` of them.

    Args:
        path: the file; a symbolic link is followed.
        limit: the most bytes the file may hold.
        special: also read a FIFO, pipe or character device (within ``limit`` and ``wait_s``).
        wait_s: how long a special file may keep its reader waiting, in all (default ``WAIT_S``).

    Raises:
        FileNotFoundError: nothing is at ``path`` (callers often treat that as "none").
        UnreadableFile: ``path`` is a folder, not a regular file (without ``special``),
            larger than ``limit``, silent for ``wait_s``, or cannot be opened or read.
    """
    info = _stat(path)
    if stat.S_ISDIR(info.st_mode):
        raise UnreadableFile(path, "is a folder, not a file.")
    regular = stat.S_ISREG(info.st_mode)
    if not regular and not special:
        raise UnreadableFile(path, "not a regular file (a FIFO, socket or device).")
    if regular and info.st_size > limit:
        raise UnreadableFile(path, too_large(limit))
    wait_s = WAIT_S if wait_s is None else wait_s
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise UnreadableFile(path, f"cannot be opened ({_reason(exc)}).") from None
    try:
        data = _read_regular(fd, limit) if regular else _read_special(fd, limit, time.monotonic() + wait_s)
    except TimeoutError:
        raise UnreadableFile(path, f"nothing came in {wait_s:g} s (a FIFO that no one writes?).") from None
    except OSError as exc:
        raise UnreadableFile(path, f"cannot be read ({_reason(exc)}).") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise UnreadableFile(path, too_large(limit))
    return data


def read_text(
    path: str | os.PathLike[str], *, limit: int, special: bool = False, wait_s: float | None = None
) -> str:
    """``read_bytes``, decoded as UTF-8 text without NUL bytes.

    Raises:
        FileNotFoundError: nothing is at ``path``.
        UnreadableFile: as ``read_bytes``, or the bytes are not UTF-8 text.
    """
    return decoded(read_bytes(path, limit=limit, special=special, wait_s=wait_s), path)


def read_json(path: str | os.PathLike[str], *, limit: int) -> Any:
    """The JSON document in the file at ``path`` (``read_text``, then ``cloudtrain_runtime.inputs.loads``).

    Raises:
        FileNotFoundError: nothing is at ``path``.
        UnreadableFile: as ``read_text``, or the text is not JSON (NaN, 4,300-digit
            numbers and nesting too deep included).
    """
    text = read_text(path, limit=limit)
    try:
        return loads(text)
    except ValueError as exc:
        raise UnreadableFile(path, f"not JSON ({_cut(str(exc))}).") from None


def write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path``, creating or replacing the file, and say so if any of it failed.

    Opened without blocking, so a FIFO with no reader fails at once rather than waiting;
    every write error (a full disk, ``/dev/full``, a missing folder) is raised, never lost
    in a buffer closed behind the caller's back.

    Raises:
        UnwritableFile: the path cannot be opened for writing, or a write failed.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except (OSError, ValueError) as exc:
        raise UnwritableFile(_shown(path), f"cannot be written ({_reason(exc)}).") from None
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        raise UnwritableFile(path, f"cannot be written ({_reason(exc)}).") from None
    finally:
        os.close(fd)


def decoded(raw: bytes, path: str | os.PathLike[str]) -> str:
    """``raw`` as UTF-8 text; a NUL byte, which no text file holds, is refused too.

    Example:
    >>> decoded(b"\\xff", "x.json")
    Traceback (most recent call last):
        ...
    cloudtrain.files.UnreadableFile: x.json: not UTF-8 text (byte 0); binary, or saved in another encoding.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableFile(
            path, f"not UTF-8 text (byte {exc.start}); binary, or saved in another encoding."
        ) from None
    if "\0" in text:
        raise UnreadableFile(path, f"holds a NUL byte (at byte {raw.index(0)}); it is not a text file.")
    return text


def too_large(limit: int) -> str:
    """The problem of a file over ``limit`` bytes, as ``UnreadableFile`` words it."""
    return f"larger than {limit:,} bytes, more than such a file ever holds."


def _stat(path: str | os.PathLike[str]) -> os.stat_result:
    try:
        return os.stat(path)
    except FileNotFoundError:
        raise
    except ValueError:  # a NUL byte in the path
        raise UnreadableFile(_shown(path), "the path holds a NUL byte.") from None
    except OSError as exc:
        raise UnreadableFile(path, f"cannot be read ({_reason(exc)}).") from None


def _read_regular(fd: int, limit: int) -> bytes:
    """Up to ``limit + 1`` bytes: one more than allowed tells a file that grew since ``stat``."""
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = os.read(fd, min(_CHUNK, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _read_special(fd: int, limit: int, deadline: float) -> bytes:
    """Up to ``limit + 1`` bytes of a pipe or device, until it ends or ``deadline`` passes.

    A FIFO that no process has open for writing reads as its end at once; one whose
    writer stays silent is waited for until ``deadline`` only.
    """
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        try:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - size))
        except BlockingIOError:  # a writer, with nothing written yet
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError from None
            continue
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _shown(path: str | os.PathLike[str]) -> str:
    """The path quoted and cut short: one that holds a NUL byte may hold anything else too."""
    return _cut(repr(os.fsdecode(path)))


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}…"


def _reason(exc: OSError | ValueError) -> str:
    if isinstance(exc, ValueError):  # a NUL byte in the path
        return "the path holds a NUL byte"
    return exc.strerror or type(exc).__name__
