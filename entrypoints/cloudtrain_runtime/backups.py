"""Which run a backup belongs to, what a new start does with one, and the completion marker.

Next to Keras's files the backup folder holds ``cloudtrain-backup.json`` (the stamp): the
run it belongs to, a fingerprint of the runtime config's training section, and one of the
model's variables (path, shape and dtype of each). When training begins, every replica
reads the same files and reaches the same verdict; only the chief acts on it:

- ``fresh``: the folder holds no backup.
- ``resume``: same run, same training section, same model: a restart or a spot reclaim.
- ``replace``: another run's backup (no stamp, another training section, another provider
  job, or a run the completion marker lists as finished): the chief moves it aside to
  ``<backup>.replaced-<UTC time>`` and the job starts at epoch 1.
- ``mismatch``: same run and training section, another model: one error naming the
  folder and the fix.

The run is the provider's job id where the environment names one (``RUN_ID_ENV``, read
in order), else the id the stamp recorded when the run started. The completion marker
(``cloudtrain-complete.json``, next to the export) is written once the export was
reloaded and answered; it names the run, the fingerprints and every run completed on
that export location. Then the chief empties the backup folder, all but the run's history
(``cloudtrain-history.json``, see ``cloudtrain_runtime.history``), which a restart after
the export still continues. A folder holding only a stamp and a history holds no backup.

Example:
>>> found = Stamp(run="a", config="c", model="m")
>>> verdict(found, Stamp(run=None, config="c", model="m"), completed=())
'resume'
>>> verdict(found, Stamp(run=None, config="c", model="m"), completed=("a",))
'replace'
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cloudtrain_runtime.config import RuntimeConfig
from cloudtrain_runtime.errors import ConfigError
from cloudtrain_runtime.replica import HISTORY_FILE

STAMP_FILE = "cloudtrain-backup.json"
# Beside Keras's files, never part of them: the stamp, and the run's history (cloudtrain_runtime.history).
OWN_FILES = (STAMP_FILE, HISTORY_FILE)
# Restarts of one job keep these; a new job gets a new value (local launcher, SageMaker, Vertex).
RUN_ID_ENV = ("CLOUDTRAIN_RUN_ID", "TRAINING_JOB_NAME", "CLOUD_ML_JOB_ID")
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
_COMPLETED_KEPT = 100


@dataclass(frozen=True)
class Stamp:
    """What a backup belongs to: the run (None while unknown) and two fingerprints."""

    run: str | None
    config: str
    model: str


def run_id(env: Mapping[str, str]) -> str | None:
    """The provider's id of this job, kept across its restarts; None where none is set."""
    return next((env[name] for name in RUN_ID_ENV if env.get(name)), None)


def config_fingerprint(config: RuntimeConfig) -> str:
    """A digest of the runtime config's training section."""
    values = dataclasses.asdict(config)
    return _digest({name: values[name] for name in TRAINING_FIELDS})


def model_fingerprint(model: Any) -> str:
    """A digest of the model's variables: path (name on tf_keras), shape and dtype of each."""
    return _digest([_describe(weight) for weight in model.weights])


def _describe(weight: Any) -> list[Any]:
    dtype = getattr(weight.dtype, "name", weight.dtype)
    return [getattr(weight, "path", weight.name), [int(d) for d in weight.shape], str(dtype)]


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def verdict(found: Stamp | None, mine: Stamp, *, completed: Iterable[str]) -> str:
    """``resume``, ``replace`` or ``mismatch`` for a backup stamped ``found`` (see the module)."""
    if found is None or found.config != mine.config or found.run in set(completed):
        return "replace"
    if mine.run is not None and found.run != mine.run:
        return "replace"
    return "resume" if found.model == mine.model else "mismatch"


