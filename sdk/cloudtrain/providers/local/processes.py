"""Who a pid is now, and who it was when a run recorded it.

A pid alone names whatever process holds it now: after a crash or a reboot a recorded
pid may belong to another process. A ``ProcessRecord`` carries what proves a live pid is
still the recorded one (the boot it ran in, its start time, its process group), and a
pid that cannot be proven to be it is never signalled.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cloudtrain.errors import ProviderError
from cloudtrain.providers.local.records import pid_field, token_field

PROC = Path("/proc")
PS_TIMEOUT_S = 10.0


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
            pid_field(data, "pid"),
            pid_field(data, "pgid"),
            token_field(data, "boot_id"),
            token_field(data, "start_time"),
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


def parse_replicas(data: Any) -> dict[str, ProcessRecord]:
    """``replicas.pid``: each replica's name and process record."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object of replica names, got {type(data).__name__}")
    return {str(name): ProcessRecord.from_json(record) for name, record in data.items()}
