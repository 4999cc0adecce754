"""A local run's records: one reader that trusts nothing, one atomic writer.

The files of a run folder (``request.json``, ``status.json``, ``launcher.pid``,
``replicas.pid``) outlive the processes they describe and may be truncated or edited
by hand, so every one is read through ``read_record``: a corrupt file becomes one
``ProviderError`` that names it and the way out, never a traceback.
"""

from __future__ import annotations

import contextlib
import json
import os
import reprlib
import tempfile
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import IO, Any, TypeVar

from cloudtrain import files
from cloudtrain.errors import ProviderError
from cloudtrain.outputs import Outputs
from cloudtrain.provider import TERMINAL_STATES, JobStatus
from cloudtrain.providers.local import failures

# The records of a run folder (``launcher`` writes them; ``job`` and ``orphans`` read them).
REQUEST_FILE = "request.json"  # the rendered request, with the run folder and buckets filled in
STATUS_FILE = "status.json"  # the state; its last write is when that state began
LAUNCHER_FILE = "launcher.pid"  # the launcher, written by itself once it leads its own session
REPLICAS_FILE = "replicas.pid"  # the running attempt's replica pids, written by the launcher
HEARTBEAT_FILE = "launcher.alive"  # touched by the launcher while it runs: when it was last seen alive
STARTED_FILE = "started"  # touched by the launcher as the first replicas start: when the run started

STATES = ("pending", "queued", "running", *TERMINAL_STATES)
# A record is a page of JSON; the request, the largest, holds the environment of each replica.
MAX_RECORD_BYTES = 16 * 1024 * 1024
# The largest pid Linux hands out (PID_MAX_LIMIT, include/linux/threads.h); macOS stops at 99999.
PID_MAX = 4 * 1024 * 1024

T = TypeVar("T")


def read_record(path: Path, parse: Callable[[Any], T]) -> T | None:
    """Read one of a run's JSON records through ``parse``; None if the file does not exist.

    ``parse`` gets the decoded JSON and raises ValueError naming what is wrong with it.

    Raises:
        ProviderError: the file cannot be read, is not UTF-8 JSON, holds NUL bytes, or
            ``parse`` refused it. The message names the file and what to do.
    """
    try:
        raw = files.read_bytes(path, limit=MAX_RECORD_BYTES)
        if b"\0" in raw:
            raise ValueError("it contains NUL bytes")
        return parse(json.loads(raw.decode("utf-8")))
    except FileNotFoundError:
        return None
    except files.UnreadableFile as exc:  # a folder, a FIFO, a device in its place: never waited on
        raise untrusted(path, exc.problem.rstrip(".")) from None
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
    A folder found where the record goes (nothing renames a file over one) is moved
    aside to ``<name>.damaged``, kept for the user to look at, and the record written.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
        if path.is_dir() and not path.is_symlink():
            _move_aside(path)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def discard(path: Path) -> None:
    """Remove the record at ``path`` if there is one; a folder in its place is moved aside, not deleted."""
    if path.is_dir() and not path.is_symlink():
        _move_aside(path)
    else:
        path.unlink(missing_ok=True)


def _move_aside(path: Path) -> Path:
    """Rename ``path`` to ``<name>.damaged`` (``.damaged-2``, ... if taken) beside it; returns where."""
    for count in range(1, 100):
        aside = path.with_name(f"{path.name}.damaged{'' if count == 1 else f'-{count}'}")
        if not aside.exists() and not aside.is_symlink():
            path.rename(aside)
            return aside
    raise ProviderError(f"{path} is a folder, and so are its 99 damaged copies beside it. Remove them.")


def status_record(status: JobStatus) -> dict[str, Any]:
    """``status`` as ``status.json`` keeps it (``parse_status`` reads it back)."""
    record: dict[str, Any] = {
        "state": status.state,
        "provider_state": status.provider_state,
        "detail": status.detail,
    }
    if status.failure is not None:
        record["failure"] = failures.to_record(status.failure)
    if status.pending_since is not None:
        record["pending_since"] = status.pending_since.isoformat()
        record["pending_reason"] = status.pending_reason
    return record


def parse_status(data: Any) -> JobStatus:
    """``status.json``: the run's state, the provider's word for it, a detail line, and why it failed."""
    state = field(data, "state", str)
    if state not in STATES:
        raise ValueError(f"'state' must be one of {', '.join(STATES)}, got {state!r}")
    failure = failures.from_record(data.get("failure"))
    status = JobStatus(state, field(data, "provider_state", str), field(data, "detail", str), failure)
    if "pending_since" not in data:
        return status
    since = datetime.fromisoformat(field(data, "pending_since", str))
    if since.tzinfo is None:
        raise ValueError("'pending_since' must name its time zone")
    return replace(status, pending_since=since, pending_reason=field(data, "pending_reason", str))


def parse_request(data: Any) -> dict[str, Any]:
    """``request.json``: the rendered request, with its replicas and restart limits."""
    replicas = field(data, "replicas", list)
    if not replicas or not all(isinstance(r, dict) and isinstance(r.get("name"), str) for r in replicas):
        raise ValueError("'replicas' must be a non-empty list of objects, each with a 'name'")
    outputs = field(data, "outputs", dict)
    # A run recorded before an artifact existed (the history) lacks only that one.
    known = set(outputs) <= set(Outputs.names()) and set(Outputs.required()) <= set(outputs)
    if not known or not all(isinstance(v, str) for v in outputs.values()):
        raise ValueError(f"'outputs' must map {', '.join(Outputs.names())} to paths")
    restarts = field(data, "restarts", dict)
    for kind, policy in restarts.items():
        if field(policy, "limit", int) < 0 or not isinstance(policy.get("rule"), str):
            raise ValueError(
                f"'restarts.{kind}' must have a 'limit' >= 0 and a 'rule', got {reprlib.repr(policy)}"
            )
    return dict(data)


def field(data: Any, key: str, kind: type[T]) -> T:
    """``data[key]``, which must have exactly the type ``kind`` (``True`` is no pid)."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    value = data.get(key)
    if type(value) is not kind:
        raise ValueError(f"{key!r} must be {kind.__name__}, got {reprlib.repr(value)}")
    return value


def pid_field(data: Any, key: str) -> int:
    value = field(data, key, int)
    if not 1 < value <= PID_MAX:
        raise ValueError(f"{key!r} must be a pid from 2 to {PID_MAX}, got {value}")
    return value


def token_field(data: Any, key: str) -> str:
    value = field(data, key, str)
    if not (0 < len(value) <= 100 and value.isprintable()):
        raise ValueError(f"{key!r} must be 1 to 100 printable characters, got {reprlib.repr(value)}")
    return value
