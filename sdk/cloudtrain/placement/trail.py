"""The trail of a run's placement: every attempt, with its candidate, outcome, reason and time.

A run keeps one trail however many candidates it tried: ``status`` and ``list`` show it,
and a placement that was interrupted (a crash, Ctrl-C, a closed terminal) reads it to
find the job it left live, so it attaches to that job rather than creating a second. The
trail lives on this machine, beside the other records cloudtrain keeps
(``$XDG_CACHE_HOME/cloudtrain/placements/<run id>.json``), written whole after each
attempt, so a reader never sees half of one.

Example:
>>> attempt = Attempt(0, "vertex", "us-central1", "n1-standard-8", "failed", "capacity",
...                   "RESOURCE_EXHAUSTED", "Resources are insufficient in region: us-central1.", "job-1", "", 3.2)
>>> attempt.line()
'0 vertex us-central1 n1-standard-8: failed, capacity (RESOURCE_EXHAUSTED): Resources are insufficient in region: us-central1. [3.2 s]'
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudtrain.errors import CloudtrainError
from cloudtrain_runtime.inputs import loads

if TYPE_CHECKING:
    from cloudtrain.placement.resolve import Resolved
    from cloudtrain.provider.failures import Failure

# A trail holds at most a few dozen attempts of a few hundred bytes each.
MAX_TRAIL_BYTES = 1024 * 1024
# The outcome of an attempt whose job was created and not yet seen to start or end.
SUBMITTED = "submitted"


@dataclass(frozen=True)
class Attempt:
    """One try of one candidate: where, what came of it, and why."""

    candidate: int
    provider: str
    region: str
    shape: str
    outcome: str
    reason: str = ""
    code: str = ""
    detail: str = ""
    job_id: str | None = None
    at: str = ""
    seconds: float | None = None

    @classmethod
    def of(
        cls,
        candidate: Resolved,
        outcome: str,
        failure: Failure | None,
        *,
        job_id: str | None,
        seconds: float | None,
    ) -> Attempt:
        """The attempt of ``candidate`` that ended in ``outcome``, for ``failure`` (None: none)."""
        return cls(
            candidate=candidate.index,
            provider=candidate.plan.provider,
            region=candidate.plan.region,
            shape=candidate.shape,
            outcome=outcome,
            reason=str(failure.reason) if failure else "",
            code=failure.code if failure else "",
            detail=failure.message if failure else "",
            job_id=job_id,
            at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            seconds=seconds,
        )

    def line(self) -> str:
        """One line for people: the candidate, the outcome, the reason and the time it took."""
        why = f", {self.reason}" if self.reason else ""
        code = f" ({self.code})" if self.code else ""
        detail = f": {self.detail}" if self.detail else ""
        job = f" {self.job_id}" if self.job_id and not self.detail else ""
        took = f" [{self.seconds:g} s]" if self.seconds is not None else ""
        return f"{self.candidate} {self.provider} {self.region} {self.shape}: {self.outcome}{why}{code}{detail}{job}{took}"


@dataclass
class Trail:
    """A run's attempts, kept in ``path`` (None: in memory only)."""

    run_id: str
    path: Path | None = None
    attempts: list[Attempt] = field(default_factory=list)

    @classmethod
    def of_run(cls, run_id: str, folder: Path | None = None) -> Trail:
        """The trail of ``run_id`` as recorded on this machine (empty for a run never placed).

        Raises:
            CloudtrainError: the record exists but cannot be read; the message names it.
        """
        path = (folder or trails_folder()) / f"{run_id}.json"
        return cls(run_id, path, _read(path))

    def add(self, attempt: Attempt) -> None:
        """Record ``attempt`` and write the trail whole."""
        self.attempts.append(attempt)
        if self.path is not None:
            _write(self.path, {"run_id": self.run_id, "attempts": [asdict(a) for a in self.attempts]})

    def live(self) -> Attempt | None:
        """The last attempt if its job was created and never seen to start or end: a job to attach to."""
        last = self.attempts[-1] if self.attempts else None
        return last if last is not None and last.outcome == SUBMITTED else None

    def placed(self) -> Attempt | None:
        """The attempt that started the run, if one did."""
        return next((a for a in reversed(self.attempts) if a.outcome == "started"), None)


def trails_folder() -> Path:
    """``$XDG_CACHE_HOME/cloudtrain/placements`` (``~/.cache`` without XDG)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "cloudtrain" / "placements"


def _read(path: Path) -> list[Attempt]:
    if not path.exists():
        return []
    try:
        document = loads(_small_file(path).decode("utf-8"))
        return [_attempt(item) for item in document["attempts"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CloudtrainError(
            f"The placement record {path} cannot be read ({exc}). A job it recorded may still run: "
            f"look for it with `cloudtrain list`, then delete the record to place the run again."
        ) from None


def _small_file(path: Path) -> bytes:
    """The bytes of ``path``: a regular file of at most ``MAX_TRAIL_BYTES``, never a FIFO or device."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file")
        raw = file.read(MAX_TRAIL_BYTES + 1)
    if len(raw) > MAX_TRAIL_BYTES:
        raise ValueError(f"larger than {MAX_TRAIL_BYTES:,} bytes")
    return raw


def _attempt(item: Any) -> Attempt:
    names = {f.name for f in fields(Attempt)}
    if not isinstance(item, dict) or not set(item) <= names:
        raise ValueError(f"an attempt must be an object with the keys {sorted(names)}")
    return Attempt(**item)


def _write(path: Path, document: dict[str, Any]) -> None:
    """Write ``document`` to ``path`` whole: a temporary file beside it, then a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as file:
            json.dump(document, file, indent=1)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
