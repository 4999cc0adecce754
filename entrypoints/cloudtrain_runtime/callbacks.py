"""cloudtrain's Keras callbacks: progress lines, throughput, fault injection, backups, logs.

The callbacks are written once as plain mixins and combined with the ``Callback``
base class of whichever Keras runs (Keras 3, or tf_keras under
``TF_USE_LEGACY_KERAS=1``), because each Keras only drives its own callbacks.

Fault injection (used by the local provider's tests and demos):
``CLOUDTRAIN_FAULT=<task_type>:<index>@epoch:<n>`` makes that task SIGKILL itself at
the end of epoch n (1-based, after that epoch's backup was written);
``...@step:<n>`` after global step n; ``...@export`` once the export is written, before
it is checked (the backup is still there); ``spot@...`` kills every task at that point,
as a spot interruption does, and ``stop@...`` too, as a lost region does (the launcher
then restarts nothing); ``hang@step:<n>`` makes the last host's task stop making progress
after global step n (``cloudtrain_runtime.watchdog`` ends the attempt). The launcher sets it on the first attempt only.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from cloudtrain_runtime import rng
from cloudtrain_runtime.errors import ConfigError

if TYPE_CHECKING:
    from cloudtrain_runtime.backups import Backups
    from cloudtrain_runtime.history import Recorder

    # The mixins below meet their Keras base class (Callback, BackupAndRestore) only at run
    # time, in ``keras_callback`` and ``chief_writes_backup``; checked here against Any.
    _KerasBase = Any
else:
    _KerasBase = object

FAULT_ENV = "CLOUDTRAIN_FAULT"
WARMUP_STEPS = 50
# The files Keras 3's BackupAndRestore writes (keras/src/callbacks/backup_and_restore.py, keras 3.15).
WEIGHTS_FILE = "latest.weights.h5"
METADATA_FILE = "training_metadata.json"
_FAULT = re.compile(
    r"^(?:(chief|master|worker):(\d+)|(spot|stop|preempt|hang))@(?:(epoch|step):(\d+)|(export))$"
)


@dataclass(frozen=True)
class Fault:
    """A planned SIGKILL: which task, and at which epoch end, global step or ``export`` (at 0).

    ``spot`` and ``stop`` (task type ``None``) are every task at once: the provider
    reclaimed the machines, as a spot interruption does, or the region was lost.
    ``preempt`` is the provider's notice to one host (the last): SIGTERM, then SIGKILL
    ``notice_s`` later (the emulated provider's grace, ``CLOUDTRAIN_GRACE_S``).
    ``hang`` is one replica (the last host's) that stops making progress: it sleeps in the
    step's callback for ever, and the others wait for it in the next collective.
    """

    task_type: str | None
    task_index: int
    unit: str
    at: int
    notice_s: float | None = None
    hang: bool = False

    def hits(self, task_type: str, task_index: int, *, last_host: bool) -> bool:
        """Whether this fault strikes the task ``task_type:task_index``; a notice or a hang strikes the last host's."""
        if self.notice_s is not None or self.hang:
            return last_host
        return self.task_type is None or (self.task_type, self.task_index) == (task_type, task_index)


def parse_fault(text: str, grace_s: float = 30.0) -> Fault | None:
    """Parse ``CLOUDTRAIN_FAULT``; empty means no fault.

    Example:
    >>> parse_fault("worker:1@epoch:2")
    Fault(task_type='worker', task_index=1, unit='epoch', at=2, notice_s=None, hang=False)
    >>> parse_fault("chief:0@export")
    Fault(task_type='chief', task_index=0, unit='export', at=0, notice_s=None, hang=False)
    >>> parse_fault("spot@epoch:1")
    Fault(task_type=None, task_index=0, unit='epoch', at=1, notice_s=None, hang=False)
    >>> parse_fault("preempt@step:7", grace_s=120)
    Fault(task_type=None, task_index=0, unit='step', at=7, notice_s=120, hang=False)
    >>> parse_fault("hang@step:20")
    Fault(task_type=None, task_index=0, unit='step', at=20, notice_s=None, hang=True)
    """
    if not text:
        return None
    match = _FAULT.match(text.strip())
    if not match:
        raise ConfigError(
            f"{FAULT_ENV} must look like worker:1@epoch:2, chief:0@step:10, chief:0@export "
            f"spot@epoch:2, stop@epoch:2, preempt@step:7 or hang@step:20. Received: {text!r}"
        )
    task_type, index, everyone, unit, at, export = match.groups()
    notice_s = grace_s if everyone == "preempt" else None
    hang = everyone == "hang"
    return Fault(task_type, int(index or 0), unit or export, int(at or 0), notice_s, hang)


def kill_self() -> None:
    """Die as a preempted VM does: no cleanup, no exit handlers."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)


class FaultInjector(_KerasBase):
    """SIGKILLs this task at the planned epoch end or global step (a ``preempt`` fault: gives the notice; ``hang``: hangs).

    With several steps per execution the step hooks run once per execution, so a step
    fault fires at the end of the execution that reaches the planned step.
    """

    def __init__(self, fault: Fault) -> None:
        super().__init__()
        self.fault = fault
        self._noticed = False  # a notice is given once

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        if self.fault.unit == "epoch" and epoch + 1 == self.fault.at:
            self._strike()

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        if self.fault.unit == "step" and int(self.model.optimizer.iterations.numpy()) >= self.fault.at:
            self._strike()

    def _strike(self) -> None:
        if self.fault.hang:
            threading.Event().wait()  # no progress, ever: the hang watchdog ends the process
        elif self.fault.notice_s is None:
            kill_self()
        elif not self._noticed:
            self._noticed = True
            notify_self(self.fault.notice_s)


def notify_self(grace_s: float) -> None:
    """Give this process the provider's notice: SIGTERM now, SIGKILL ``grace_s`` later, as a provider does."""
    timer = threading.Timer(grace_s, kill_self)
    timer.daemon = True
    timer.start()
    os.kill(os.getpid(), signal.SIGTERM)


class Progress:
    """Records the epoch this attempt resumed from; prints one line per epoch when ``say`` is given.

    The run's history, over every attempt, is ``EpochHistory``'s.
    """

    def __init__(self, epochs: int, say: Callable[[str], None] | None) -> None:
        super().__init__()
        self.epochs, self.say = epochs, say
        self.resumed_from_epoch: int | None = None

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        if self.resumed_from_epoch is None:
            self.resumed_from_epoch = epoch

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        if self.resumed_from_epoch is None:  # restored after the last epoch: nothing left to train
            self.resumed_from_epoch = self.epochs

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        if self.say:
            values = {name: float(value) for name, value in (logs or {}).items() if _is_number(value)}
            metrics = " ".join(f"{name}={value:.4f}" for name, value in values.items())
            self.say(f"epoch {epoch + 1}/{self.epochs} {metrics}")


class Throughput(_KerasBase):
    """Examples per second over whole epochs, once the first epoch and 50 steps are done.

    The first epoch traces and compiles the step functions, and input pipelines fill
    their buffers, so those steps would understate steady-state speed. A short run whose
    epochs after the first start before 50 steps (the new project's 5 epochs of 8 steps)
    is still timed over every epoch after the first, and says so (``steady`` false, the
    note): a real measurement after a shorter warm-up, which ``cloudtrain cost`` can use.
    Only a run of one epoch has nothing timed, and its note says how to get a figure.

    Steps are the optimizer's own count (``optimizer.iterations``), read when an epoch
    begins and when its training ends (``on_test_begin`` before validation, else
    ``on_epoch_end``): with ``steps_per_execution`` above 1 Keras calls the batch hooks
    once per execution, and its last execution may run fewer steps than it announces,
    so counting hook calls would be wrong. Reading the variable waits for the step that
    wrote it, so the time is the device's too. No batch hook: nothing runs per step.
    A step the fp16 loss scaler skips (non-finite gradients) is not counted.
    """

    def __init__(
        self,
        global_batch: int,
        warmup_steps: int = WARMUP_STEPS,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        """``clock`` is wall time; benchmarks/entrypoint_overhead.py also passes ``time.process_time``."""
        super().__init__()
        self.global_batch, self.warmup, self.clock = global_batch, warmup_steps, clock
        self.steps = 0
        self.measured = 0
        self.seconds = 0.0
        self.early = _Timed()  # every epoch after the first, warmed up or not
        self.first_epoch: int | None = None
        self._epoch: tuple[int, int, float] | None = None  # epoch, optimizer step, time at its start

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self.first_epoch = epoch if self.first_epoch is None else self.first_epoch
        self._epoch = (epoch, self._optimizer_steps(), self.clock())

    def on_test_begin(self, logs: dict[str, Any] | None = None) -> None:
        self._training_ended()

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self._training_ended()

    def _training_ended(self) -> None:
        if self._epoch is None:  # validation already ended this epoch's training, or evaluate() alone
            return
        (epoch, start_steps, started), self._epoch = self._epoch, None
        ran, seconds = self._optimizer_steps() - start_steps, self.clock() - started
        if epoch > (self.first_epoch or 0):
            self.early.add(ran, seconds)
            if self.steps >= self.warmup:
                self.measured += ran
                self.seconds += seconds
        self.steps += ran

    def _optimizer_steps(self) -> int:
        return int(self.model.optimizer.iterations.numpy())

    def result(self) -> dict[str, Any]:
        """The measurement as JSON-ready data; ``examples_per_sec`` is None only when one epoch ran.

        ``steady``: the timed epochs all began after the full warm-up; false when the run
        was too short for that and every epoch after the first was timed instead.
        """
        steady = self.measured > 0 and self.seconds > 0
        steps, seconds = (self.measured, self.seconds) if steady else (self.early.steps, self.early.seconds)
        examples = steps * self.global_batch
        rate = examples / seconds if steps and seconds else None
        return {
            "examples_per_sec": rate,
            "measured_steps": steps,
            "measured_examples": examples,
            "measured_seconds": seconds,
            "warmup_steps": self.steps - steps,
            "global_batch": self.global_batch,
            "steady": steady,
            "note": None if steady else self._why_not_steady(rate),
        }

    def _why_not_steady(self, rate: float | None) -> str:
        if rate is None:
            return (
                "nothing timed: only one epoch ran, and the first epoch (tracing, compiling, filling "
                "buffers) is never timed. Train 2 epochs or more for a measured speed."
            )
        return (
            f"timed over every epoch after the first, after a warm-up of {self.steps - self.early.steps} "
            f"steps instead of {self.warmup}: the run was too short for more. A longer run gives a "
            "steadier figure."
        )


@dataclass
class _Timed:
    """Optimizer steps and the seconds they took, summed over the epochs timed."""

    steps: int = 0
    seconds: float = 0.0

    def add(self, steps: int, seconds: float) -> None:
        self.steps += steps
        self.seconds += seconds


class EpochHistory(_KerasBase):
    """The chief's side of the run's history (``cloudtrain_runtime.history``): one record per epoch.

    It comes before the backup callback, so an epoch's record is written before its backup
    (a kill between the two makes the restart train that epoch again, and replace its
    record). The attempt joins the history at its first epoch, once the backup callback has
    restored what it resumes from, or when training ends with nothing left to train.

    ``run`` gives the run the backup verdict settled on and ``job`` the provider's job;
    ``meter`` is the attempt's ``Throughput``, whose measurement is kept with each record.
    """

    def __init__(
        self, recorder: Recorder, run: Callable[[], str], job: str | None, meter: Throughput
    ) -> None:
        super().__init__()
        self.recorder, self.run, self.job, self.meter = recorder, run, job, meter
        self._epoch: tuple[int, float] | None = None  # optimizer step and time at its start

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        if self.recorder.history is None:
            self.recorder.begin(self.run(), self.job, resumed_from=epoch)
        self._epoch = (int(self.model.optimizer.iterations.numpy()), time.perf_counter())

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        assert self._epoch is not None, "Keras begins every epoch it ends"
        steps, started = self._epoch
        ran = int(self.model.optimizer.iterations.numpy()) - steps
        self.recorder.throughput(self.meter.result())
        metrics = {name: float(value) for name, value in (logs or {}).items() if _is_number(value)}
        self.recorder.epoch(epoch + 1, metrics, epoch_s=time.perf_counter() - started, steps=ran)

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        if self.recorder.history is None:  # restored after the last epoch: nothing left to train
            self.recorder.begin(self.run(), self.job, resumed_from=self.recorder.epochs_planned)


class EpochSummaries(_KerasBase):
    """Keras 3's TensorBoard, doing per-step work only at the ``update_freq`` asked for.

    Keras 3.15 calls ``tf.summary.scalar`` for every metric after every step even with
    ``update_freq="epoch"``, where no writer records them (about 35 us a call, 8% of a
    small model's step on CPU). Here the batch hooks run only for a step that writes
    (every ``update_freq`` steps), a profiled step or ``write_steps_per_second``; the
    train graph is written at the first epoch's end instead of the first step's.
    """

    _should_write_train_graph: bool  # set by Keras's TensorBoard.set_model

    def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        if self.update_freq != "epoch" or self._should_trace or self.write_steps_per_second:
            super().on_train_batch_begin(batch, logs)

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        if self._should_trace or self.write_steps_per_second or self._writes_this_step():
            super().on_train_batch_end(batch, logs)

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        if self._should_write_train_graph:
            self._write_keras_model_train_graph()
            self._should_write_train_graph = False
        super().on_epoch_end(epoch, logs)

    def _writes_this_step(self) -> bool:
        return self.update_freq != "epoch" and self._global_train_batch % self.update_freq == 0


def tensorboard(keras: ModuleType, log_dir: str, **options: Any) -> Any:
    """This Keras's TensorBoard callback; on Keras 3 one that skips per-step work (``EpochSummaries``).

    tf_keras already skips its batch hooks when nothing is written per step.
    """
    if not hasattr(keras, "ops"):
        return keras.callbacks.TensorBoard(log_dir=log_dir, **options)
    cls = type("TensorBoard", (EpochSummaries, keras.callbacks.TensorBoard), {})
    return cls(log_dir=log_dir, **options)


class StampedBackup(_KerasBase):
    """A BackupAndRestore that restores only this run's backup and keeps it after training.

    ``backups.begin`` decides, when training begins, whether the folder's backup is this
    run's (see ``cloudtrain_runtime.backups``). The backup outlives ``fit``: the chief
    empties it only once the export is written, reloaded and checked, so a kill during
    the export restarts at the export, not at epoch 1. tf_keras sets up its training
    state in ``on_train_begin``, so it always runs; Keras 3's only restores (below).
    """

    backups: Backups

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        self.backups.begin(self.model)
        super().on_train_begin(logs)


class ChiefWritesBackup(StampedBackup):
    """BackupAndRestore for several workers on Keras 3: the chief writes verified backups, every task restores.

    Keras 3's callback has no multi-worker logic: every task would write the same HDF5
    file. Weights are identical on every replica after each synchronous step, so one
    copy is enough, and when every task restores the same files every task resumes at
    the same epoch (per-task copies can disagree when a kill lands between two tasks'
    writes, and the restarted collective would hang).

    Each backup goes to a folder of its own, committed by a manifest written last
    (``cloudtrain_runtime.manifests``); the chief keeps the previous one, which every
    task restores when the newest does not verify. Keras's own ``double_checkpoint`` is
    off: it keeps an unverified copy and falls back to it only when loading raises.

    On JAX, saving gathers the sharded weights with a collective every process must
    join, so the other tasks save too, into ``scratch`` (their own folder, never read).
    """

    def __init__(self, backup_dir: str, is_chief: bool, scratch: str | None) -> None:
        super().__init__(backup_dir=backup_dir, delete_checkpoint=False)
        self.is_chief, self.scratch = is_chief, scratch

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        # Another run's backup may still be on disk while the chief moves it aside.
        if self.backups.begin(self.model):
            chosen = self.backups.restorable()
            if chosen is not None:
                self._write_to(chosen)
            super(StampedBackup, self).on_train_begin(logs)
            if chosen is not None:
                rng.restore(self.model, chosen / rng.RNG_FILE)
                skip_seen_batches(self.model, self.backups.resumes_at().batch)

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        # Keras counts epochs done only at epoch ends, from 0 in each ``fit``: a resumed one too.
        self._current_epoch = epoch

    def save_within_epoch(self, batches: int) -> None:
        """Back up now, ``batches`` batches into the current epoch (the provider's notice came)."""
        self._last_batch_seen = batches
        self._save_model()

    def _write_to(self, folder: Path) -> None:
        """Point Keras's backup paths at ``folder`` (its file names, another folder)."""
        self.backup_dir = str(folder)
        self._weights_path = str(folder / WEIGHTS_FILE)
        self._training_metadata_path = str(folder / METADATA_FILE)

    def _save_model(self) -> None:
        if self.is_chief:
            epoch, batch = self._current_epoch, self._last_batch_seen
            self._write_to(self.backups.new_backup(epoch, batch))
            super()._save_model()
            rng.save(self.model, Path(self.backup_dir) / rng.RNG_FILE)
            step = int(self.model.optimizer.iterations.numpy())
            self.backups.commit(Path(self.backup_dir), epoch=epoch, batch=batch, step=step)
        elif self.scratch is not None:
            os.makedirs(self.scratch, exist_ok=True)
            self.model.save_weights(os.path.join(self.scratch, WEIGHTS_FILE), overwrite=True)

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        super().on_train_end(logs)
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)


def skip_seen_batches(model: Any, batches: int) -> None:
    """Make the first ``batches`` steps of ``fit`` read their batches and train on none.

    A backup taken within an epoch (on the provider's notice) resumes at its epoch's
    start, as Keras counts, with the optimizer's step already past those batches: each
    skipped step draws its batches from the input, so the next real step reads the batch
    an uninterrupted run would, and leaves weights, optimizer and metrics as they are.
    """
    if batches <= 0:
        return
    train = model.train_function
    per_call = int(getattr(model, "steps_per_execution", 1) or 1)
    left = [batches]

    def train_or_skip(iterator: Any) -> Any:
        if left[0] <= 0:
            return train(iterator)
        for _ in range(per_call):
            next(iterator)
        left[0] -= per_call
        return {}

    model.train_function = train_or_skip


def chief_writes_backup(
    keras: ModuleType, backup_dir: str, is_chief: bool, scratch: str | None, backups: Backups
) -> Any:
    """A ``ChiefWritesBackup`` that is also this Keras's ``BackupAndRestore``."""
    cls = type("ChiefWritesBackup", (ChiefWritesBackup, keras.callbacks.BackupAndRestore), {})
    callback = cls(backup_dir, is_chief, scratch)
    callback.backups = backups
    return callback


def stamped_backup(keras: ModuleType, backup_dir: str, backups: Backups) -> Any:
    """tf_keras's own multi-worker ``BackupAndRestore``, stamped and kept after ``fit``."""
    cls = type("BackupAndRestore", (StampedBackup, keras.callbacks.BackupAndRestore), {})
    callback = cls(backup_dir=backup_dir, delete_checkpoint=False)
    callback.backups = backups
    return callback


def keras_callback(keras: ModuleType, mixin: type, *args: Any) -> Any:
    """An instance of ``mixin`` that is also this Keras's ``Callback``."""
    cls = type(mixin.__name__, (mixin, keras.callbacks.Callback), {})
    return cls(*args)


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True
