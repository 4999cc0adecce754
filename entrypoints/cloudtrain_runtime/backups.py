"""A run's backup folder: whose backup it holds, whether the run already finished, and its end.

Every run has a backup folder of its own (``ROOT/runs/<run_id>/checkpoints``, see
``cloudtrain.planning.storage_paths``), so a backup found there was left by an earlier
attempt of the same run: a provider's restart, a spot reclaim, a resubmit after a failure
(SageMaker's ``-r2`` job, a new Vertex CustomJob), a pipeline step's retry. Next to
Keras's files the folder holds ``cloudtrain-backup.json`` (the stamp): the run, a
fingerprint of the runtime config's training section, one of the user's code (the
bundle's files, cloudtrain's runtime left out: ``bundle.code_digest``) and one of the
model's variables (path, shape and dtype of each). When training begins, every replica
reads the same files and reaches the same verdict; only the chief writes:

- ``fresh``: the folder holds no backup: training starts at epoch 1.
- ``resume``: this run's backup of this training section, code and model: training goes
  on after the last epoch it saved.
- ``mismatch``: this run's backup of another training section, code or model (the spec
  or the code changed under the same run id): one error naming what differs.
- ``foreign``: another run's backup, or one cloudtrain did not stamp: one error.

A run id is a promise: one training section, one code, one model. The same rule holds
for a run that finished (``Backups.finished``): an attempt of it with the same section and
code trains nothing, one with another is refused with the same line (``changed_run``),
never trained over the finished run's model. The local provider asks the same before it
starts anything (``cloudtrain.providers.local.promise``).

Beside the stamp the chief keeps the run's history (``cloudtrain-history.json``, see
``cloudtrain_runtime.history``): a folder holding only these two holds no backup.

Nothing is moved or deleted there but this run's own backup, after its verified export
(``complete``; the history with it, its copy beside the result being complete by then),
and not even that where the export is not yet durable when the runtime
ends (SageMaker uploads ``/opt/ml/model`` only when the job ends, and a deletion under the
synced checkpoint folder is a deletion in S3:
https://docs.aws.amazon.com/sagemaker/latest/dg/model-checkpoints.html).

The run is ``RuntimeConfig.run_id``, which every attempt of a run gets, else
``CLOUDTRAIN_RUN_ID``; started by hand with neither, the runtime adopts the run of a
backup it resumes. The completion marker (``cloudtrain-complete.json``, next to the
export) is written once the export was reloaded and answered; an attempt of a run the
marker says is complete trains nothing (``Backups.finished``).

Example:
>>> found = Stamp(run="a", config="c", model="m")
>>> verdict(found, Stamp(run="a", config="c", model="m"))
'resume'
>>> verdict(found, Stamp(run="b", config="c", model="m"))
'foreign'
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from cloudtrain_runtime import manifests
from cloudtrain_runtime.config import RuntimeConfig
from cloudtrain_runtime.errors import ConfigError
from cloudtrain_runtime.replica import HISTORY_FILE, PROGRESS_FILE

STAMP_FILE = "cloudtrain-backup.json"
# Beside Keras's files, never part of them: the stamp, the run's history (cloudtrain_runtime.history)
# and, where the results are copied out only at the end, the progress record (cloudtrain_runtime.progress)
# and the partial file it is written through.
OWN_FILES = (STAMP_FILE, HISTORY_FILE, PROGRESS_FILE, f"{PROGRESS_FILE}.partial")
RUN_ID_ENV = "CLOUDTRAIN_RUN_ID"
# Keras 3's files (keras/src/callbacks/backup_and_restore.py), in the folder it restores from
# when no backup has a manifest: the weights, and the epochs done.
LEGACY_WEIGHTS = "latest.weights.h5"
LEGACY_METADATA = "training_metadata.json"
# The fields that decide what is trained; paths, code bundle and machines do not.
TRAINING_FIELDS = (
    "name",
    "module",
    "script",
    "args",
    "epochs",
    "steps_per_epoch",
    "per_replica_batch",
    "replicas",
    "learning_rate",
    "base_learning_rate",
    "warmup_epochs",
    "mixed_precision",
    "strategy",
    "keras_backend",
    "layout_map",
    "model_parallel",
)
_NEW_RUN = "submit it as a new run (cloudtrain submit --new, or another --run-id)"
# What each fingerprint of a stamp covers, as ``changed_run`` names it.
_COVERS = {
    "config": "training settings",
    "code": "code",
    "model": "model (its variables' names, shapes or dtypes)",
}


class ResumePoint(NamedTuple):
    """Where a resumed attempt starts: ``epoch`` epochs done and ``batch`` batches of the next."""

    epoch: int
    batch: int


@dataclass(frozen=True)
class Stamp:
    """What a backup or a finished run belongs to: the run (None while unknown) and fingerprints.

    An empty fingerprint is unknown (the model before it is built, the code of a runtime
    started without a bundle, a stamp from before code was stamped) and never differs.
    """

    run: str | None
    config: str
    model: str
    code: str = ""


def run_id(config: RuntimeConfig, env: Mapping[str, str]) -> str | None:
    """The run this job belongs to: the config's, else ``CLOUDTRAIN_RUN_ID``; None when neither says."""
    return config.run_id or env.get(RUN_ID_ENV) or None


