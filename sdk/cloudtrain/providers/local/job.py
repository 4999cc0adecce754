"""The handle of a local run: status, logs, cancel and wait, read from the run folder.

Everything lives in files the launcher writes (see ``launcher``), so a handle
from ``submit`` and one from ``attach`` in another shell behave the same.

Those files outlive the processes they describe, so they are read through one
parser that trusts nothing (``records``), and a recorded process is signalled only
when it provably still is that process (``processes``). A launcher that died without
recording an end is handled by ``orphans``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cloudtrain import files
from cloudtrain.errors import ProviderError
from cloudtrain.messages import quote
from cloudtrain.outputs import Outputs
from cloudtrain.provider import JobStatus
from cloudtrain.provider.base import TERMINAL_STATES, JobSummary, Stored
from cloudtrain.provider.jobs import WaitsByPolling
from cloudtrain.providers.local import orphans
from cloudtrain.providers.local.logfile import LOG_FILE, Tail, first_offset_since
from cloudtrain.providers.local.processes import ProcessRecord
from cloudtrain.providers.local.records import (
    LAUNCHER_FILE,
    REQUEST_FILE,
    STARTED_FILE,
    STATUS_FILE,
    parse_request,
    parse_status,
    read_record,
    untrusted,
)
from cloudtrain_runtime.replica import PROGRESS_FILE

HOME_ENV = "CLOUDTRAIN_LOCAL_HOME"
# How long ``cancel`` waits for the launcher to stop the replicas and record the end: its
# grace for a runtime that saves on SIGTERM (launcher.CANCEL_GRACE_S), then the host folders' sync.
CANCEL_WAIT_S = 60.0
CANCEL_POLL_S = 0.1
# A progress record is a few hundred bytes; anything much larger is not one.
PROGRESS_BYTES = 64 * 1024
# A run folder's name as ``run.submit`` makes it: ``<job name>-<YYYYmmdd>-<HHMMSS>-<4 hex>``,
# at most 63 + 21 characters (spec.JobSpec.name). No '/' and no '.', so it stays in runs/.
# ``<job name>-<YYYYmmdd>-<HHMMSS>-<4 hex>``: the job name is what comes before the stamp.
STAMP = re.compile(r"-\d{8}-\d{6}-[0-9a-f]{4}$")
# A record that cannot be believed: the run is listed, its state says so.
UNREADABLE = "unreadable"
RUN_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,83}")
ID_FORM = (
    "local:<run>, <run> being the run folder name that submit printed (e.g. local:demo-20260101-120000-1a2b) "
    "or a run id"
)


def local_home() -> Path:
    """``$CLOUDTRAIN_LOCAL_HOME``, else ``$XDG_CACHE_HOME/cloudtrain/local`` (``~/.cache`` without XDG).

    Always absolute: a relative one is taken from the current folder, as a shell would,
    because the run folder's paths go to replicas that start in folders of their own.
    """
    if os.environ.get(HOME_ENV):
        return Path(os.environ[HOME_ENV]).absolute()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return (cache / "cloudtrain" / "local").absolute()


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
        raise ProviderError(f"{quote(job_id)} is not a local job ID. Expected {ID_FORM}.")
    return local_home() / "runs" / name


def poll_sleep(seconds: float) -> None:
    """A local handle's clock for ``wait``: at most a second, whatever ``poll_s`` says.

    Reading a local run's or sweep's status is a file read, not a billed API call, so it
    is polled at least every second.
    """
    time.sleep(min(seconds, 1.0))


class LocalJob(WaitsByPolling):
    """A local run: one launcher process supervising one process per host."""

    provider = "local"
    attached = (
        False  # True when submit found this job made by an earlier submit (cloudtrain.provider.jobs.attached)
    )
    runs_here = True  # base.RunsHere: Ctrl-C on a foreground submit stops it

    def __init__(self, job_id: str, *, request: dict[str, Any] | None = None) -> None:
        self.id = job_id
        self.request = request
        self.run_dir = run_dir_for(job_id)

    @property
    def outputs(self) -> Outputs:
        """Where this run's artifacts are on this machine (an emulated cloud's: in the stand-in buckets)."""
        return Outputs(**self._request()["outputs"])

    def _request(self) -> dict[str, Any]:
        """The run's request, read once.

        Raises:
            ProviderError: ``request.json`` is missing or cannot be believed.
        """
        if self.request is None:
            self.request = read_record(self.run_dir / REQUEST_FILE, parse_request)
            if self.request is None:
                raise untrusted(self.run_dir / REQUEST_FILE, "it is missing")
        return self.request

    def kept_backup(self) -> Stored | None:
        """The run's backup files on this machine (an emulated cloud's: in its stand-in bucket)."""
        folder = Path(self.outputs.backup)
        if not folder.is_dir():
            return None
        sizes = [path.stat().st_size for path in folder.rglob("*") if path.is_file()]
        return Stored(str(folder), sum(sizes), len(sizes), f"rm -r {folder}") if sizes else None

    def progress_record(self) -> object:
        """The chief's progress record beside the run's result; None before its first write.

        An emulated SageMaker run has none to read: its chief writes the record into its
        checkpoint folder, as on SageMaker, and the emulation copies that folder to the
        stand-in bucket when the attempt ends, where SageMaker syncs it while the job runs
        (``local.hosts``); its results reach the bucket packed in ``output.tar.gz``
        (``outputs.result`` names a member of it). Nor has a run whose request, which says
        where the record lands, is damaged: ``status`` still shows its state, as it does
        without the request.
        """
        try:
            result = self.outputs.result
        except ProviderError:
            return None
        if "#" in result:
            return None
        try:
            return json.loads(files.read_bytes(Path(result).with_name(PROGRESS_FILE), limit=PROGRESS_BYTES))
        except (FileNotFoundError, files.UnreadableFile, ValueError):
            return None

    def status(self) -> JobStatus:
        """The state the launcher recorded; if the launcher is gone without recording an end, ``orphans.status``.

        The launcher counts as gone when its recorded pid is dead, a zombie, or now
        names another process (a recycled pid, or a record from before a reboot). The
        request is not needed: a run whose ``request.json`` was damaged still has a state.
        """
        current = self._recorded()
        if current.done or self._launcher_runs():
            return current
        current = self._recorded()  # the launcher can write no more: what it wrote last is final
        return current if current.done else orphans.status(self.run_dir, self.id)

    def _recorded(self) -> JobStatus:
        recorded = read_record(self.run_dir / STATUS_FILE, parse_status)
        return recorded or JobStatus("pending", "PENDING", "The launcher is starting.")

    def logs(
        self, follow: bool = False, *, since: datetime | None = None, tail: int | None = None
    ) -> Iterator[str]:
        """Every replica's output, prefixed ``[chief-0]``; with ``follow``, until the run ends.

        ``since`` starts at the first line written at or after it, by the times the
        launcher records beside the log (``logfile``); a run folder without them goes by
        the log's last write. ``tail`` keeps the last lines read.
        """
        start = first_offset_since(self.run_dir, since) if since is not None else 0
        log = Tail(self.run_dir / LOG_FILE, start=start or 0, skip_before=since if start is None else None)
        return log.lines(follow=follow, is_done=lambda: self.status().done, tail=tail)

    def cancel(self) -> None:
        """Stop the run, and return once it has recorded its end (at most ``CANCEL_WAIT_S``).

        A running launcher is asked (SIGTERM): it stops every replica and records
        ``cancelled``, or the end the run really had if it finished first. If the
        launcher is gone, ``orphans.stop_and_tidy`` does its part. Only the process
        records are needed, and only a process proven to be the recorded one is
        signalled (``ProcessRecord.signal``); cancelling a run that has ended does nothing.
        A damaged ``launcher.pid`` stops nothing once the launcher has been silent for
        ``orphans.SILENT_S``: it is gone, and its replicas are stopped by their own records.
        """
        launcher = self._launcher_unless_gone()
        if launcher is not None and launcher.is_alive() and launcher.signal(signal.SIGTERM):
            deadline = time.monotonic() + CANCEL_WAIT_S
            while launcher.is_alive() and time.monotonic() < deadline:
                time.sleep(CANCEL_POLL_S)
        if launcher is None or not launcher.is_alive():
            orphans.stop_and_tidy(self.run_dir, self.id)

    def _launcher(self) -> ProcessRecord | None:
        return read_record(self.run_dir / LAUNCHER_FILE, ProcessRecord.from_json)

    def _launcher_unless_gone(self) -> ProcessRecord | None:
        """The launcher's record; None when it is damaged but the launcher has long been silent.

        Raises:
            ProviderError: the record is damaged and the launcher was seen alive lately,
                so it may run and cannot be proven to be the process to stop.
        """
        try:
            return self._launcher()
        except ProviderError:
            if orphans.seen_lately(self.run_dir):
                raise
            return None

    def _launcher_runs(self) -> bool:
        launcher = self._launcher()
        return launcher is not None and launcher.is_alive()

    def _sleep(self, seconds: float) -> None:
        poll_sleep(seconds)

    def summary(self) -> JobSummary:
        """This run as ``list`` shows it; a corrupt record makes its state ``unreadable``.

        A run keeps no clock of its own, so its times are those of the records the
        launcher writes once each: ``request.json`` when it was submitted, ``started`` when
        the first replicas started (a run from before it was kept: ``launcher.pid``, when the
        launcher took charge), and ``status.json``'s last write for a run that ended (the end); a launcher that died without recording an end ended
        when it was last seen alive (``orphans.last_seen``). Nothing is billed, so there
        is no estimate or usage.
        """
        try:
            current: JobStatus | None = self.status()
        except ProviderError:
            current = None
        try:
            request = read_record(self.run_dir / REQUEST_FILE, parse_request)
        except ProviderError:
            request = None
        replicas = len(request["replicas"]) if request else 0
        return JobSummary(
            id=self.id,
            name=STAMP.sub("", self.run_dir.name),
            provider=self.provider,
            state=current.state if current else UNREADABLE,
            created=_modified(self.run_dir / REQUEST_FILE) or _modified(self.run_dir) or datetime.now(UTC),
            started=None if current is None or current.waiting else self._started(),
            ended=self._ended(current),
            shape=f"{replicas} × process" if replicas else "",
            run=request.get("run_id") if request else None,
        )

    def _started(self) -> datetime | None:
        """When the first replicas started; a run from before that was recorded, when its launcher took charge."""
        return _modified(self.run_dir / STARTED_FILE) or _modified(self.run_dir / LAUNCHER_FILE)

    def _ended(self, current: JobStatus | None) -> datetime | None:
        """When an ended run ended: its final record's write, else (no end recorded) the launcher's last sign of life."""
        if current is None or current.state not in TERMINAL_STATES:
            return None
        if self._recorded().done:
            return _modified(self.run_dir / STATUS_FILE)
        return orphans.last_seen(self.run_dir)

    def __repr__(self) -> str:
        return f"LocalJob(id={self.id!r}, run_dir={str(self.run_dir)!r})"


def _modified(path: Path) -> datetime | None:
    """When ``path`` was last written, in UTC; None if it does not exist."""
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except FileNotFoundError:
        return None
