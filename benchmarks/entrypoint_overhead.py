"""The training entrypoint against a hand-written script of the same model, data and strategy.

Both sides train in one process, their epochs interleaved: each side's ``fit`` runs in
its own thread, and they take turns, one epoch each. Every epoch pair is one A/B sample,
so a burst of load from elsewhere on the machine hits both sides alike. Both are
measured the same way, by ``cloudtrain_runtime.callbacks.Throughput``: the epochs after
the first one and 50 steps, optimizer steps over the time of each epoch's training phase.

- entrypoint: ``cloudtrain_runtime.managed.train`` on the user's module, as the container
  runs it: the session's callbacks (backup, progress, throughput, TensorBoard), its
  batching and its speed defaults (``cloudtrain_runtime.tuning``).
- hand-written: the same module's ``build_model``, ``compile_args`` and datasets, batched
  by hand and trained with ``model.fit(verbose=0)``, no callback but the measurement.

Rows, as examples/s of the entrypoint / the hand-written script (min, median and max over
the runs' medians; the targets are on the median of every epoch pair):

- (a) the user's pipeline as written: examples/binary_classifier's ``make_dataset``, the
  script batching it and adding ``prefetch(AUTOTUNE)`` as the tf.data guide does.
  Target >= 0.98.
- (a0) the same with the entrypoint's speed switches set to what the script does
  (``steps_per_execution: 1``, ``prefetch: true``, ``cache: false``): what the
  entrypoint's own work costs.
- (b) a naive pipeline: shuffle, then a per-example ``map``, then ``batch(16)`` with no
  prefetch and one small batch per call. Target >= 1.3.

``--switches`` adds each speed switch on against off: both are run against the same
script, alternately, and the row is the quotient of the two (the numbers behind the
defaults in ``cloudtrain_runtime.config``). Then each of the entrypoint's callbacks is
timed alone, per step. One strategy throughout: the default strategy, on this machine's
CPU, one process.

    python benchmarks/entrypoint_overhead.py [--runs 5] [--switches]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import tempfile
import textwrap
import threading
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
    switches: dict[str, Any]
    off: dict[str, Any] | None = None
    """For a switch row: the switches of the run it is divided by."""


class EpochRates(callbacks.Throughput):
    """``Throughput`` that also keeps each measured epoch's examples/s, by epoch."""

    def __init__(self, global_batch: int) -> None:
        super().__init__(global_batch)
        self.rates: dict[int, float] = {}
        self.current = 0

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        super().on_epoch_begin(epoch, logs)
        self.current = epoch

    def _training_ended(self) -> None:
        measured, seconds = self.measured, self.seconds
        super()._training_ended()
        if self.measured > measured:
            self.rates[self.current] = (
                (self.measured - measured) * self.global_batch / (self.seconds - seconds)
            )


class Turns:
    """Two fits in two threads, one epoch at a time: each epoch's end passes the turn.

    Each side is one ``model.fit`` over all epochs, so both meet Keras the same way (a fit
    per epoch on one side measured up to 2x off against the same code in one long fit).
    """

    def __init__(self) -> None:
        self.first, self.second = threading.Semaphore(1), threading.Semaphore(0)

    def side(self, keras: ModuleType, *, first: bool) -> Any:
        """The callback for one side: it waits for its turn, and passes it at each epoch's end."""
        mine, theirs = (self.first, self.second) if first else (self.second, self.first)
        return callbacks.keras_callback(keras, PassTheTurn, mine, theirs)


class PassTheTurn:
    """Waits for ``mine`` before training and after each epoch; releases ``theirs`` at each epoch's end."""

    def __init__(self, mine: threading.Semaphore, theirs: threading.Semaphore) -> None:
        super().__init__()
        self.mine, self.theirs = mine, theirs

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        self.mine.acquire()

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self.theirs.release()
        self.mine.acquire()

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        self.theirs.release()


def batched(tf: ModuleType, *, prefetch: bool) -> Callable[[Any, Any], Any]:
    """How a hand-written script batches the examples: 16 a step, with or without prefetch."""

    def pipeline(dataset: Any, context: Any) -> Any:
        dataset = dataset.batch(context.global_batch, drop_remainder=True)
        return dataset.prefetch(tf.data.AUTOTUNE) if prefetch else dataset

    return pipeline