def config_fingerprint(config: RuntimeConfig) -> str:
    """A digest of the runtime config's training section, and of a sweep trial's values.

    Trials of one sweep may share a backup folder (a SageMaker tuning job has one
    CheckpointConfig for all its training jobs), so another trial's backup never resumes here.
    """
    values = dataclasses.asdict(config)
    trial = {"hparams": values["hparams"]} if values["hparams"] else {}
    return _digest({**{name: values[name] for name in TRAINING_FIELDS}, **trial})


def model_fingerprint(model: Any) -> str:
    """A digest of the model's variables: path (name on tf_keras), shape and dtype of each."""
    return _digest([_describe(weight) for weight in model.weights])


def _describe(weight: Any) -> list[Any]:
    dtype = getattr(weight.dtype, "name", weight.dtype)
    return [getattr(weight, "path", weight.name), [int(d) for d in weight.shape], str(dtype)]


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def verdict(found: Stamp | None, mine: Stamp) -> str:
    """``resume``, ``mismatch`` or ``foreign`` for a backup stamped ``found`` (see the module)."""
    if found is None or (mine.run is not None and found.run != mine.run):
        return "foreign"
    return "mismatch" if differences(found, mine) else "resume"


def differences(found: Stamp, mine: Stamp) -> list[str]:
    """What of ``mine`` differs from the run's ``found``: ``config``, ``code``, ``model`` (known on both sides).

    >>> differences(Stamp("r", "c", "m", "x"), Stamp("r", "c", "", "y"))
    ['code']
    """
    fields = ("config", "code", "model")
    return [
        f for f in fields if getattr(found, f) and getattr(mine, f) and getattr(found, f) != getattr(mine, f)
    ]


def changed_run(run: str | None, differs: list[str], found: str) -> str:
    """The one line for an attempt of run ``run`` whose ``differs`` are not the run's, ``found`` saying where.

    Every refusal of a changed run reads so, in the container and at a local submit.

    >>> changed_run("one-host", ["code"], "finished (its export is /o/model)").split(", so")[0]
    "Run 'one-host' finished (its export is /o/model) with other code"
    """
    what = " and ".join(_COVERS[name] for name in differs)
    return (
        f"Run {run!r} {found} with other {what}, so it was left as it is. Restore the code and spec "
        f"the run started with, or {_NEW_RUN}."
    )


