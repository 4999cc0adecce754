"""Resume a run anywhere: move its newest verified backup to where its next attempt runs.

A run's backups live under its prefix in one bucket of one region of one cloud. When the
run goes on somewhere else (another region, another provider, because capacity, price or
quota moved), ``submit --run-id R`` there finds no backup under the new prefix. Before
the job starts, cloudtrain looks where the run has been (``record.places``, this
machine's index), takes the newest backup there whose manifest verifies, and copies it
to the new prefix (``copy.copy_newest``: streamed, checked file by file, resumable), so
the job continues at that backup's epoch with the same run id. Each attempt is recorded
in the run's ``lineage.json`` (``record``).

``plan_move`` says what would move and what the transfer would cost, contacting only
the storage (listings and manifests); ``move_backup`` moves it; placement failover calls
``move_backup`` when a run that already trained goes on elsewhere.

Example::

    from cloudtrain.resume import Location, move_backup
    here = Location("vertex", "vertex", "us-central1", "gs://b/churn/runs/r1")
    there = Location("sagemaker", "sagemaker", "us-east-1", "s3://b/churn/runs/r1")
    moved = move_backup("r1", here, there, progress=print)
    moved.copied.manifest.epoch, moved.usd
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from cloudtrain.cost.egress import Egress, egress
from cloudtrain.errors import CloudtrainError
from cloudtrain.progress import OnProgress
from cloudtrain.provider.backups import StoresBackups
from cloudtrain.provider.jobs import attached
from cloudtrain.resume import found, record
from cloudtrain.resume.copy import Copied, copy_newest
from cloudtrain.resume.record import Location

if TYPE_CHECKING:
    from cloudtrain.provider import Job
    from cloudtrain.submission import Submission
    from cloudtrain.sweep.submit import SweepSubmission

__all__ = [
    "Location",
    "Move",
    "Moved",
    "after_submit",
    "before_submit",
    "movable",
    "move_backup",
    "plan_move",
]


@dataclass(frozen=True)
class Move:
    """What resuming run ``run`` at ``destination`` would copy from ``source``, and its transfer charge."""

    run: str
    source: Location
    destination: Location
    slot: str
    epoch: int
    step: int
    size: int
    egress: Egress
    passed: tuple[str, ...]

    @property
    def usd(self) -> float:
        return self.egress.usd(self.size)

    def describe(self) -> str:
        """Two lines for ``plan``, ``cost`` and ``submit``: what moves, from where, and the charge."""
        passed = f"; passed over {'; '.join(self.passed)}" if self.passed else ""
        return (
            f"Resume: run {self.run}'s newest verified backup, {self.slot} (epoch {self.epoch}, step {self.step}), "
            f"is at {self.source.describe()}{passed}.\n"
            f"  {self.size:,} bytes to copy to {self.destination.describe()}; estimated transfer charge "
            f"${self.usd:.2f} at {self.egress.describe()}."
        )

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "usd": self.usd}


@dataclass(frozen=True)
class Moved:
    """A move done: the backup copied (``copied``), between which places, and its estimated charge."""

    source: Location
    destination: Location
    copied: Copied
    egress: Egress

    @property
    def usd(self) -> float:
        """The charge for the bytes that crossed now (a resumed copy skips what had arrived)."""
        return self.egress.usd(self.copied.sent)

    def started_from(self) -> dict[str, Any]:
        """The backup the next attempt starts from, as the lineage records it."""
        manifest = self.copied.manifest
        return {
            "uri": self.copied.source,
            "slot": manifest.slot,
            "epoch": manifest.epoch,
            "step": manifest.step,
            "written_by": {"provider": manifest.provider, "job": manifest.job, "attempt": manifest.attempt},
        }

    def copy(self) -> dict[str, Any]:
        """The copy, as the lineage records it: bytes, time and transfer charge."""
        return {
            "from": self.copied.source,
            "to": self.copied.destination,
            "bytes": self.copied.size,
            "bytes_sent": self.copied.sent,
            "seconds": round(self.copied.seconds, 3),
            "egress_usd": round(self.usd, 4),
            "egress_rate": self.egress.describe(),
            "passed_over": list(self.copied.passed),
        }


def plan_move(run: str, destination: Location, *, clients: Any = None) -> Move | None:
    """What resuming ``run`` at ``destination`` would copy; None when nothing needs to move.

    Nothing moves when this machine recorded no other place for the run (nothing is
    contacted then), when the destination already holds a backup of the run that
    verifies (the job resumes from it there), or when no place the run has been holds one.
    ``clients`` are the destination provider's. Only listings and manifests are read.

    Raises:
        ProviderError: a store could not be read (its reason kept).
    """
    sources = [place for place in reversed(record.places(run)) if place != destination]
    if not sources or any(
        candidate.usable for candidate in found.candidates(destination.store(clients), run)
    ):
        return None
    for source in sources:
        candidates = found.candidates(source.store(), run)
        usable = next((candidate for candidate in candidates if candidate.usable), None)
        if usable is not None and usable.manifest is not None:
            passed = tuple(f"{c.slot}: {c.problem}" for c in candidates[: candidates.index(usable)])
            rate = egress(source.storage, source.region, destination.storage, destination.region)
            manifest = usable.manifest
            return Move(
                run,
                source,
                destination,
                usable.slot,
                manifest.epoch,
                manifest.step,
                manifest.total_bytes,
                rate,
                passed,
            )
    return None


def move_note(run: str, destination: Location) -> str | None:
    """What a submit of ``run`` at ``destination`` would copy first and its charge; None when nothing moves.

    For ``plan`` and ``submit --dry-run``: only listings and manifests are read (and only
    for a run this machine saw elsewhere), and a store that cannot be read is a note, not an error.
    """
    try:
        move = plan_move(run, destination)
    except CloudtrainError as error:
        return f"Resume: could not look for run {run}'s backups: {error}"
    return move.describe() if move else None


def lineage(run: str) -> dict[str, Any] | None:
    """The run's lineage (``record``) where this machine last placed it; None when it has none or it cannot be read."""
    known = record.places(run)
    if not known:
        return None
    try:
        found_lineage = record.read_lineage(known[-1].store(), run)
    except CloudtrainError:
        return None
    return found_lineage if found_lineage["attempts"] else None


