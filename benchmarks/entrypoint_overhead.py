"""The training entrypoint against a hand-written script of the same model, data and strategy.

Interleaved A/B pairs in one process: each pair trains a fresh model on each side, the
order alternating (A B, B A, ...) after one untimed pair that warms the row up (tracing,
thread pools). Both sides are measured the same way, by
``cloudtrain_runtime.callbacks.Throughput``: the epochs after the first one and 50 steps,
optimizer steps over the time of each epoch's training phase, by wall time (the ratio and
its target) and by this process's CPU time (less moved by load from other processes).

- entrypoint: ``cloudtrain_runtime.managed.train`` on the user's module, as the container
  runs it: the session's callbacks (backup, progress, throughput, TensorBoard), its
  batching and its speed defaults (``cloudtrain_runtime.tuning``).
- hand-written: the same module's ``build_model``, ``compile_args`` and datasets, batched
  by hand and trained with ``model.fit(verbose=0)``, no callback but the measurement.

Rows, as examples/s of A / B (min, median and max over the pairs; targets on the median):

- (0) the script against itself: the noise floor of this machine, in this run.
- (a) the user's pipeline as written: examples/binary_classifier's ``make_dataset``, the
  script batching it and adding ``prefetch(AUTOTUNE)`` as the tf.data guide does.
  Target >= 0.98.
- (a0) the same with the entrypoint's speed switches set to what the script does
  (``steps_per_execution: 1``, ``prefetch: true``, ``cache: false``): what the
  entrypoint's own work costs.
- (b) a naive pipeline: shuffle, then a per-example ``map``, then ``batch(16)`` with no
  prefetch and one small batch per call. Target >= 1.3.

The entrypoint also writes a backup and TensorBoard scalars at every epoch's end, as in a
job, under ``$TMPDIR``; with the example's 30 ms epochs that disk work shows in row (a0)
(``TMPDIR=/dev/shm`` takes the disk out).

``--switches`` adds each speed switch on against off, entrypoint against entrypoint (the
numbers behind the defaults in ``cloudtrain_runtime.config``). Then each of the
entrypoint's callbacks is timed alone, per step. One strategy throughout: the default
strategy, on this machine's CPU, one process.

    python benchmarks/entrypoint_overhead.py [--pairs 6] [--switches] [--only TEXT]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from cloudtrain_runtime import callbacks, cluster, config, devices, locations, managed, usercode
from cloudtrain_runtime.session import Session, start

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "binary_classifier"
TARGETS = {"a": 0.98, "b": 1.3}
# The naive user's module: the example's rows, more of them, with work per example.
NAIVE_MODULE = """
import tensorflow as tf
from trainer.task import build_model, compile_args, rows

ROWS = 4096


def transform(features, label):
    features = tf.math.log1p(tf.abs(features)) * tf.sign(features)
    return (features - tf.reduce_mean(features)) / (tf.math.reduce_std(features) + 1e-6), label


def make_dataset(context):
    examples = tf.data.Dataset.from_tensor_slices(rows(ROWS, seed=1))
    return examples.shuffle(ROWS, seed=context.seed).map(transform)


def make_validation_dataset(context):
    return tf.data.Dataset.from_tensor_slices(rows(512, seed=2)).map(transform)
"""
# The same work per example without the shuffle, so the cache may keep it.
STEADY_MODULE = NAIVE_MODULE.replace(".shuffle(ROWS, seed=context.seed)", "")


@dataclass(frozen=True)
class Row:
    """One comparison: a user module, how the script batches it, and the entrypoint's switches."""

    label: str
    module: str
    epochs: int
    script: Callable[[Any, Any], Any]
    switches: dict[str, Any] | None
    """The entrypoint's switches; None for the script against itself (the noise floor)."""
    off: dict[str, Any] | None = None
    """For a switch row: the switches of the runs it is divided by."""


def batched(tf: ModuleType, *, prefetch: bool) -> Callable[[Any, Any], Any]:
    """How a hand-written script batches the examples: 16 a step, with or without prefetch."""

    def pipeline(dataset: Any, context: Any) -> Any:
        dataset = dataset.batch(context.global_batch, drop_remainder=True)
        return dataset.prefetch(tf.data.AUTOTUNE) if prefetch else dataset

    return pipeline


class Side:
    """One side of a pair: it trains a fresh model and says its examples/s, by wall and by CPU time."""

    def __init__(self, session: Session) -> None:
        keras, batch = session.keras, session.global_batch
        self.wall = callbacks.keras_callback(keras, callbacks.Throughput, batch)
        self.cpu = callbacks.keras_callback(
            keras, callbacks.Throughput, batch, callbacks.WARMUP_STEPS, time.process_time
        )

    def rates(self) -> tuple[float, float]:
        """Training examples per second of wall time, and per second of this process's CPU time."""
        self.train([self.wall, self.cpu])
        return self.wall.result()["examples_per_sec"], self.cpu.result()["examples_per_sec"]

    def train(self, measures: list[Any]) -> None:
        raise NotImplementedError


