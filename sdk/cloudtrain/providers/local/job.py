"""The handle of a local run: status, logs, cancel and wait, read from the run folder.

Everything lives in files the launcher writes (see ``launcher``), so a handle
from ``submit`` and one from ``attach`` in another shell behave the same.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from cloudtrain.providers import JobStatus, poll_until_done
from cloudtrain.providers.follow import read_until_done

HOME_ENV = "CLOUDTRAIN_LOCAL_HOME"
LAUNCHER_GONE = "LAUNCHER_GONE"
REPLICAS_FILE = "replicas.pid"  # the running attempt's replica pids, written by the launcher
FOLLOW_POLL_S = 0.2


def local_home() -> Path:
    """``$CLOUDTRAIN_LOCAL_HOME``, else ``$XDG_CACHE_HOME/cloudtrain/local`` (``~/.cache`` without XDG)."""
    if os.environ.get(HOME_ENV):
        return Path(os.environ[HOME_ENV])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "cloudtrain" / "local"


def run_dir_for(job_id: str) -> Path:
    """The run folder of ``local:<run>``: ``$CLOUDTRAIN_LOCAL_HOME/runs/<run>``."""
    return local_home() / "runs" / job_id.removeprefix("local:")


class LocalJob:
    """A local run: one launcher process supervising one process per host."""

    provider = "local"

    def __init__(self, job_id: str, *, request: dict[str, Any] | None = None) -> None:
        self.id = job_id
        self.request = request
        self.run_dir = run_dir_for(job_id)

    def status(self) -> JobStatus:
        """The state the launcher recorded; ``failed`` if it vanished without recording an end."""
        path = self.run_dir / "status.json"
        current = JobStatus("pending", "PENDING", "The launcher is starting.")
        if path.is_file():
            current = JobStatus(**json.loads(path.read_text()))
        if not current.done and not is_running(self._launcher_pid()):
            return JobStatus(
                "failed",
                LAUNCHER_GONE,
                f"The local launcher ended without a final status; see {self.run_dir / 'launcher.log'}. "
                f"`cloudtrain cancel {self.id}` stops any replica still running.",
            )
        return current

    def logs(self, follow: bool = False) -> Iterator[str]:
        """Every replica's output, prefixed ``[chief-0]``; with ``follow``, until the run ends."""
        log = _Tail(self.run_dir / "output.log")
        try:
            yield from read_until_done(
                log.new_lines,
                follow=follow,
                is_done=lambda: self.status().done,
                sleep=time.sleep,
                poll_s=FOLLOW_POLL_S,
            )
            if follow:  # the run has ended, so a last line without a newline is complete
                yield from log.rest()
        finally:
            log.close()

    def cancel(self) -> None:
        """Ask the launcher to stop every replica; it records ``cancelled``.

        If the launcher itself was killed, its replicas are stopped directly by the
        process groups it recorded, so no orphan trains on.
        """
        current, pid = self.status(), self._launcher_pid()
        if current.provider_state == LAUNCHER_GONE:
            self._stop_orphans()
        elif not current.done and pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    def _stop_orphans(self) -> None:
        path = self.run_dir / REPLICAS_FILE
        for pid in json.loads(path.read_text()).values() if path.is_file() else []:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)

    def wait(self, poll_s: float = 30.0, on_status: Callable[[JobStatus], None] | None = None) -> JobStatus:
        """Block until the run ends; ``on_status`` sees each new state.

        A local run is polled at least every second whatever ``poll_s`` says: reading its
        status is a file read, not a billed API call.
        """
        return poll_until_done(self.status, time.sleep, min(poll_s, 1.0), on_status)

    def _launcher_pid(self) -> int | None:
        path = self.run_dir / "launcher.pid"
        return int(path.read_text()) if path.is_file() else None

    def __repr__(self) -> str:
        return f"LocalJob(id={self.id!r}, run_dir={str(self.run_dir)!r})"


class _Tail:
    """The lines of a file as they are written; the file may not exist yet."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._file: IO[str] | None = None
        self._partial = ""

    def new_lines(self) -> Iterator[str]:
        """The lines completed since the last call (a line is complete at its newline)."""
        if self._file is None:
            if not self._path.exists():
                return
            self._file = self._path.open(encoding="utf-8", errors="replace")
        while chunk := self._file.readline():
            self._partial += chunk
            if self._partial.endswith("\n"):
                yield self._partial.rstrip("\n")
                self._partial = ""

    def rest(self) -> Iterator[str]:
        """What follows the last newline."""
        if self._partial:
            yield self._partial

    def close(self) -> None:
        if self._file is not None:
            self._file.close()

    def __repr__(self) -> str:
        return f"_Tail(path={str(self._path)!r})"


def is_running(pid: int | None) -> bool:
    """Whether ``pid`` runs (a zombie, exited but not reaped, counts as gone)."""
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"