class HandWritten:
    """The script a user writes for a row's module: built once, trained an epoch at a time."""

    def __init__(self, session: Session, row: Row, directory: Path) -> None:
        keras, cfg = session.keras, session.config
        module = usercode.import_module(row.module, directory)
        context = session.context("train")
        self.train = row.script(module.make_dataset(context), context)
        self.validation = module.make_validation_dataset(context).batch(
            context.global_batch, drop_remainder=True
        )
        with session.scope():
            self.model = module.build_model(cfg)
            self.model.compile(optimizer=keras.optimizers.Adam(cfg.learning_rate), **module.compile_args(cfg))
        self.rates = callbacks.keras_callback(keras, EpochRates, context.global_batch)
        self.epochs = row.epochs
        self.failure: BaseException | None = None

    def fit(self, turn: Any) -> None:
        """Train all epochs, taking turns; a failure is kept for the other thread to raise."""
        try:
            self.model.fit(
                self.train,
                validation_data=self.validation,
                epochs=self.epochs,
                callbacks=[self.rates, turn],
                shuffle=False,
                verbose=0,
            )
        except BaseException as err:
            self.failure = err
            turn.theirs.release()


class Bench:
    """One started session (the default strategy); each run a fresh model on each side."""

    def __init__(self, work: Path) -> None:
        self.work, self.code = work, work / "code"
        env = {"CLOUDTRAIN_ROOT": str(work)}
        self.config = config.from_dict(_runtime_config(work), "benchmark")
        replica = cluster.from_environment(env, str(work))
        devices.prepare_environment(self.config, replica, env)
        where = locations.resolve(self.config, replica, env, str(work))
        self.session = start(self.config, replica, where, root=str(work), say=lambda line: None)
        self.runs = 0

    def run(self, row: Row, switches: dict[str, Any]) -> list[float]:
        """Entrypoint / hand-written examples/s of each measured epoch pair of one run."""
        keras = self.session.keras
        keras.utils.set_random_seed(0)
        session = self.fresh_session(row, switches)
        script, turns = HandWritten(session, row, self.code), Turns()
        mine = callbacks.keras_callback(keras, EpochRates, session.global_batch)
        session.callbacks.extend([mine, turns.side(keras, first=True)])
        other = threading.Thread(target=script.fit, args=(turns.side(keras, first=False),))
        other.start()
        managed.train(session, row.module, self.code)
        other.join()
        if script.failure:
            raise script.failure
        return [rate / script.rates.rates[epoch] for epoch, rate in mine.rates.items()]

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


def measure(bench: Bench, row: Row, runs: int) -> tuple[list[float], list[float]]:
    """Each run's median ratio, and every epoch pair's ratio; a switch row divides on by off.

    One untimed run warms the row up (tracing, thread pools); a switch row alternates
    its on and off runs, each against the same script, and pairs them in order.
    """
    bench.run(row, row.switches)
    medians, pairs = [], []
    for _ in range(runs):
        ratios = bench.run(row, row.switches)
        if row.off is not None:
            baseline = statistics.median(bench.run(row, row.off))
            ratios = [ratio / baseline for ratio in ratios]
        medians.append(statistics.median(ratios))
        pairs += ratios
    return medians, pairs


def report(row: Row, medians: list[float], pairs: list[float]) -> str:
    """One table line: min, median and max of the runs' medians, the median of all pairs, the target."""
    target = TARGETS.get(row.label[1]) if row.off is None else None
    median = statistics.median(pairs)
    verdict = "" if target is None else ("ok" if median >= target else "MISSED")
    goal = f">= {target}" if target else ""
    return (
        f"{row.label:<36} {min(medians):>6.2f} {statistics.median(medians):>7.2f} {max(medians):>6.2f}"
        f" {median:>7.2f} {len(pairs):>6}  {goal:<7} {verdict}"
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
    parser.add_argument("--runs", type=int, default=5, help="timed runs per row (default 5)")
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
        print(f"{'examples/s ratio':<36} {'min':>6} {'median':>7} {'max':>6} {'pairs':>7} {'n':>6}  target")
        for row in rows(bench.session.tf, switches=args.switches):
            if args.only in row.label:
                print(report(row, *measure(bench, row, args.runs)), flush=True)
        print(
            f"min/median/max: of the {args.runs} runs' medians; pairs: median of all n epoch pairs. "
            "Ratio: entrypoint / hand-written script (switch rows: switch on / off)."
        )
        print(f"\n{'callback, alone in a CallbackList':<40} {'us per step':>11}")
        for name, micros in callback_costs(bench).items():
            print(f"{name:<40} {micros:>11.1f}")


if __name__ == "__main__":
    main()
