"""The handle of a local run: status, logs, cancel and wait, read from the run folder.

Everything lives in files the launcher writes (see ``local_launcher``), so a handle
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
from typing import Any

from cloudtrain.providers import JobStatus

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
        path = self.run_dir / "output.log"
        while follow and not path.exists() and not self.status().done:
            time.sleep(FOLLOW_POLL_S)
        if not path.exists():
            return
        with path.open(encoding="utf-8", errors="replace") as log:
            yield from _tail(log, follow=follow, done=lambda: self.status().done)

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
        """Block until the run ends; ``on_status`` sees each new state."""
        seen = None
        while True:
            current = self.status()
            if on_status and current != seen:
                on_status(current)
            seen = current
            if current.done:
                return current
            time.sleep(min(poll_s, 1.0))

    def _launcher_pid(self) -> int | None:
        path = self.run_dir / "launcher.pid"
        return int(path.read_text()) if path.is_file() else None

    def __repr__(self) -> str:
        return f"LocalJob(id={self.id!r}, run_dir={str(self.run_dir)!r})"


def _tail(log: Any, *, follow: bool, done: Callable[[], bool]) -> Iterator[str]:
    """Lines of ``log`` as they are written; stops at EOF (or, following, once ``done``)."""
    partial = ""
    while True:
        chunk = log.readline()
        if chunk:
            partial += chunk
            if partial.endswith("\n"):
                yield partial.rstrip("\n")
                partial = ""
            continue
        if not follow:
            return
        if done():
            yield from (partial + log.read()).splitlines()
            return
        time.sleep(FOLLOW_POLL_S)


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