class HandWritten(Side):
    """The script a user writes for a row's module: its own batching, ``fit`` and no callback."""

    def __init__(self, session: Session, row: Row, directory: Path) -> None:
        super().__init__(session)
        keras, cfg = session.keras, session.config
        module = usercode.import_module(row.module, directory)
        context = session.context("train")
        self.examples = row.script(module.make_dataset(context), context)
        self.validation = module.make_validation_dataset(context).batch(
            context.global_batch, drop_remainder=True
        )
        with session.scope():
            self.model = module.build_model(cfg)
            self.model.compile(optimizer=keras.optimizers.Adam(cfg.learning_rate), **module.compile_args(cfg))
        self.epochs = row.epochs

    def train(self, measures: list[Any]) -> None:
        self.model.fit(
            self.examples,
            validation_data=self.validation,
            epochs=self.epochs,
            callbacks=measures,
            shuffle=False,
            verbose=0,
        )


class Entrypoint(Side):
    """``managed.train`` on the row's module, with the session's callbacks and speed switches."""

    def __init__(self, session: Session, module: str, directory: Path) -> None:
        super().__init__(session)
        self.session, self.module, self.directory = session, module, directory

    def train(self, measures: list[Any]) -> None:
        # The session's own Throughput is among its callbacks; these two measure alike on both sides.
        self.session.callbacks.extend(measures)
        managed.train(self.session, self.module, self.directory)


class Bench:
    """One started session (the default strategy); each run a fresh model."""

    def __init__(self, work: Path) -> None:
        self.work, self.code = work, work / "code"
        env = {"CLOUDTRAIN_ROOT": str(work)}
        self.config = config.from_dict(_runtime_config(work), "benchmark")
        replica = cluster.from_environment(env, str(work))
        devices.prepare_environment(self.config, replica, env)
        where = locations.resolve(self.config, replica, env, str(work))
        self.session = start(self.config, replica, where, root=str(work), say=lambda line: None)
        self.runs = 0

    def side(self, row: Row, switches: dict[str, Any] | None) -> Side:
        """The entrypoint with ``switches``, or for None the hand-written script, on a fresh model."""
        self.session.keras.utils.set_random_seed(0)
        session = self.fresh_session(row, switches or {})
        if switches is None:
            return HandWritten(session, row, self.code)
        return Entrypoint(session, row.module, self.code)

    def fresh_session(self, row: Row, switches: dict[str, Any]) -> Session:
        """The started session with a new run's folders and switches: nothing cached from the last run."""
        self.runs += 1
        folder = self.work / f"run-{self.runs}"
        where = dataclasses.replace(
            self.session.locations,
            backup=folder / "backup",
            tensorboard=folder / "logs",
            export=folder / "model",
            results=folder,
        )
        cfg = dataclasses.replace(self.config, epochs=row.epochs, **switches)
        return dataclasses.replace(
            self.session, config=cfg, locations=where, result=None, final_scores={}, speed={}
        )


def _runtime_config(work: Path) -> dict[str, Any]:
    """examples/binary_classifier's plan on one host and one CPU device."""
    return {
        "name": "binary-classifier",
        "module": "trainer.task",
        "epochs": 30,
        "per_replica_batch": 16,
        "replicas": 1,
        "hosts": 1,
        "learning_rate": 0.01,
        "base_learning_rate": 0.01,
        "mixed_precision": "off",
        "strategy": "auto",
        "keras_backend": "tensorflow",
        "accelerator": "cpu",
        "devices_per_host": 1,
        "backup_dir": str(work / "backup"),
        "tensorboard_dir": str(work / "logs"),
        "export_dir": str(work / "model"),
    }


def rows(tf: ModuleType, *, switches: bool) -> list[Row]:
    """The comparisons to run (see the module docstring)."""
    written, naive = batched(tf, prefetch=True), batched(tf, prefetch=False)
    as_script = {"steps_per_execution": 1, "prefetch": True, "cache": False}
    found = [
        Row("(0) the script against itself", "trainer.task", 20, written, None),
        Row("(a) user's pipeline as written", "trainer.task", 20, written, {}),
        Row("(a0) same, switches as the script", "trainer.task", 20, written, as_script),
        Row("(b) naive pipeline", "naive_task", 6, naive, {}),
    ]
    if not switches:
        return found
    return [
        *found,
        Row(
            "steps_per_execution 16 / 1", "trainer.task", 20, written, {"steps_per_execution": 16}, as_script
        ),
        Row(
            "jit_compile on / off, 1 step",
            "trainer.task",
            20,
            written,
            {**as_script, "jit_compile": True},
            as_script,
        ),
        Row(
            "jit_compile on / off, 16 steps",
            "trainer.task",
            20,
            written,
            {"jit_compile": True},
            {"jit_compile": False},
        ),
        Row("cache on / off (no shuffle)", "steady_task", 6, naive, {"cache": True}, {"cache": False}),
        Row("prefetch on / off (naive)", "naive_task", 6, naive, {"prefetch": True}, {"prefetch": False}),
        Row(
            "parallel_map on / off (naive)",
            "naive_task",
            6,
            naive,
            {"parallel_map": True},
            {"parallel_map": False},
        ),
    ]


