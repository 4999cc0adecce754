"""A local run's ``output.log``, and the time each of its lines was written (``output.times``).

The replicas' lines carry no time of their own (they are their output as the clouds show
it), so the launcher records, for each line it appends, where the line starts and when it
was written: one ``<byte offset> <unix seconds>`` pair a line in ``output.times``. With
it ``logs --since`` starts at the first line written at or after that time, as Cloud
Logging's ``timestamp>=`` and CloudWatch's ``startTime`` do; a run folder without it
falls back to the log's last write (shown whole if written since, else nothing).

Both files may have been damaged by hand; neither is believed blindly (``Tail`` refuses
a log that is not a regular file, and an index line that does not parse is skipped).
"""

from __future__ import annotations

import bisect
import os
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import IO

from cloudtrain.provider.follow import read_until_done
from cloudtrain.providers.local.records import untrusted

LOG_FILE = "output.log"
TIMES_FILE = "output.times"
# Seconds between reads of a followed log: the file is on this machine, so reading is cheap.
FOLLOW_POLL_S = 0.2


class LogWriter:
    """Appends lines to ``output.log`` and their offsets and times to ``output.times``, from any thread."""

    def __init__(self, run_dir: Path) -> None:
        self._lock = threading.Lock()
        self._log: IO[bytes] = (run_dir / LOG_FILE).open("ab")
        self._times: IO[str] = (run_dir / TIMES_FILE).open("a", encoding="ascii")

    def write(self, line: str) -> None:
        """Append ``line`` (a newline is added) and the time it was written."""
        data = f"{line}\n".encode("utf-8", errors="replace")
        with self._lock:
            offset = self._log.seek(0, os.SEEK_END)
            self._log.write(data)
            self._log.flush()
            self._times.write(f"{offset} {time.time():.3f}\n")
            self._times.flush()

    def close(self) -> None:
        self._log.close()
        self._times.close()

    def __repr__(self) -> str:
        return f"LogWriter(log={self._log.name!r})"


def first_offset_since(run_dir: Path, since: datetime) -> int | None:
    """Where the first line written at or after ``since`` starts; None when the run has no index.

    Every line written before ``since`` is skipped, so with none written since, the
    answer is the end of what the index knows (what comes next is shown when following).

    Example:
    >>> import tempfile
    >>> from datetime import UTC
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / TIMES_FILE).write_text("0 100.0\\n12 200.0\\n30 300.0\\n")
    >>> first_offset_since(folder, datetime.fromtimestamp(150, UTC))
    12
    """
    try:
        text = (run_dir / TIMES_FILE).read_text(encoding="ascii", errors="replace")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise untrusted(run_dir / TIMES_FILE, exc.strerror or type(exc).__name__) from exc
    entries = [entry for line in text.splitlines() if (entry := _entry(line)) is not None]
    times = [when for _, when in entries]
    found = bisect.bisect_left(times, since.timestamp())
    if found < len(entries):
        return entries[found][0]
    return _end(run_dir / LOG_FILE)


def _entry(line: str) -> tuple[int, float] | None:
    """``(offset, time)`` of one index line; None for a line cut short or not written by ``LogWriter``."""
    parts = line.split()
    try:
        offset, when = int(parts[0]), float(parts[1])
    except (IndexError, ValueError):
        return None
    return (offset, when) if len(parts) == 2 and offset >= 0 else None


def _end(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


class Tail:
    """The lines of a run's log as they are written; the file may not exist yet.

    ``start`` is the byte offset to read from (``first_offset_since``); ``skip_before``
    reads a log last written before that time from its end (a run without an index).
    """

    def __init__(self, path: Path, *, start: int = 0, skip_before: datetime | None = None) -> None:
        self._path = path
        self._file: IO[bytes] | None = None
        self._partial = b""
        self._start = start
        self._skip_before = skip_before

    def new_lines(self) -> Iterator[str]:
        """The lines completed since the last call (a line is complete at its newline)."""
        if self._file is None and not self._open():
            return
        assert self._file is not None
        while chunk := self._file.readline():
            self._partial += chunk
            if self._partial.endswith(b"\n"):
                yield self._partial.rstrip(b"\n").decode("utf-8", errors="replace")
                self._partial = b""

    def _open(self) -> bool:
        """Open the log once it exists; refuse anything but a regular file (a folder, a FIFO)."""
        if not os.path.lexists(self._path):
            return False
        if not self._path.is_file():
            raise untrusted(self._path, "it is not a regular file")
        try:
            self._file = self._path.open("rb")
            modified = os.fstat(self._file.fileno()).st_mtime
        except OSError as exc:
            raise untrusted(self._path, exc.strerror or type(exc).__name__) from exc
        if self._skip_before is not None and modified < self._skip_before.timestamp():
            self._file.seek(0, os.SEEK_END)
        else:
            self._file.seek(self._start)
        return True

    def rest(self) -> Iterator[str]:
        """What follows the last newline."""
        if self._partial:
            yield self._partial.decode("utf-8", errors="replace")

    def lines(self, *, follow: bool, is_done: Callable[[], bool], tail: int | None) -> Iterator[str]:
        """The log's lines, read once, or with ``follow`` until ``is_done()``; the file is closed after.

        A local job's ``logs`` and a local sweep's both read their file this way. Once the
        run has ended, a last line without a newline is complete, so following ends with it.
        """
        try:
            yield from read_until_done(
                self.new_lines,
                follow=follow,
                is_done=is_done,
                sleep=time.sleep,
                poll_s=FOLLOW_POLL_S,
                tail=tail,
            )
            if follow:
                yield from self.rest()
        finally:
            self.close()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()

    def __repr__(self) -> str:
        return f"Tail(path={str(self._path)!r}, start={self._start})"
