"""What a local run's launcher leaves when it dies without recording an end (``kill -9``, the OOM killer).

Its replicas may still train, unsupervised: nothing restarts them and their output goes
nowhere (the launcher held the reading end of their pipes, so each dies at its next line
of output). ``status`` reports them as running, by the identities the launcher recorded
in ``replicas.pid``; once none runs, the run has failed, and it ended when the launcher
was last seen alive (``launcher.alive``, touched every second while it runs).

``stop_and_tidy`` is what ``cancel`` does in the launcher's place: stop those replicas
(each only if it provably is the recorded process, ``processes``), sync and remove
their host folders as the launcher would have, and record the end. It needs only the
process records: a damaged ``request.json`` or ``status.json`` does not stop it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from datetime import UTC, datetime
from pathlib import Path

from cloudtrain.errors import ProviderError
from cloudtrain.provider.base import JobStatus
from cloudtrain.providers.local import failures
from cloudtrain.providers.local.processes import ProcessRecord, parse_replicas
from cloudtrain.providers.local.records import (
    HEARTBEAT_FILE,
    LAUNCHER_FILE,
    REPLICAS_FILE,
    REQUEST_FILE,
    STATUS_FILE,
    discard,
    parse_request,
    parse_status,
    read_record,
    status_record,
    write_record,
)

LAUNCHER_GONE = "LAUNCHER_GONE"
# Seconds a SIGKILLed replica gets to be gone (reaped by init, as an orphan is) before cancel gives up.
KILL_WAIT_S = 10.0
POLL_S = 0.05
# A live launcher touches launcher.alive every second (launcher.HEARTBEAT_S); silent this long, it is gone.
SILENT_S = 10.0


def status(run_dir: Path, job_id: str) -> JobStatus:
    """The state of a run whose launcher is gone: running while a recorded replica lives, else failed."""
    seen = _seen(run_dir)
    running = live_replicas(run_dir)
    if running:
        return JobStatus(
            "running",
            LAUNCHER_GONE,
            f"The local launcher died ({seen}); replicas {', '.join(running)} still run unsupervised, "
            f"with no restart and no log. Stop them with: cloudtrain cancel {job_id}",
        )
    detail = f"The local launcher ended without a final status ({seen}); see {run_dir / 'launcher.log'}."
    return JobStatus("failed", LAUNCHER_GONE, detail, failures.launcher_failure(detail))


def live_replicas(run_dir: Path) -> list[str]:
    """The recorded replicas still running, each provably the recorded process."""
    return [name for name, record in _replicas(run_dir).items() if record.is_alive()]


def seen_lately(run_dir: Path) -> bool:
    """Whether the launcher touched ``launcher.alive`` in the last ``SILENT_S``: it may still run."""
    beat = _modified(run_dir / HEARTBEAT_FILE)
    return beat is not None and time.time() - beat < SILENT_S


def last_seen(run_dir: Path) -> datetime | None:
    """When the launcher was last seen alive: its last heartbeat, else when it recorded itself."""
    times = [_modified(run_dir / name) for name in (HEARTBEAT_FILE, LAUNCHER_FILE)]
    known = [when for when in times if when is not None]
    return datetime.fromtimestamp(max(known), UTC) if known else None


def stop_and_tidy(run_dir: Path, job_id: str) -> None:
    """Stop the replicas a dead launcher left running, remove their host folders, record the end.

    A replica that provably is the recorded process is killed with its process group (it
    is unsupervised: no grace would let it save anything the launcher could sync). The
    end recorded is ``cancelled`` if any was still running, else ``failed`` at the time
    the launcher was last seen alive; a run that recorded its own end keeps it.

    Raises:
        ProviderError: ``replicas.pid`` cannot be believed, or a replica outlived its kill.
    """
    records = _replicas(run_dir)
    stopped = [
        name
        for name, record in records.items()
        if record.is_alive() and record.signal(signal.SIGKILL, group=True)
    ]
    _await_gone(records)
    _tidy_hosts(run_dir)
    discard(run_dir / REPLICAS_FILE)
    if _recorded_end(run_dir) is None:
        _record_end(run_dir, job_id, stopped)
    discard(run_dir / HEARTBEAT_FILE)


def _record_end(run_dir: Path, job_id: str, stopped: list[str]) -> None:
    """Write the final ``status.json``; its time is the end (``LocalJob.summary``): now, or the last sign of life."""
    seen = _seen(run_dir)
    if stopped:
        detail = (
            f"Cancelled by the user after the local launcher died ({seen}); stopped {', '.join(stopped)}."
        )
        write_record(run_dir / STATUS_FILE, status_record(JobStatus("cancelled", "CANCELLED", detail)))
        return
    write_record(run_dir / STATUS_FILE, status_record(status(run_dir, job_id)))
    if (when := last_seen(run_dir)) is not None:
        os.utime(run_dir / STATUS_FILE, (when.timestamp(), when.timestamp()))


def _recorded_end(run_dir: Path) -> JobStatus | None:
    """The end the run recorded itself; None if it recorded none, or its record is damaged."""
    with contextlib.suppress(ProviderError):
        recorded = read_record(run_dir / STATUS_FILE, parse_status)
        if recorded is not None and recorded.done:
            return recorded
    return None


def _tidy_hosts(run_dir: Path) -> None:
    """Sync each host's synced folders to their bucket, then remove the host folders, as the launcher does.

    Without a readable request the folders to sync are unknown; the host folders go all the
    same. Only folders under the run's ``hosts/`` are touched, whatever the request says.
    """
    from cloudtrain.providers.local import hosts

    try:
        request = read_record(run_dir / REQUEST_FILE, parse_request)
    except ProviderError:
        request = None
    inside = (run_dir / "hosts").resolve()
    rooted = [
        replica
        for replica in (request or {}).get("replicas", [])
        if isinstance(replica.get("root"), str) and Path(replica["root"]).resolve().is_relative_to(inside)
    ]
    for replica in rooted:
        if Path(replica["root"]).is_dir():
            with contextlib.suppress(OSError, KeyError, ValueError):  # a torn host folder syncs what it can
                hosts.sync_out(replica)
    hosts.remove_hosts(rooted)
    shutil.rmtree(run_dir / "hosts", ignore_errors=True)


def _await_gone(records: dict[str, ProcessRecord]) -> None:
    deadline = time.monotonic() + KILL_WAIT_S
    while (
        alive := [name for name, record in records.items() if record.is_alive()]
    ) and time.monotonic() < deadline:
        time.sleep(POLL_S)
    if alive:
        raise ProviderError(
            f"Replicas {', '.join(alive)} still run {KILL_WAIT_S:.0f} s after SIGKILL; "
            "they may be stuck in the kernel (uninterruptible I/O). Try the cancel again."
        )


def _replicas(run_dir: Path) -> dict[str, ProcessRecord]:
    return read_record(run_dir / REPLICAS_FILE, parse_replicas) or {}


def _seen(run_dir: Path) -> str:
    """When the launcher was last seen alive, in words, with how long it had run."""
    seen, started = last_seen(run_dir), _modified(run_dir / LAUNCHER_FILE)
    if seen is None or started is None:
        return "it never recorded itself"
    local = seen.astimezone().strftime("%Y-%m-%d %H:%M:%S")
    return f"last seen alive at {local}, {seen.timestamp() - started:.1f} s after it started"


def _modified(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return None
