"""The handle of a local run: status, logs, cancel and wait, read from the run folder.

Everything lives in files the launcher writes (see ``launcher``), so a handle
from ``submit`` and one from ``attach`` in another shell behave the same.

Those files outlive the processes they describe, so they are read through one
parser that trusts nothing (``records``), and a recorded process is signalled only
when it provably still is that process (``processes``).
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from cloudtrain.errors import ProviderError
from cloudtrain.outputs import Outputs
from cloudtrain.providers import JobStatus, poll_until_done
from cloudtrain.providers.base import TERMINAL_STATES, JobSummary, Stored
from cloudtrain.providers.follow import read_until_done
from cloudtrain.providers.local.processes import ProcessRecord, parse_replicas
from cloudtrain.providers.local.records import parse_request, parse_status, read_record

HOME_ENV = "CLOUDTRAIN_LOCAL_HOME"
LAUNCHER_GONE = "LAUNCHER_GONE"
REQUEST_FILE = "request.json"
STATUS_FILE = "status.json"
LAUNCHER_FILE = "launcher.pid"  # the launcher, written by itself once it leads its own session
REPLICAS_FILE = "replicas.pid"  # the running attempt's replica pids, written by the launcher
FOLLOW_POLL_S = 0.2
# A run folder's name as ``run.submit`` makes it: ``<job name>-<YYYYmmdd>-<HHMMSS>-<4 hex>``,
# at most 63 + 21 characters (spec.JobSpec.name). No '/' and no '.', so it stays in runs/.
# ``<job name>-<YYYYmmdd>-<HHMMSS>-<4 hex>``: the job name is what comes before the stamp.
STAMP = re.compile(r"-\d{8}-\d{6}-[0-9a-f]{4}$")
# A record that cannot be believed: the run is listed, its state says so.
UNREADABLE = "unreadable"
RUN_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,83}")
ID_FORM = (
    "local:<run>, <run> being the run folder name that submit printed (e.g. local:demo-20260101-120000-1a2b)"
)


def local_home() -> Path:
    """``$CLOUDTRAIN_LOCAL_HOME``, else ``$XDG_CACHE_HOME/cloudtrain/local`` (``~/.cache`` without XDG)."""
    if os.environ.get(HOME_ENV):
        return Path(os.environ[HOME_ENV])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "cloudtrain" / "local"


def run_dir_for(job_id: str) -> Path:
    """The run folder of ``local:<run>``: ``$CLOUDTRAIN_LOCAL_HOME/runs/<run>``.

    Raises:
        ProviderError: ``job_id`` is not ``local:`` and a run folder name, so it could
            name a folder outside ``runs/``.

    Example:
    >>> run_dir_for("local:demo-20260101-120000-1a2b").parts[-2:]
    ('runs', 'demo-20260101-120000-1a2b')
    """
    name = job_id.removeprefix("local:")
    if not job_id.startswith("local:") or not RUN_NAME.fullmatch(name):
        raise ProviderError(f"{job_id!r} is not a local job ID. Expected {ID_FORM}.")
    return local_home() / "runs" / name


class LocalJob:
    """A local run: one launcher process supervising one process per host."""

    provider = "local"
    attached = False  # True when submit found this job made by an earlier submit (providers.base.attached)

    def __init__(self, job_id: str, *, request: dict[str, Any] | None = None) -> None:
        self.id = job_id
        self.request = request
        self.run_dir = run_dir_for(job_id)

    @property
    def outputs(self) -> Outputs:
        """Where this run's artifacts are on this machine (an emulated cloud's: in the stand-in buckets)."""
        request = self.request or read_record(self.run_dir / REQUEST_FILE, parse_request)
        if request is None:
            raise ProviderError(f"{self.id} has no readable {REQUEST_FILE}; its outputs are unknown.")
        return Outputs(**request["outputs"])

    def kept_backup(self) -> Stored | None:
        """The run's backup files on this machine (an emulated cloud's: in its stand-in bucket)."""
        folder = Path(self.outputs.backup)
        if not folder.is_dir():
            return None
        sizes = [path.stat().st_size for path in folder.rglob("*") if path.is_file()]
        return Stored(str(folder), sum(sizes), len(sizes), f"rm -r {folder}") if sizes else None

    def status(self) -> JobStatus:
        """The state the launcher recorded; ``failed`` if the launcher is gone without recording an end.

        The launcher counts as gone when its recorded pid is dead, a zombie, or now
        names another process (a recycled pid, or a record from before a reboot).
        """
        current = read_record(self.run_dir / STATUS_FILE, parse_status)
        current = current or JobStatus("pending", "PENDING", "The launcher is starting.")
        if current.done or self._launcher_runs():
            return current
        return JobStatus(
            "failed",
            LAUNCHER_GONE,
            f"The local launcher ended without a final status; see {self.run_dir / 'launcher.log'}. "
            f"`cloudtrain cancel {self.id}` stops any replica still running.",
        )

    def logs(
        self, follow: bool = False, *, since: datetime | None = None, tail: int | None = None
    ) -> Iterator[str]:
        """Every replica's output, prefixed ``[chief-0]``; with ``follow``, until the run ends.

        The lines of ``output.log`` carry no time (they are the replicas' own output, as
        the clouds show it), so ``since`` goes by the file's last write: a log last written
        before ``since`` has nothing to show (with ``follow``, only what comes next), and
        one written since is shown whole. ``tail`` keeps the last lines read.
        """
        log = _Tail(self.run_dir / "output.log", skip_before=since)
        try:
            yield from read_until_done(
                log.new_lines,
                follow=follow,
                is_done=lambda: self.status().done,
                sleep=time.sleep,
                poll_s=FOLLOW_POLL_S,
                tail=tail,
            )
            if follow:  # the run has ended, so a last line without a newline is complete
                yield from log.rest()
        finally:
            log.close()

    def cancel(self) -> None:
        """Ask the launcher to stop every replica; it records ``cancelled``.

        If the launcher itself was killed, its replicas are stopped directly by the
        process groups it recorded, so no orphan trains on. Only a process proven to be
        the recorded one is signalled (see ``ProcessRecord.signal``).
        """
        current = self.status()
        if current.provider_state == LAUNCHER_GONE:
            self._stop_orphans()
        elif not current.done and (launcher := self._launcher()) is not None:
            launcher.signal(signal.SIGTERM)

    def _stop_orphans(self) -> None:
        replicas = read_record(self.run_dir / REPLICAS_FILE, parse_replicas) or {}
        for record in replicas.values():
            record.signal(signal.SIGKILL, group=True)

    def _launcher(self) -> ProcessRecord | None:
        return read_record(self.run_dir / LAUNCHER_FILE, ProcessRecord.from_json)

    def _launcher_runs(self) -> bool:
        launcher = self._launcher()
        return launcher is not None and launcher.is_alive()

    def wait(
        self,
        poll_s: float = 30.0,
        on_status: Callable[[JobStatus], None] | None = None,
        *,
        until: Callable[[JobStatus], bool] | None = None,
    ) -> JobStatus:
        """Block until the run ends (or ``until`` holds); ``on_status`` sees each new state.

        A local run is polled at least every second whatever ``poll_s`` says: reading its
        status is a file read, not a billed API call.
        """
        return poll_until_done(self.status, time.sleep, min(poll_s, 1.0), on_status, until)

    def summary(self) -> JobSummary:
        """This run as ``list`` shows it; a corrupt record makes its state ``unreadable``.

        A run keeps no clock of its own, so its times are those of the records the
        launcher writes once each: ``request.json`` when it was submitted, ``launcher.pid``
        when the launcher took charge (the start), and ``status.json``'s last write for a
        run that ended (the end). Nothing is billed, so there is no estimate or usage.
        """
        try:
            state = self.status().state
        except ProviderError:
            state = UNREADABLE
        try:
            request = read_record(self.run_dir / REQUEST_FILE, parse_request)
        except ProviderError:
            request = None
        replicas = len(request["replicas"]) if request else 0
        return JobSummary(
            id=self.id,
            name=STAMP.sub("", self.run_dir.name),
            provider=self.provider,
            state=state,
            created=_modified(self.run_dir / REQUEST_FILE) or _modified(self.run_dir) or datetime.now(UTC),
            started=_modified(self.run_dir / LAUNCHER_FILE),
            ended=_modified(self.run_dir / STATUS_FILE) if state in TERMINAL_STATES else None,
            shape=f"{replicas} × process" if replicas else "",
            run=request.get("run_id") if request else None,
        )

    def __repr__(self) -> str:
        return f"LocalJob(id={self.id!r}, run_dir={str(self.run_dir)!r})"


def _modified(path: Path) -> datetime | None:
    """When ``path`` was last written, in UTC; None if it does not exist."""
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except FileNotFoundError:
        return None


class _Tail:
    """The lines of a file as they are written; the file may not exist yet.

    With ``skip_before``, a file last written before that time is read from its end.
    """

    def __init__(self, path: Path, *, skip_before: datetime | None = None) -> None:
        self._path = path
        self._file: IO[str] | None = None
        self._partial = ""
        self._skip_before = skip_before

    def new_lines(self) -> Iterator[str]:
        """The lines completed since the last call (a line is complete at its newline)."""
        if self._file is None:
            if not self._path.exists():
                return
            self._file = self._path.open(encoding="utf-8", errors="replace")
            if self._skip_before is not None and self._path.stat().st_mtime < self._skip_before.timestamp():
                self._file.seek(0, os.SEEK_END)
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
