"""The handle of a local run: status, logs, cancel and wait, read from the run folder.

Everything lives in files the launcher writes (see ``launcher``), so a handle
from ``submit`` and one from ``attach`` in another shell behave the same.

Those files outlive the processes they describe: after a crash or a reboot, a
recorded pid may name another process. So every record is read through one parser
(``read_record``), which turns a corrupt file into one ``ProviderError``, and a
recorded process (``ProcessRecord``) carries what proves a live pid is still it:
the boot it ran in, its start time and its process group. A pid that cannot be
proven to be the recorded process is never signalled.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import reprlib
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

from cloudtrain.errors import ProviderError
from cloudtrain.providers import TERMINAL_STATES, JobStatus, poll_until_done
from cloudtrain.providers.follow import read_until_done

HOME_ENV = "CLOUDTRAIN_LOCAL_HOME"
LAUNCHER_GONE = "LAUNCHER_GONE"
REQUEST_FILE = "request.json"
STATUS_FILE = "status.json"
LAUNCHER_FILE = "launcher.pid"  # the launcher, written by itself once it leads its own session
REPLICAS_FILE = "replicas.pid"  # the running attempt's replica pids, written by the launcher
FOLLOW_POLL_S = 0.2
STATES = ("pending", "running", *TERMINAL_STATES)
# A run folder's name as ``run.submit`` makes it: ``<job name>-<YYYYmmdd>-<HHMMSS>-<4 hex>``,
# at most 63 + 21 characters (spec.JobSpec.name). No '/' and no '.', so it stays in runs/.
RUN_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,83}")
ID_FORM = (
    "local:<run>, <run> being the run folder name that submit printed (e.g. local:demo-20260101-120000-1a2b)"
)
# The largest pid Linux hands out (PID_MAX_LIMIT, include/linux/threads.h); macOS stops at 99999.
PID_MAX = 4 * 1024 * 1024
PROC = Path("/proc")
PS_TIMEOUT_S = 10.0

T = TypeVar("T")


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

    def __init__(self, job_id: str, *, request: dict[str, Any] | None = None) -> None:
        self.id = job_id
        self.request = request
        self.run_dir = run_dir_for(job_id)

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

    def wait(self, poll_s: float = 30.0, on_status: Callable[[JobStatus], None] | None = None) -> JobStatus:
        """Block until the run ends; ``on_status`` sees each new state.

        A local run is polled at least every second whatever ``poll_s`` says: reading its
        status is a file read, not a billed API call.
        """
        return poll_until_done(self.status, time.sleep, min(poll_s, 1.0), on_status)

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


# Records: one reader, one writer.


def read_record(path: Path, parse: Callable[[Any], T]) -> T | None:
    """Read one of a run's JSON records through ``parse``; None if the file does not exist.

    ``parse`` gets the decoded JSON and raises ValueError naming what is wrong with it.

    Raises:
        ProviderError: the file cannot be read, is not UTF-8 JSON, holds NUL bytes, or
            ``parse`` refused it. The message names the file and what to do.
    """
    try:
        raw = path.read_bytes()
        if b"\0" in raw:
            raise ValueError("it contains NUL bytes")
        return parse(json.loads(raw.decode("utf-8")))
    except FileNotFoundError:
        return None
    # JSONDecodeError and UnicodeDecodeError are ValueErrors; deep nesting is a RecursionError.
    except (OSError, ValueError, RecursionError) as exc:
        raise untrusted(path, str(exc) or type(exc).__name__) from exc


def untrusted(path: Path, problem: str) -> ProviderError:
    """The error for a record that cannot be believed, with the way out."""
    return ProviderError(
        f"cloudtrain cannot trust {path}: {problem}. Check that no process of this run still runs "
        f"(its launcher's command line names the run folder), then remove the run folder {path.parent}."
    )


def write_record(path: Path, data: Any) -> None:
    """Write a JSON record atomically (see ``write_atomically``)."""
    text = json.dumps(data, indent=2)
    write_atomically(path, lambda file: file.write(text.encode("utf-8")))


def write_atomically(path: Path, write: Callable[[IO[bytes]], object]) -> None:
    """Fill a temp file of its own beside ``path`` with ``write``, then rename it over ``path``.

    A reader sees the old file or the new one, never half of one, even after a crash
    (the data is synced before the rename), and two writers never share a temp file.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def parse_status(data: Any) -> JobStatus:
    """``status.json``: the run's state, the provider's word for it and a detail line."""
    state = _field(data, "state", str)
    if state not in STATES:
        raise ValueError(f"'state' must be one of {', '.join(STATES)}, got {state!r}")
    return JobStatus(state, _field(data, "provider_state", str), _field(data, "detail", str))