@dataclass
class Backups:
    """The backup folder of one run, seen from one replica.

    Attributes:
        folder: the durable backup location (Keras's files live under it).
        marker: the completion marker next to the export.
        mine: this replica's stamp, its model fingerprint set when training begins.
        is_chief: only the chief writes.
        say: prints one log line (the chief's).
        keep: why the backup must outlive a verified export here; None: it is emptied then.
        provider: the environment that runs this replica, recorded in each backup's manifest.
        job: the provider's job, likewise.
        attempt: this attempt's number in the run's history, once it is known (None: not yet).
    """

    folder: Path
    marker: Path
    mine: Stamp
    is_chief: bool
    say: Callable[[str], None]
    keep: str | None = None
    provider: str = "unknown"
    job: str | None = None
    attempt: Callable[[], int | None] = lambda: None
    _chosen: list[Path | None] = dataclasses.field(default_factory=list, repr=False)

    def __repr__(self) -> str:
        return f"Backups(folder={str(self.folder)!r}, run={self.mine.run!r}, is_chief={self.is_chief})"

    @property
    def stamp_file(self) -> Path:
        return self.folder / STAMP_FILE

    def finished(self) -> dict[str, Any] | None:
        """The completion record when this run already ended with a verified export, else None.

        A provider may start a run again after it finished: Vertex restarts the whole job
        when a worker is lost after the chief's export. That attempt must train nothing.

        Raises:
            ConfigError: the run finished with another training section or code
                (``changed_run``); its export stays as it is.
        """
        record = _read_json(self.marker)
        if self.mine.run is None or record.get("run") != self.mine.run:
            return None
        if not (Path(str(record.get("export", ""))) / "saved_model.pb").is_file():
            return None
        found = stamp_of(record)
        differs = differences(found, self.mine) if found else []
        if differs:
            raise ConfigError(
                changed_run(self.mine.run, differs, f"finished (its export is {record['export']})")
            )
        return record

    def check_same_run(self) -> None:
        """Refuse an attempt whose training section or code is not its run's, before anything is built.

        The finished run's record (``finished``) and the backup's stamp are both asked;
        the model is compared once it is built (``begin``).

        Raises:
            ConfigError: one ``changed_run`` line. Nothing is moved or deleted.
        """
        self.finished()
        found = _read_stamp(self.stamp_file) if self._holds_backup() else None
        if found is not None and self.mine.run is not None and found.run == self.mine.run:
            self._refuse_changes(found, self.mine)

    def _refuse_changes(self, found: Stamp, mine: Stamp) -> None:
        differs = differences(found, mine)
        if differs:
            raise ConfigError(
                changed_run(mine.run or found.run, differs, f"has a backup in {str(self.folder)!r}")
            )

    def begin(self, model: Any) -> bool:
        """Decide what to do with the folder's backup; True when training resumes from it.

        Raises:
            ConfigError: the backup is another run's, or this run's of another training
                section, code or model. Nothing is moved or deleted.
        """
        mine = dataclasses.replace(self.mine, model=model_fingerprint(model))
        if not self._holds_backup():
            self._start(mine)
            return False
        found = _read_stamp(self.stamp_file)
        if verdict(found, mine) == "foreign":
            whose = f"run {found.run!r}" if found else "no run cloudtrain recorded"
            raise ConfigError(
                f"The backup in {str(self.folder)!r} belongs to {whose}, not to run {mine.run!r}, so it was "
                f"left as it is. Point this run at its own storage, or {_NEW_RUN}."
            )
        assert found is not None  # only a stamped backup resumes or mismatches
        self._refuse_changes(found, mine)
        self.mine = dataclasses.replace(mine, run=found.run)
        self.say(f"resuming from the backup in {self.folder} (run {found.run})")
        return True

    def restorable(self) -> Path | None:
        """The folder of the backup to restore: the newest that verifies (``manifests.choose``).

        None where the folder holds no numbered backup: then Keras restores what its own
        folder holds, a backup written before backups had manifests, with a warning.

        Raises:
            ConfigError: numbered backups are there but none verifies.
        """
        if not self._chosen:
            self._chosen.append(self._choose())
        return self._chosen[0]

    def _choose(self) -> Path | None:
        chosen = manifests.choose(self.folder, self.mine.run, self.say)
        if chosen is not None:
            return chosen[0]
        if any(self.folder.glob(f"*/{LEGACY_WEIGHTS}")):
            self.say(
                f"warning: the backup in {self.folder} has no manifest (it was written before backups were "
                "verified), so it is restored without checking its files"
            )
        return None

    def resumes_at(self) -> ResumePoint:
        """Where the backup a restore will load was taken (``ResumePoint(0, 0)``: none), known before the model is built.

        The input pipeline starts at its epoch (``data.start_at_epoch``) and a backup taken
        on the provider's notice, within an epoch, also names the batches of that epoch
        already trained (``callbacks.ChiefWritesBackup`` skips them). The same backup is
        restored later (``restorable`` decides once), so its files are checked once.
        """
        found = _read_stamp(self.stamp_file)
        if not self._holds_backup() or found is None or found.run != (self.mine.run or found.run):
            return ResumePoint(0, 0)  # nothing to restore, or another run's: ``begin`` says so later
        try:
            chosen = self.restorable()
        except ConfigError:
            return ResumePoint(0, 0)  # no backup verifies: the restore raises it, after the stamp was judged
        if chosen is not None:
            manifest = manifests.read(chosen)
            return ResumePoint(manifest.epoch, manifest.batch)
        folder = next((p.parent for p in self.folder.glob(f"*/{LEGACY_WEIGHTS}")), None)
        record = _read_json(folder / LEGACY_METADATA) if folder is not None else {}
        epoch = record.get("epoch", 0)
        return ResumePoint(epoch if isinstance(epoch, int) and epoch > 0 else 0, 0)

    def new_backup(self, epoch: int, batch: int) -> Path:
        """An empty folder for the backup after ``epoch`` epochs and ``batch`` batches (chief only)."""
        return manifests.new_slot(self.folder, epoch, batch)

    def commit(self, folder: Path, *, epoch: int, batch: int, step: int) -> None:
        """Commit the backup written to ``folder`` with its manifest, then drop all but the previous one (chief only)."""
        assert self.mine.run is not None  # settled by ``begin`` before the first backup
        origin = manifests.Origin(self.mine.run, self.job, self.attempt(), self.provider)
        manifests.commit(folder, origin, epoch=epoch, batch=batch, step=step)
        manifests.prune(self.folder)

    def _holds_backup(self) -> bool:
        return self.folder.is_dir() and any(p.name not in OWN_FILES for p in self.folder.iterdir())

    def _start(self, mine: Stamp) -> None:
        self.mine = dataclasses.replace(mine, run=mine.run or uuid.uuid4().hex)
        if self.is_chief:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.stamp_file.write_text(json.dumps(dataclasses.asdict(self.mine)) + "\n")

    def complete(self, export: Path) -> None:
        """Record the verified export in the marker, then empty the backup folder unless it is kept (chief only)."""
        if not self.is_chief:
            return
        record = {
            **dataclasses.asdict(self.mine),
            "export": str(export),
            "completed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        write_json(self.marker, record)
        if self.keep:
            self.say(f"keeping the backup in {self.folder}: {self.keep}")
        else:
            self.clear()

    def clear(self) -> None:
        """Empty this run's backup folder, the stamp last (chief only)."""
        if not (self.is_chief and self.folder.is_dir()):
            return
        for path in sorted(self.folder.iterdir(), key=lambda p: p.name == STAMP_FILE):
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


def write_json(path: Path, record: Mapping[str, Any]) -> None:
    """Write ``record`` to ``path`` whole: a reader sees the old file or the new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(record, indent=2) + "\n")
    partial.replace(path)


def _read_stamp(path: Path) -> Stamp | None:
    return stamp_of(_read_json(path))


def stamp_of(raw: Mapping[str, Any]) -> Stamp | None:
    """The stamp a backup's stamp file or a completion record holds; None when it holds none.

    A record without ``code`` (written before code was stamped) has it unknown.
    """
    names = [f.name for f in dataclasses.fields(Stamp)]
    found = {name: raw[name] for name in names if name in raw}
    if not {"run", "config", "model"} <= set(found) or not all(
        isinstance(found.get(name, ""), str) for name in ("config", "model", "code")
    ):
        return None
    return Stamp(**found)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return raw if isinstance(raw, dict) else {}