def measure(bench: Bench, row: Row, pairs: int) -> tuple[list[float], list[float]]:
    """Each pair's A / B ratio of examples/s by wall time, and by CPU time.

    A is the entrypoint with the row's switches (the script, for the noise-floor row), B
    the script (a switch row: the entrypoint with the switch off). The order alternates,
    A B, B A, A B, ..., after one untimed pair that warms the row up (tracing, thread pools).
    """
    sides = (row.switches, None if row.off is None else row.off)
    for switches in sides:
        bench.side(row, switches).rates()
    walls, cpus = [], []
    for i in range(pairs):
        rates: dict[int, tuple[float, float]] = {}
        for side in (0, 1) if i % 2 == 0 else (1, 0):
            rates[side] = bench.side(row, sides[side]).rates()
        walls.append(rates[0][0] / rates[1][0])
        cpus.append(rates[0][1] / rates[1][1])
    return walls, cpus


def report(row: Row, walls: list[float], cpus: list[float]) -> str:
    """One table line: min, median and max of the wall-time ratios, the CPU-time median, the target."""
    target = TARGETS.get(row.label[1]) if row.off is None else None
    median = statistics.median(walls)
    verdict = "" if target is None else ("ok" if median >= target else "MISSED")
    goal = f">= {target}" if target else ""
    return (
        f"{row.label:<38} {min(walls):>6.2f} {median:>7.2f} {max(walls):>6.2f} {statistics.median(cpus):>8.2f}"
        f"  {goal:<7} {verdict}"
    )


def callback_costs(bench: Bench, steps: int = 3000) -> dict[str, float]:
    """Microseconds per training step that each of the entrypoint's callbacks adds.

    Each one runs alone in Keras's own ``CallbackList`` (which calls the batch hooks of
    every callback once per step with the step's logs), against an empty list; Keras's
    stock TensorBoard is measured too, for the cost the entrypoint no longer pays.
    """
    keras, tf = bench.session.keras, bench.session.tf
    row = Row("callbacks", "trainer.task", 1, batched(tf, prefetch=True), {})
    session = bench.fresh_session(row, {})
    module = usercode.import_module(row.module, bench.code)
    model = module.build_model(bench.config)
    model.compile(optimizer="adam", **module.compile_args(bench.config))
    logs = {"loss": tf.constant(0.5), "binary_accuracy": tf.constant(0.75)}
    named = {f"{type(callback).__name__} (entrypoint)": callback for callback in session.callbacks}
    named["TensorBoard (stock Keras 3)"] = keras.callbacks.TensorBoard(log_dir=str(bench.work / "stock-logs"))
    empty = _hook_seconds(keras.callbacks.CallbackList([], model=model), logs, steps)
    return {
        name: (_hook_seconds(keras.callbacks.CallbackList([callback], model=model), logs, steps) - empty)
        / steps
        * 1e6
        for name, callback in named.items()
    }


def _hook_seconds(callback_list: Any, logs: dict[str, Any], steps: int) -> float:
    """Seconds ``steps`` batch-hook rounds take, between an epoch's begin and end."""
    callback_list.on_train_begin()
    callback_list.on_epoch_begin(0)
    started = time.perf_counter()
    for step in range(steps):
        callback_list.on_train_batch_begin(step)
        callback_list.on_train_batch_end(step, logs)
    seconds = time.perf_counter() - started
    callback_list.on_train_end()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pairs", type=int, default=6, help="timed A/B pairs per row (default 6)")
    parser.add_argument("--switches", action="store_true", help="also measure each speed switch on/off")
    parser.add_argument("--only", default="", help="run only the rows whose label contains this text")
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported
    with tempfile.TemporaryDirectory(prefix="entrypoint-overhead-") as folder:
        work = Path(folder)
        (work / "code").mkdir()
        (work / "code" / "naive_task.py").write_text(textwrap.dedent(NAIVE_MODULE))
        (work / "code" / "steady_task.py").write_text(textwrap.dedent(STEADY_MODULE))
        sys.path[:0] = [str(EXAMPLE), str(work / "code")]
        bench = Bench(work)
        title = f"examples/s ratio A / B, {args.pairs} pairs"
        print(f"{title:<38} {'min':>6} {'median':>7} {'max':>6} {'CPU med':>8}  target")
        for row in rows(bench.session.tf, switches=args.switches):
            if args.only in row.label:
                print(report(row, *measure(bench, row, args.pairs)), flush=True)
        print(
            "A / B: entrypoint / hand-written script; (0): the script / itself; switch rows: on / off. "
            "min, median, max: by wall time; CPU med: by this process's CPU time."
        )
        print(f"\n{'callback, alone in a CallbackList':<40} {'us per step':>11}")
        for name, micros in callback_costs(bench).items():
            print(f"{name:<40} {micros:>11.1f}")


if __name__ == "__main__":
    main()
