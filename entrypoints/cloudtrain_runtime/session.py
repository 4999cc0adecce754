"""A started training process: cluster, strategy, Keras, locations, callbacks and export.

``start`` does the part every job shares, in the order TensorFlow and JAX require:
devices before any op, the strategy before any other op, then Keras, the
multi-worker fit fix, precision and seed. The managed runner and user scripts
(through ``cloudtrain_runtime.setup()``) then train with the same ``Session``.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import os
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from cloudtrain_runtime import backups as backups_lib
from cloudtrain_runtime import (
    bundle,
    data,
    device_check,
    devices,
    environments,
    export,
    hparams,
    keras_compat,
    latest,
    profiling,
    schedule,
    strategy,
    tracking,
    tuning,
    watchdog,
)
from cloudtrain_runtime import callbacks as cb
from cloudtrain_runtime import history as history_lib
from cloudtrain_runtime import notice as notice_lib
from cloudtrain_runtime import progress as progress_lib
from cloudtrain_runtime.cluster import ClusterInfo
from cloudtrain_runtime.config import AUTO, OFF, RuntimeConfig
from cloudtrain_runtime.errors import UserCodeError
from cloudtrain_runtime.locations import Locations
from cloudtrain_runtime.paths import scratch_dir, under_root

# Every task gets the same seed, so replicas initialise alike and shuffle alike
# before DATA sharding splits the stream.
SEED = 0
_PRECISION = {"bf16": "mixed_bfloat16", "fp16": "mixed_float16"}


@dataclass
class Session:
    """Everything a training process needs, once the strategy exists.

    Attributes:
        config: the runtime configuration.
        cluster: this replica's place in the job.
        locations: where to read and write.
        root: the CLOUDTRAIN_ROOT every fixed path lives under.
        tf: the tensorflow module.
        keras: Keras 3, or tf_keras under TF_USE_LEGACY_KERAS=1.
        strategy: the tf.distribute strategy, or the keras.distribution on JAX.
        choice: the strategy's name and why.
        say: prints one line, on the chief only.
        fixes: multi-worker fit fixes applied to this Keras.
        speed: the speed switches as resolved so far, by name (``cloudtrain_runtime.tuning``).
        started: when this process's session started (Unix seconds): the attempt's start in
            the run's history (``cloudtrain_runtime.history``).
    """

    config: RuntimeConfig
    cluster: ClusterInfo
    locations: Locations
    root: str
    tf: ModuleType
    keras: ModuleType
    strategy: Any
    choice: strategy.Choice
    say: Callable[[str], None]
    fixes: list[str] = field(default_factory=list)
    result: dict[str, Any] | None = None
    final_scores: dict[str, float] = field(default_factory=dict)
    speed: dict[str, tuning.Setting] = field(default_factory=dict)
    started: float = field(default_factory=time.time)

    def __repr__(self) -> str:
        return (
            f"Session(strategy={self.choice.name!r}, replicas={self.replicas}, "
            f"global_batch={self.global_batch}, task={self.cluster.task_id!r}, is_chief={self.is_chief})"
        )

    @property
    def legacy(self) -> bool:
        return not hasattr(self.keras, "ops")

    @property
    def on_jax(self) -> bool:
        return self.config.keras_backend == "jax"

    @property
    def keras_name(self) -> str:
        """``keras`` (Keras 3 on TensorFlow), ``tf_keras`` or ``jax``: what the speed switches depend on."""
        return "jax" if self.on_jax else "tf_keras" if self.legacy else "keras"

    @property
    def replicas(self) -> int:
        return self.config.replicas

    @property
    def per_replica_batch(self) -> int:
        return self.config.per_replica_batch

    @property
    def global_batch(self) -> int:
        return self.config.global_batch

    @property
    def is_chief(self) -> bool:
        return self.cluster.is_chief

    def scope(self) -> contextlib.AbstractContextManager[Any]:
        """Build the model, optimizer and metrics inside this (keras.distribution needs none)."""
        return contextlib.nullcontext() if self.on_jax else self.strategy.scope()

    @functools.cached_property
    def progress(self) -> Any:
        return cb.keras_callback(
            self.keras, cb.Progress, self.config.epochs, self.say if self.is_chief else None
        )

    @functools.cached_property
    def throughput(self) -> Any:
        return cb.keras_callback(self.keras, cb.Throughput, self.global_batch)

    @functools.cached_property
    def history(self) -> history_lib.Recorder:
        """The run's per-epoch history, over every attempt (``cloudtrain_runtime.history``); the chief writes it."""
        return history_lib.Recorder(
            durable=self.locations.durable_history_file,
            published=self.locations.history_file,
            started_at=self.started,
            epochs_planned=self.config.epochs,
            replicas=self.replicas,
            global_batch=self.global_batch,
            clock=time.time,
        )

    @functools.cached_property
    def callbacks(self) -> list[Any]:
        """The hang watchdog, throughput, the history, backup, save on notice, progress (lines; the chief's record), MLflow, a sweep's objective, TensorBoard, the profiler, a fault.

        The history, MLflow, the objective, TensorBoard and the profiler are the chief's.

        Throughput ends its epoch before the history records it; the history is written
        before the backup (``callbacks.EpochHistory``); MLflow gets the epoch after its
        backup (``cloudtrain_runtime.tracking``); the fault comes last so the epoch's
        backup is on disk before the task dies.
        """
        found = [*self.hang_watchdog(), self.throughput]
        if self.is_chief:
            job = history_lib.identity(self.config, os.environ).job
            found.append(
                cb.keras_callback(self.keras, cb.EpochHistory, self.history, self._run, job, self.throughput)
            )
        backup = self.backup_callback()
        found += [backup, self.save_on_notice(backup), self.progress]
        if self.is_chief:
            found.append(self.report_progress())
        if self.tracker is not None:
            recorder = self.history
            found.append(
                cb.keras_callback(self.keras, tracking.LogEpochs, self.tracker, lambda: recorder.history)
            )
        if self.is_chief and self.config.objective:
            found.append(self._objective_report(self.config.objective))
        if self.is_chief and self._tensorboard_installed():
            found.append(cb.tensorboard(self.keras, str(self.locations.tensorboard)))
        profiler = self.profiler()
        if profiler is not None:
            found.append(cb.keras_callback(self.keras, profiling.ProfileSteps, profiler))
        if self.fault and self.fault.unit != "export":
            found.append(cb.keras_callback(self.keras, cb.FaultInjector, self.fault))
        return found

    def report_progress(self) -> Any:
        """The chief's progress record beside the history, for ``status`` (``cloudtrain_runtime.progress``)."""
        writer = progress_lib.Writer(self.locations.progress_file, self.say)
        return cb.keras_callback(
            self.keras,
            progress_lib.ReportProgress,
            writer,
            self.config.epochs,
            self.global_batch,
            self._attempt_number,
        )

    @functools.cached_property
    def hang_watch(self) -> watchdog.Watch | None:
        """What the hang watchdog watches (``cloudtrain_runtime.watchdog``); None under ``hang_timeout: off``."""
        floor = self.config.hang_timeout
        return None if floor == OFF else watchdog.Watch(float(floor))

    def hang_watchdog(self) -> list[Any]:
        """The hang watchdog, first so every step's callbacks are watched; none when off."""
        if self.hang_watch is None:
            return []
        replica = f"{self.cluster.task_type}:{self.cluster.task_index}"
        return [cb.keras_callback(self.keras, watchdog.HangWatchdog, self.hang_watch, replica)]

    @functools.cached_property
    def tracker(self) -> tracking.Tracker | None:
        """The chief's MLflow run of this cloudtrain run (``tracking:``); None elsewhere or untracked.

        A sweep's trial logs to a run of its own (``environments.trial_of``), not to the sweep's.
        """
        config = self.config
        if not (self.is_chief and config.tracking_uri and config.tracking_experiment):
            return None
        run = self._run()
        trial = environments.trial_of(run, os.environ, self.cluster.provider) if config.hparams else None
        return tracking.Tracker(
            uri=config.tracking_uri,
            experiment=config.tracking_experiment,
            run=trial.run if trial else run,
            tags=config.tracking_tags,
            log_model=config.log_model,
            trial=trial.trial if trial else None,
            values=config.hparams if trial else None,
            env=os.environ,
            say=self.say,
        )

    @functools.cached_property
    def notice(self) -> notice_lib.Notice:
        """The provider's notice (SIGTERM), with the part of its grace period this replica may use."""
        return notice_lib.Notice(self._grace_s * notice_lib.BUDGET_SHARE, self.say)

    @property
    def _grace_s(self) -> float:
        fixed = environments.named(self.cluster.provider).grace_s
        return notice_lib.grace_s(os.environ, fixed)

    def save_on_notice(self, backup: Any) -> Any:
        """The callback that backs up the step every replica agrees on after a notice, then ends with exit 75.

        Keras 3 on TensorFlow writes that step's backup (``ChiefWritesBackup``); on JAX
        and tf_keras the run resumes from its last epoch's backup (``notice.STEP_BACKUP_REFUSED``).
        """
        steps = not (self.on_jax or self.legacy)
        save = watchdog.unwatched(self.hang_watch, backup.save_within_epoch) if steps else None
        agreement = notice_lib.Agreement(self.tf if steps else None, self.strategy, self.cluster.num_hosts)
        return cb.keras_callback(
            self.keras, notice_lib.SaveOnNotice, self.notice, agreement, save, self.say, self.keras_name
        )

    def profiler(self, window: profiling.Window | None = None) -> profiling.StepProfiler | None:
        """The chief's profiler of ``window``, by default the steps ``CLOUDTRAIN_TRACE_STEPS`` asks for; None: off."""
        window = window or profiling.requested(os.environ)
        if window is None or not self.is_chief:
            return None
        start, stop = profiling.tracer(self.tf, self.config.keras_backend)
        return profiling.StepProfiler(window, self.locations.tensorboard, start, stop, self.say)

    def _run(self) -> str:
        """The run the backup verdict settled on: the environment's, the stamp's, or a new one.

        A ``fit`` without the backup callback (a script's own list) never asks the backup:
        then the history is this process's alone.
        """
        return self.backups.mine.run or self._unstamped_run

    @functools.cached_property
    def _unstamped_run(self) -> str:
        return f"unstamped-{uuid.uuid4().hex}"

    @functools.cached_property
    def fault(self) -> cb.Fault | None:
        """The fault planned for this task (``CLOUDTRAIN_FAULT``), if any."""
        fault = cb.parse_fault(os.environ.get(cb.FAULT_ENV, ""), self._grace_s)
        if fault is None:
            return None
        last_host = self.cluster.rank == self.cluster.num_hosts - 1
        return (
            fault
            if fault.hits(self.cluster.task_type, self.cluster.task_index, last_host=last_host)
            else None
        )

    @functools.cached_property
    def backups(self) -> backups_lib.Backups:
        """This run's backup folder: whose backup it holds, and the completion marker."""
        identity = history_lib.identity(self.config, os.environ)
        mine = backups_lib.Stamp(
            run=identity.run,
            config=backups_lib.config_fingerprint(self.config),
            model="",
            code=self._code,
        )
        return backups_lib.Backups(
            self.locations.backup,
            self.locations.completion_file,
            mine,
            self.is_chief,
            self.say,
            keep=self.locations.keep_backups,
            provider=self.cluster.provider,
            job=identity.job,
            attempt=self._attempt_number,
        )

    @functools.cached_property
    def _code(self) -> str:
        """The user's code as a run stamps it (``bundle.code_digest``); "" when it came without a bundle."""
        shipped = os.environ.get(bundle.BUNDLE_ENV)
        return bundle.code_digest(under_root(self.root, shipped)) if shipped else ""

    def _attempt_number(self) -> int | None:
        """This attempt's number in the run's history (the chief's; None elsewhere or before it joined)."""
        history = self.history.history if self.is_chief else None
        return len(history["attempts"]) if history else None

    def _objective_report(self, metric: str) -> Any:
        """A sweep trial's objective after every epoch, as this provider reads it (``hparams``)."""
        reporter = environments.named(self.cluster.provider).objective_reporter(os.environ, self.root)

        def report(epoch: int, value: float) -> None:
            if reporter is not None:
                reporter(metric, epoch, value)

        return cb.keras_callback(self.keras, hparams.ObjectiveReport, metric, report)

    def _tensorboard_installed(self) -> bool:
        # Stock TensorFlow images ship tensorboard; tensorflow-cpu wheels do not require it.
        if importlib.util.find_spec("tensorboard") is not None:
            return True
        self.say(
            "warning: tensorboard is not installed, so no TensorBoard logs. Run: pip install tensorboard"
        )
        return False

    def backup_callback(self) -> Any:
        """BackupAndRestore with a layout that is safe for several workers.

        tf_keras has multi-worker logic (the chief writes ``<dir>/chief``, the others a
        temporary folder they delete, and all restore from ``chief``). Keras 3 has
        none, so cloudtrain gives it the same layout (``callbacks.ChiefWritesBackup``).
        """
        base = self.locations.backup
        if self.legacy:
            return cb.stamped_backup(self.keras, str(base), self.backups)
        scratch = str(scratch_dir(self.root) / "backup") if self.on_jax else None
        return cb.chief_writes_backup(
            self.keras, str(base / "chief"), self.cluster.is_chief, scratch, self.backups
        )

    def context(self, split: str) -> data.DataContext:
        """The DataContext handed to the user's dataset functions."""
        return data.DataContext(
            split=split,
            per_replica_batch=self.per_replica_batch,
            global_batch=self.global_batch,
            replicas=self.replicas,
            num_input_pipelines=self.cluster.num_hosts,
            input_pipeline_id=self.cluster.rank,
            channels=dict(self.locations.channels),
            epochs=self.config.epochs,
            steps_per_epoch=self.config.steps_per_epoch,
            is_chief=self.is_chief,
            seed=SEED,
            hparams=dict(self.config.hparams),
        )

    def distribute(self, dataset: Any, split: str = "train") -> Any:
        """Batch and shard a dataset of single examples; cache and prefetch it as the speed switches say.

        See ``data.prepare``; ``training.cache: auto`` is decided for each dataset (``tuning.cache``).
        Training data of a run that resumes starts where an uninterrupted run's would be
        (``data.start_at_epoch``).
        """
        context, by_process = self.context(split), self.on_jax and self.cluster.num_hosts > 1
        by_file = data.sharded_by_file(self.tf, dataset, context, shard_by_process=by_process)
        cache = tuning.cache(self.tf, dataset, self.config.cache, sharded_by_file=by_file)
        self.speed[f"cache_{split}"] = cache
        for name in ("prefetch", "parallel_map"):
            self.speed[name] = tuning.plain(self.config, name)
        speed = data.InputSpeed(cache.value, self.config.prefetch, self.config.parallel_map)
        prepared = data.prepare(
            self.tf, dataset, context=context, shard_by_process=by_process, log=self.say, speed=speed
        )
        if split == "train":
            data.start_at_epoch(
                prepared,
                self.backups.resumes_at().epoch,
                repeated=bool(context.steps_per_epoch),
                whole_passes=data.whole_passes(dataset, context),
                log=self.say,
            )
        return prepared

    def compile_options(self, user_args: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``steps_per_execution`` and ``jit_compile`` for ``model.compile``, as the spec and ``auto`` say.

        ``user_args`` are the user's own compile arguments, used where the spec says ``auto``.

        Example (script mode)::

            model.compile(optimizer=..., loss=..., **session.compile_options())
        """
        settings = tuning.compile_settings(
            self.config,
            user_args or {},
            strategy=self.choice.name,
            keras=self.keras_name,
            steps_per_epoch=self.config.steps_per_epoch,
        )
        self.speed.update(settings)
        # ``auto`` is left out: each Keras then applies its own default (tf_keras takes any
        # string as true, so "auto" would turn XLA on there).
        return {name: setting.value for name, setting in settings.items() if setting.value != AUTO}

    def log_speed(self, model: Any) -> None:
        """Log the speed settings in force: what the compiled model runs, and why."""
        for name, value in tuning.compiled(model).items():
            chosen = self.speed.get(name)
            self.speed[name] = tuning.Setting(
                value, chosen.reason if chosen else "set by the model's own compile"
            )
        self.say(tuning.line(self.speed))

    def learning_rate(self, steps_per_epoch: int | None) -> Any:
        """The plan's scaled rate, with the configured linear warm-up as a Keras schedule."""
        steps = schedule.warmup_steps(self.config.warmup_epochs, steps_per_epoch)
        ops = self.tf if self.legacy else self.keras.ops
        return schedule.learning_rate(self.keras, ops, self.config.learning_rate, steps)

    def check_model(self, model: Any, producer: str) -> None:
        """The model must be a Keras model whose variables belong to the strategy.

        Raises:
            UserCodeError: naming ``producer`` and the fix.
        """
        if not isinstance(model, self.keras.Model):
            raise UserCodeError(f"{producer} must return a keras.Model, not {type(model).__name__}.")
        if self.choice.name == "keras-model-parallel":
            strategy.check_layout_map(self.config.layout_map, [w.path for w in model.weights])
        if self.on_jax or self.replicas == 1:
            return
        outside = [w.path if hasattr(w, "path") else w.name for w in model.weights if not self._owned(w)]
        if outside:
            raise UserCodeError(
                f"{producer} returned a model built outside the strategy scope (e.g. {outside[0]!r}). "
                "Create the model inside build_model(); do not build it at import time."
            )

    def _owned(self, weight: Any) -> bool:
        # A Keras 3 weight wraps its tf.Variable in .value; a tf_keras weight is one.
        variable = weight if isinstance(weight, self.tf.Variable) else weight.value
        return self.strategy.extended.variable_created_in_scope(variable)

    def evaluate(self, model: Any, validation: Any) -> None:
        """Score the final weights, the ones exported, on the validation data (every task).

        The ``val_`` values ``fit`` logs for the last epoch can differ from what the
        export gives (BatchNorm statistics, metrics averaged over replicas), and a run
        resumed after its last epoch logs none; these scores are the export's.
        """
        scores = model.evaluate(validation, verbose=0, return_dict=True)
        self.final_scores = {f"val_{name}": float(value) for name, value in scores.items()}

    def export(self, model: Any) -> Path | None:
        """Export (every task), check the chief's export answers, write the results.

        Only then the chief records the completion marker, empties the backup (where the
        export is durable already) and points the root's ``latest.json`` at this run, so
        a kill before that restarts at the export, with every epoch kept.
        """
        path = export.export(
            self.tf,
            model,
            target=self.locations.export,
            is_chief=self.is_chief,
            scratch=scratch_dir(self.root),
            legacy=self.legacy,
        )
        if self.fault and self.fault.unit == "export":
            cb.kill_self()
        if path is not None:
            self.result = self._results(model, path, export.serve_once(self.tf, path))
            self._report(self.result)
            self.backups.complete(path)
            if self.tracker is not None:
                self.tracker.finish(self.history.history, self.result)
            if self.locations.latest is not None:
                latest.point(self.locations.latest, self.backups.mine.run, self.config.export_dir)
        return path

    def _results(self, model: Any, path: Path, serving: Mapping[str, Any]) -> dict[str, Any]:
        """The result file: this attempt's settings and check, and every attempt's history and throughput."""
        run = self._run_history()
        curves = history_lib.curves(run)
        return {
            "name": self.config.name,
            "run": run["run"],
            "replicas": self.replicas,
            "global_batch": self.global_batch,
            "per_replica_batch": self.per_replica_batch,
            "learning_rate": self.config.learning_rate,
            "accelerator": self.config.accelerator,
            "hosts": self.cluster.num_hosts,
            "devices_per_host": self.cluster.devices_per_host,
            "strategy": self.choice.name,
            "strategy_reason": self.choice.reason,
            "keras": "tf_keras" if self.legacy else f"keras {self.keras.__version__}",
            "precision_policy": self.keras.mixed_precision.global_policy().name,
            "multi_worker_fixes": self.fixes,
            "speed": tuning.as_json(self.speed),
            "history": curves,
            "final_validation": self.final_scores or _last_validation(curves),
            "epochs_run": history_lib.epochs(run),
            "resumed_from_epoch": self.progress.resumed_from_epoch,
            "attempts": [_attempt_summary(attempt) for attempt in run["attempts"]],
            "time_lost_s": history_lib.lost_seconds(run),
            "throughput": {
                **history_lib.merged_throughput(run, global_batch=self.global_batch),
                "replicas": self.replicas,
                "accelerator": self._measured_on(),
            },
            "weights_l1": export.weights_l1(model),
            "export": str(path),
            "serving_default": serving,
        }

    def _run_history(self) -> dict[str, Any]:
        """The run's history with this attempt's last throughput; an empty one where ``fit`` had no callbacks.

        A script that trains without ``session.callbacks`` leaves no history: its result says so.
        """
        recorder = self.history
        if recorder.history is None:
            return history_lib.new(
                self.backups.mine.run or "", started_at=self.started, epochs=self.config.epochs
            )
        recorder.throughput(self.throughput.result())
        recorder.save()
        return recorder.history

    @property
    def measured_on(self) -> str:
        """The accelerator this replica's speed describes (``_measured_on``), for ``cloudtrain_runtime.bench``."""
        return self._measured_on()

    def _measured_on(self) -> str:
        """The accelerator the throughput was measured on: ``cpu`` when devices were emulated."""
        planned_cpu = self.config.accelerator == "cpu"
        return self.config.accelerator if planned_cpu == (self.cluster.device_kind == "cpu") else "cpu"

    def _report(self, result: Mapping[str, Any]) -> None:
        self.locations.results.mkdir(parents=True, exist_ok=True)
        self.locations.result_file.write_text(json.dumps(result, indent=2) + "\n")
        self.locations.throughput_file.write_text(json.dumps(result["throughput"], indent=2) + "\n")
        self.say(f"replicas={result['replicas']}")
        self.say(f"global_batch={result['global_batch']}")
        for name, value in result["final_validation"].items():
            self.say(f"final_{name}={value:.4f}")
        # Where the export really is: a mount that is a link here (an emulated /gcs) names its target.
        self.say(f"export={os.path.realpath(result['export'])}")
        self.say(
            f"serving_default({_shapes(result['serving_default'])}) -> {result['serving_default']['outputs']}"
        )
        self.say(f"result={os.path.realpath(self.locations.result_file)}")


def _last_validation(curves: Mapping[str, list[float | None]]) -> dict[str, float]:
    last = {name: [value for value in values if value is not None] for name, values in curves.items()}
    return {name: values[-1] for name, values in last.items() if name.startswith("val_") and values}


def _attempt_summary(attempt: Mapping[str, Any]) -> dict[str, Any]:
    """What one attempt did, for the result file: its job, where it resumed, what it trained and lost."""
    measured = attempt["throughput"] or {}
    return {
        **{key: value for key, value in attempt.items() if key != "throughput"},
        "examples_per_sec": measured.get("examples_per_sec"),
    }


def _shapes(serving: Mapping[str, Any]) -> str:
    return ", ".join(f"{name}={shape}" for name, shape in serving["inputs"].items())


def start(
    config: RuntimeConfig,
    cluster: ClusterInfo,
    locations: Locations,
    *,
    root: str,
    say: Callable[[str], None],
) -> Session:
    """Create devices, strategy and Keras for this process; the environment is already prepared."""
    starter = _start_jax if config.keras_backend == "jax" else _start_tensorflow
    session = starter(config, cluster, locations, root, say if cluster.is_chief else _quiet)
    session.say(f"strategy={session.choice.name}: {session.choice.reason}")
    if session.fixes:
        session.say(f"keras fit fixes applied: {', '.join(session.fixes)}")
    precision = _PRECISION.get(config.mixed_precision)
    if precision:
        session.keras.mixed_precision.set_global_policy(precision)
    session.keras.utils.set_random_seed(SEED)
    session.notice.install()
    return session


def _start_tensorflow(
    config: RuntimeConfig, cluster: ClusterInfo, locations: Locations, root: str, say: Callable[[str], None]
) -> Session:
    import tensorflow as tf

    found = devices.configure_tensorflow(tf, config)
    devices.enforce(found.verdict, say)
    count, kind = found.count, found.kind
    if device_check.planned_kind(config) == "tpu":
        count, kind = config.devices_per_host, "tpu"
    cluster, choice = _choose(config, cluster, count, kind)
    created = strategy.create_tensorflow(choice, tf, kind)
    strategy.check_replicas(config, created.num_replicas_in_sync, cluster)
    keras, fixes = _tensorflow_keras(tf, choice)
    return Session(config, cluster, locations, root, tf, keras, created, choice, say, fixes)


def _choose(
    config: RuntimeConfig, cluster: ClusterInfo, count: int, kind: str
) -> tuple[ClusterInfo, strategy.Choice]:
    """The cluster with its real device count, and the strategy checked against it."""
    cluster = cluster.with_devices(count, kind)
    choice = strategy.decide(
        config.strategy,
        keras_backend=config.keras_backend,
        num_hosts=cluster.num_hosts,
        devices_per_host=count,
        device_kind=kind,
        layout_map=bool(config.layout_map),
        spec=config.strategy_requested,
    )
    return cluster, choice


def _tensorflow_keras(tf: ModuleType, choice: strategy.Choice) -> tuple[ModuleType, list[str]]:
    if devices.legacy_keras(os.environ):
        import tf_keras

        return tf_keras, []
    import keras

    fixes = keras_compat.build_without_drawing()
    if choice.name == "multi-worker":
        fixes += keras_compat.fix_multi_worker_fit(tf)
    return keras, fixes


def _start_jax(
    config: RuntimeConfig, cluster: ClusterInfo, locations: Locations, root: str, say: Callable[[str], None]
) -> Session:
    import jax
    import keras
    import tensorflow as tf

    # TensorFlow only feeds tf.data here; keep it off the devices JAX trains on.
    tf.config.set_visible_devices([], "GPU")
    strategy.initialize_jax(cluster, keras)
    count, kind = devices.jax_devices(jax)
    devices.enforce(device_check.judge(config, devices.jax_sight(os.environ, count, kind)), say)
    cluster, choice = _choose(config, cluster, count, kind)
    distribution = strategy.create_keras_distribution(choice, config, keras)
    strategy.check_replicas(config, len(keras.distribution.list_devices()), cluster)
    return Session(config, cluster, locations, root, tf, keras, distribution, choice, say)


def _quiet(line: str) -> None:
    """Non-chief tasks keep the log to the chief's lines."""