def parse_request(data: Any) -> dict[str, Any]:
    """``request.json``: the rendered request, with its replicas and restart limit."""
    replicas = _field(data, "replicas", list)
    if not replicas or not all(isinstance(r, dict) and isinstance(r.get("name"), str) for r in replicas):
        raise ValueError("'replicas' must be a non-empty list of objects, each with a 'name'")
    if _field(data, "max_restarts", int) < 0:
        raise ValueError(f"'max_restarts' must be >= 0, got {data['max_restarts']}")
    return dict(data)


def parse_replicas(data: Any) -> dict[str, ProcessRecord]:
    """``replicas.pid``: each replica's name and process record."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object of replica names, got {type(data).__name__}")
    return {str(name): ProcessRecord.from_json(record) for name, record in data.items()}


def _field(data: Any, key: str, kind: type[T]) -> T:
    """``data[key]``, which must have exactly the type ``kind`` (``True`` is no pid)."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    value = data.get(key)
    if type(value) is not kind:
        raise ValueError(f"{key!r} must be {kind.__name__}, got {reprlib.repr(value)}")
    return value


def _pid_field(data: Any, key: str) -> int:
    value = _field(data, key, int)
    if not 1 < value <= PID_MAX:
        raise ValueError(f"{key!r} must be a pid from 2 to {PID_MAX}, got {value}")
    return value


def _token_field(data: Any, key: str) -> str:
    value = _field(data, key, str)
    if not (0 < len(value) <= 100 and value.isprintable()):
        raise ValueError(f"{key!r} must be 1 to 100 printable characters, got {reprlib.repr(value)}")
    return value


# Processes: who a pid is now, and who it was when recorded.


@dataclass(frozen=True)
class Identity:
    """What the system says about a live (or zombie) pid now."""

    boot_id: str
    start_time: str
    pgid: int
    uid: int
    zombie: bool


def identify(pid: int, *, proc: Path = PROC) -> Identity | None:
    """Who ``pid`` is now; None if no such process exists.

    Linux answers from ``proc`` (proc(5)); a system without it (macOS) from ``ps``.

    Raises:
        ProviderError: there is no ``proc`` and ``ps`` does not answer, so nothing can
            be proven about the pid.
    """
    if (proc / "self" / "stat").is_file():
        return _identify_in_proc(pid, proc)
    return _identify_with_ps(pid)


def _identify_in_proc(pid: int, proc: Path) -> Identity | None:
    try:
        stat = (proc / str(pid) / "stat").read_text()
        uid = (proc / str(pid)).stat().st_uid
        boot_id = (proc / "sys" / "kernel" / "random" / "boot_id").read_text().strip()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # After the command name, which is in parentheses and may hold any character, index 0
    # is field 3 (state), 2 is field 5 (pgrp) and 19 is field 22 (starttime, in clock ticks
    # since boot): proc(5), /proc/pid/stat.
    fields = stat.rsplit(")", 1)[1].split()
    return Identity(boot_id, fields[19], int(fields[2]), uid, zombie=fields[0] in ("Z", "X"))


def _identify_with_ps(pid: int) -> Identity | None:
    # Without /proc there is no boot id: the start of pid 1 changes with every boot. ``lstart``
    # has whole seconds, so only a pid recycled within the second of its start would pass.
    now, boot = _ps(pid), _ps(1)
    if now is None:
        return None
    if boot is None:
        raise ProviderError(
            "Cannot prove which process a pid is: this system has no /proc and `ps -p 1` found no "
            "process 1, so no recorded process is signalled. Stop the run's processes by hand."
        )
    uid, pgid, state, started = now
    return Identity(boot[3], started, int(pgid), int(uid), zombie=state.startswith("Z"))


