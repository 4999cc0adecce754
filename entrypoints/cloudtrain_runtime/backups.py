"""A run's backup folder: whose backup it holds, whether the run already finished, and its end.

Every run has a backup folder of its own (``ROOT/runs/<run_id>/checkpoints``, see
``cloudtrain.planning.storage_paths``), so a backup found there was left by an earlier
attempt of the same run: a provider's restart, a spot reclaim, a resubmit after a failure
(SageMaker's ``-r2`` job, a new Vertex CustomJob), a pipeline step's retry. Next to
Keras's files the folder holds ``cloudtrain-backup.json`` (the stamp): the run, a
fingerprint of the runtime config's training section, and one of the model's variables
(path, shape and dtype of each). When training begins, every replica reads the same
files and reaches the same verdict; only the chief writes:

- ``fresh``: the folder holds no backup: training starts at epoch 1.
- ``resume``: this run's backup of this training section and model: training goes on
  after the last epoch it saved.
- ``mismatch``: this run's backup of another training section or model (the spec or the
  code changed under the same run id): one error naming the folder and the fix.
- ``foreign``: another run's backup, or one cloudtrain did not stamp: one error.

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
from typing import Any

from cloudtrain_runtime import manifests
from cloudtrain_runtime.config import RuntimeConfig
from cloudtrain_runtime.errors import ConfigError
from cloudtrain_runtime.replica import HISTORY_FILE

STAMP_FILE = "cloudtrain-backup.json"
# Beside Keras's files, never part of them: the stamp, and the run's history (cloudtrain_runtime.history).
OWN_FILES = (STAMP_FILE, HISTORY_FILE)
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


@dataclass(frozen=True)
class Stamp:
    """What a backup belongs to: the run (None while unknown) and two fingerprints."""

    run: str | None
    config: str
    model: str


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
    return "resume" if (found.config, found.model) == (mine.config, mine.model) else "mismatch"


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
        """
        record = _read_json(self.marker)
        if (
            self.mine.run is None
            or record.get("run") != self.mine.run
            or record.get("config") != self.mine.config
        ):
            return None
        return record if (Path(str(record.get("export", ""))) / "saved_model.pb").is_file() else None

    def begin(self, model: Any) -> bool:
        """Decide what to do with the folder's backup; True when training resumes from it.

        Raises:
            ConfigError: the backup is another run's, or this run's of another model or
                training section. Nothing is moved or deleted.
        """
        mine = dataclasses.replace(self.mine, model=model_fingerprint(model))
        if not self._holds_backup():
            self._start(mine)
            return False
        found = _read_stamp(self.stamp_file)
        decided = verdict(found, mine)
        if decided == "foreign":
            whose = f"run {found.run!r}" if found else "no run cloudtrain recorded"
            raise ConfigError(
                f"The backup in {str(self.folder)!r} belongs to {whose}, not to run {mine.run!r}, so it was "
                f"left as it is. Point this run at its own storage, or {_NEW_RUN}."
            )
        if decided == "mismatch":
            raise ConfigError(
                f"The backup in {str(self.folder)!r} belongs to this run but to another model or training "
                "section (its variables' names, shapes or dtypes, or the epochs, batch, learning rate or "
                "strategy differ), so it cannot be restored and was left as it is. Restore the code and spec "
                f"the run started with to resume it, or {_NEW_RUN}."
            )
        assert found is not None  # only a stamped backup resumes
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

    def resumes_at(self) -> int:
        """The epochs done by the backup a restore will load (0: none), known before the model is built.

        The input pipeline starts there (``data.start_at_epoch``). The same backup is
        restored later (``restorable`` decides once), so its files are checked once.
        """
        found = _read_stamp(self.stamp_file)
        if not self._holds_backup() or found is None or found.run != (self.mine.run or found.run):
            return 0  # nothing to restore, or another run's: ``begin`` says so, once the model exists
        try:
            chosen = self.restorable()
        except ConfigError:
            return 0  # no backup verifies: the restore raises it, after the stamp was judged
        folder = chosen or next((p.parent for p in self.folder.glob(f"*/{LEGACY_WEIGHTS}")), None)
        record = _read_json(folder / LEGACY_METADATA) if folder is not None else {}
        epoch = record.get("epoch", 0)
        return epoch if isinstance(epoch, int) and epoch > 0 else 0

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
    raw = _read_json(path)
    fields = {f.name for f in dataclasses.fields(Stamp)}
    if set(raw) != fields or not all(isinstance(raw[k], str) for k in ("config", "model")):
        return None
    return Stamp(**raw)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return raw if isinstance(raw, dict) else {}