def describe_lineage(lineage: dict[str, Any]) -> list[str]:
    """One line per attempt: where it ran, on what, and where it started from (``status``)."""
    lines = [f"Lineage of run {lineage['run']}:"]
    for number, attempt in enumerate(lineage["attempts"], 1):
        where = f"{attempt['storage']}{' emulated here' if attempt['provider'] != attempt['storage'] else ''}"
        start = attempt.get("started_from")
        origin = f"from {start['slot']} (epoch {start['epoch']})" if start else "from its own backups, if any"
        copy = attempt.get("copy")
        moved = (
            f"; copied {copy['bytes']:,} bytes in {copy['seconds']} s, estimated ${copy['egress_usd']:.2f}"
            if copy
            else ""
        )
        lines.append(
            f"  {number}. {attempt['submitted_at']} {where} {attempt['region']} ({attempt['shape']}), "
            f"job {attempt['job']}, {origin}{moved}"
        )
    return lines


def move_backup(
    run: str,
    source: Location,
    destination: Location,
    progress: OnProgress | None = None,
    *,
    clients: Any = None,
) -> Moved:
    """Copy run ``run``'s newest verified backup from ``source`` to ``destination``, before a job starts there.

    The copy streams with bounded memory, checks every file's sha256 and size against
    the backup's manifest as it arrives, writes the manifest last, and resumes when run
    again after being cut short; the source is never changed. ``progress`` gets a
    ``cloudtrain.Progress`` (``step="copy"``) as bytes arrive. ``clients`` are the
    destination provider's.

    Raises:
        ProviderError: no backup of the run verifies at ``source``, the destination holds
            another run's, or a store refused (``CallError``, with its reason).
    """
    rate = egress(source.storage, source.region, destination.storage, destination.region)
    copied = copy_newest(run, source.store(), destination.store(clients), progress)
    return Moved(source, destination, copied, rate)


def before_submit(
    submission: Submission, *, clients: Any = None, progress: OnProgress | None = None
) -> Moved | None:
    """Bring the run's backup to where ``submission`` runs, when it has none there and another place has one."""
    destination = Location.of(submission.plan, submission.provider)
    assert submission.plan.run_id is not None  # prepare names every run
    planned = plan_move(submission.plan.run_id, destination, clients=clients)
    if planned is None:
        return None
    return move_backup(planned.run, planned.source, destination, progress, clients=clients)


def after_submit(submission: Submission, job: Job, moved: Moved | None, *, clients: Any = None) -> str | None:
    """Record the attempt in the run's lineage (at its new place) and this machine's index.

    The lineage goes on from the place the backup came from; a job an earlier submit
    made (attached, nothing new) adds no attempt. The job exists by now, so a lineage
    that cannot be written fails nothing: the reason is returned, for the caller to show.
    """
    run = submission.plan.run_id
    assert run is not None  # prepare names every run
    here = Location.of(submission.plan, submission.provider)
    record.remember(run, here)
    if attached(job):
        return None
    try:
        store = here.store(clients)
        lineage = record.read_lineage(moved.source.store() if moved else store, run)
        copy = moved.copy() if moved else None
        entry = record.attempt(
            submission.plan, here, job.id, started_from=moved and moved.started_from(), copy=copy
        )
        record.write_lineage(store, {**lineage, "attempts": [*lineage["attempts"], entry]})
    except CloudtrainError as error:
        return f"The run's lineage was not recorded at {here.run_uri}/{record.LINEAGE_FILE}: {error}"
    return None


def movable(submission: Submission | SweepSubmission) -> Submission | None:
    """``submission`` if its run can be recorded and moved: one job (not a sweep) on a provider that stores a run's files."""
    from cloudtrain.submission import Submission

    if isinstance(submission, Submission) and isinstance(submission.provider, StoresBackups):
        return submission
    return None