def _ps(pid: int) -> list[str] | None:
    """``uid pgid stat lstart`` of ``pid`` from ``ps``; None if it has no such process."""
    command = ["ps", "-o", "uid=", "-o", "pgid=", "-o", "stat=", "-o", "lstart=", "-p", str(pid)]
    env = {**os.environ, "LC_ALL": "C"}  # ``lstart`` is a date in the locale's words: one locale for all
    try:
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=PS_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ProviderError(
            f"Cannot prove which process pid {pid} is: this system has no /proc and `ps` failed ({exc}), "
            "so no recorded process is signalled. Stop the run's processes by hand."
        ) from exc
    fields = done.stdout.split(maxsplit=3)
    return fields if done.returncode == 0 and len(fields) == 4 else None


@dataclass(frozen=True)
class ProcessRecord:
    """A process as a run records it: its pid, and the token that proves a live pid is still it.

    A pid alone names whatever process holds it now. The boot id and start time tell a
    recycled pid, or a record from before a reboot, from the recorded process; the
    process group says which group ``signal(group=True)`` may stop.

    Example:
    >>> record = ProcessRecord.of(os.getpid())
    >>> record.is_alive(), ProcessRecord.from_json(record.to_json()) == record
    (True, True)
    """

    pid: int
    pgid: int
    boot_id: str
    start_time: str

    @classmethod
    def of(cls, pid: int, *, proc: Path = PROC) -> ProcessRecord:
        """Record the live process ``pid``, as it is now.

        Raises:
            ProviderError: ``pid`` runs no process, or it cannot be identified.
        """
        now = identify(pid, proc=proc)
        if now is None:
            raise ProviderError(f"Process {pid} ended before it could be recorded.")
        return cls(pid, now.pgid, now.boot_id, now.start_time)

    @classmethod
    def from_json(cls, data: Any) -> ProcessRecord:
        """Parse a record written by ``to_json``; ValueError names what is wrong."""
        return cls(
            _pid_field(data, "pid"),
            _pid_field(data, "pgid"),
            _token_field(data, "boot_id"),
            _token_field(data, "start_time"),
        )

    def to_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "pgid": self.pgid, "boot_id": self.boot_id, "start_time": self.start_time}

    def current(self, *, proc: Path = PROC) -> Identity | None:
        """The process now at ``pid`` if it is provably the recorded one; None if it is gone or another.

        Provably: the same boot, the same start time, still in the recorded process group,
        and owned by this user.
        """
        now = identify(self.pid, proc=proc)
        recorded = (self.boot_id, self.start_time, self.pgid, os.getuid())
        if now is None or (now.boot_id, now.start_time, now.pgid, now.uid) != recorded:
            return None
        return now

    def is_alive(self, *, proc: Path = PROC) -> bool:
        """Whether the recorded process still runs (a zombie, exited but not reaped, counts as gone)."""
        now = self.current(proc=proc)
        return now is not None and not now.zombie

    def signal(self, signum: int, *, group: bool = False, proc: Path = PROC) -> bool:
        """Send ``signum`` to the recorded process, or with ``group`` to the group it leads.

        Nothing is sent unless the pid provably still is the recorded process (``current``)
        and, with ``group``, still leads its group.

        Returns:
            Whether a signal was sent; False if the process is gone or its pid now names
            another process.

        Raises:
            ProviderError: the record names pid 0 or 1, or the caller's own process group.
        """
        if min(self.pid, self.pgid) <= 1 or self.pgid == os.getpgrp():
            raise ProviderError(
                f"Refusing to signal pid {self.pid} (process group {self.pgid}): a run's record never "
                "names pid 0 or 1 or the group of the cloudtrain command itself, so the record is wrong."
            )
        now = self.current(proc=proc)
        if now is None or (group and now.pgid != self.pid):
            return False
        with contextlib.suppress(ProcessLookupError, PermissionError):  # it ended just now
            (os.killpg if group else os.kill)(self.pid, signum)
            return True
        return False


def is_running(pid: int | None, *, proc: Path = PROC) -> bool:
    """Whether ``pid`` runs, whoever it is (a zombie, exited but not reaped, counts as gone)."""
    now = None if pid is None else identify(pid, proc=proc)
    return now is not None and not now.zombie