@dataclass
class Backups:
    """The backup folder of one job, seen from one replica.

    Attributes:
        folder: the durable backup location (Keras's files live under it).
        marker: the completion marker next to the export.
        mine: this replica's stamp, its model fingerprint set when training begins.
        is_chief: only the chief writes.
        say: prints one log line (the chief's).
    """

    folder: Path
    marker: Path
    mine: Stamp
    is_chief: bool
    say: Callable[[str], None]

    def __repr__(self) -> str:
        return f"Backups(folder={str(self.folder)!r}, run={self.mine.run!r}, is_chief={self.is_chief})"

    @property
    def stamp_file(self) -> Path:
        return self.folder / STAMP_FILE

    def begin(self, model: Any) -> bool:
        """Decide what to do with the folder's backup; True when training resumes from it.

        Raises:
            ConfigError: when the backup is this run's but of another model.
        """
        mine = dataclasses.replace(self.mine, model=model_fingerprint(model))
        if not self._holds_backup():
            self._start(mine)
            return False
        found = _read_stamp(self.stamp_file)
        decided = verdict(found, mine, completed=self._completed())
        if decided == "mismatch":
            raise ConfigError(
                f"The backup in {str(self.folder)!r} belongs to this run but to another model "
                "(its variables' names, shapes or dtypes differ), so it cannot be restored. "
                "Restore the model code the run started with, or delete that folder to train from epoch 1."
            )
        if decided == "replace":
            self._replace(found)
            self._start(mine)
            return False
        assert found is not None  # only a stamped backup resumes
        self.mine = dataclasses.replace(mine, run=found.run)
        self.say(f"resuming from the backup in {self.folder} (run {found.run})")
        return True

    def _holds_backup(self) -> bool:
        return self.folder.is_dir() and any(p.name not in OWN_FILES for p in self.folder.iterdir())

    def _completed(self) -> list[str]:
        completed = _read_json(self.marker).get("completed_runs", [])
        return [run for run in completed if isinstance(run, str)]

    def _start(self, mine: Stamp) -> None:
        self.mine = dataclasses.replace(mine, run=mine.run or uuid.uuid4().hex)
        if self.is_chief:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.stamp_file.write_text(json.dumps(dataclasses.asdict(self.mine)) + "\n")

    def _replace(self, found: Stamp | None) -> None:
        whose = f"run {found.run}" if found else "no recorded run"
        if not self.is_chief:
            return
        # The stamp goes last: a replica reading meanwhile still sees another run's backup.
        aside = self.move_aside(sorted(self.folder.iterdir(), key=lambda p: p.name == STAMP_FILE))
        self.say(
            f"the backup in {self.folder} belongs to another run ({whose}); moved it to {aside}, starting at epoch 1"
        )

    def move_aside(self, paths: Iterable[Path]) -> Path:
        """Move ``paths`` (in the backup folder) to a new ``<backup>.replaced-<UTC time>`` folder: never delete another run's files."""
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        aside = self.folder.with_name(f"{self.folder.name}.replaced-{stamp}-{uuid.uuid4().hex[:6]}")
        aside.mkdir(parents=True, exist_ok=True)
        for path in paths:
            shutil.move(str(path), str(aside / path.name))
        return aside

    def complete(self, export: Path) -> None:
        """Record the verified export in the marker, then empty the backup folder (chief only)."""
        if not self.is_chief:
            return
        completed = [run for run in self._completed() if run != self.mine.run][-_COMPLETED_KEPT + 1 :]
        record = {
            **dataclasses.asdict(self.mine),
            "export": str(export),
            "completed_runs": [*completed, self.mine.run],
        }
        self.marker.parent.mkdir(parents=True, exist_ok=True)
        partial = self.marker.with_name(self.marker.name + ".partial")
        partial.write_text(json.dumps(record, indent=2) + "\n")
        partial.replace(self.marker)
        self.clear()

    def clear(self) -> None:
        """Empty the backup folder but for the run's history, the stamp last (chief only)."""
        if not (self.is_chief and self.folder.is_dir()):
            return
        kept = [p for p in self.folder.iterdir() if p.name != HISTORY_FILE]
        for path in sorted(kept, key=lambda p: p.name == STAMP_FILE):
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


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
