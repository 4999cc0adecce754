"""What the progress record costs: step time of the bundled example with the chief's writer against without, in one run.

Interleaved A/B pairs in one process, as ``benchmarks/entrypoint_overhead.py`` makes them
(whose session and sides this reuses): each side trains a fresh model of
examples/binary_classifier with the entrypoint's ``managed.train`` and the session's
callbacks, on this machine's CPU, one device, the order alternating after one untimed pair.

- A, with progress: the session's callbacks as a job's chief has them, the progress writer
  (``cloudtrain_runtime.progress``) among them: a record at most every 5 s, at an epoch's
  end a second or more after the last, and at the end of fit, written from the writer's
  thread under ``$TMPDIR``.
- B, without: the same callbacks less the writer.

Rows: the mean step time of A over B (``callbacks.Throughput``: optimizer steps over the
training phase of the epochs after the first), by wall time and by this process's CPU time
(the writer's thread included; less moved by other processes' load), min, median and max
over the pairs, with the noise floor (B against B) measured first; and the writer's own time in a step's hook
(``ReportProgress.on_train_batch_end``, timed alone over every step of a side) against the
step. Target: each median under 1 % (ratio <= 1.01).

    python benchmarks/progress_overhead.py [--pairs 6] [--epochs 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import entrypoint_overhead as overhead

from cloudtrain_runtime import progress

TARGET = 1.01


class Side(overhead.Entrypoint):
    """The entrypoint on a fresh model, with or without the progress writer; its mean step time."""

    def __init__(self, bench: overhead.Bench, row: overhead.Row, *, reports: bool) -> None:
        bench.session.keras.utils.set_random_seed(0)
        session = bench.fresh_session(row, {})
        super().__init__(session, row.module, bench.code)
        self.hook_s = 0.0
        found = session.callbacks
        writers = [c for c in found if isinstance(c, progress.ReportProgress)]
        assert len(writers) == 1, "the chief's session has one progress writer"
        if reports:
            self._time_hook(writers[0])
        else:
            found.remove(writers[0])

    def _time_hook(self, writer: Any) -> None:
        """Count the writer's time in every step's hook."""
        hook = writer.on_train_batch_end

        def timed(batch: int, logs: dict[str, Any] | None = None) -> None:
            started = time.perf_counter()
            hook(batch, logs)
            self.hook_s += time.perf_counter() - started

        writer.on_train_batch_end = timed

    def step_s(self) -> tuple[float, float]:
        """The mean step time by wall time, and by this process's CPU time (the writer's thread included)."""
        self.train([self.wall, self.cpu])
        batch = self.wall.global_batch
        return batch / self.wall.result()["examples_per_sec"], batch / self.cpu.result()["examples_per_sec"]


def measure(
    bench: overhead.Bench, row: overhead.Row, pairs: int, sides: tuple[bool, bool]
) -> tuple[list[float], list[float], list[float]]:
    """Each pair's A / B step time by wall and by CPU time, and A's hook time per step over its step time."""
    for reports in sides:
        Side(bench, row, reports=reports).step_s()
    wall, cpu, hook_shares = [], [], []
    for i in range(pairs):
        times: dict[int, tuple[float, float]] = {}
        for side in (0, 1) if i % 2 == 0 else (1, 0):
            measured = Side(bench, row, reports=sides[side])
            times[side] = measured.step_s()
            if sides[side]:
                hook_shares.append(1 + measured.hook_s / measured.wall.steps / times[side][0])
        wall.append(times[0][0] / times[1][0])
        cpu.append(times[0][1] / times[1][1])
    return wall, cpu, hook_shares


def line(label: str, ratios: list[float], *, target: bool = True) -> str:
    median = statistics.median(ratios)
    verdict = ("ok" if median <= TARGET else "MISSED") if target else ""
    goal = f"<= {TARGET}" if target else ""
    return f"{label:<44} {min(ratios):>6.4f} {median:>7.4f} {max(ratios):>6.4f}  {goal:<7} {verdict}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pairs", type=int, default=6, help="timed A/B pairs (default 6)")
    parser.add_argument("--epochs", type=int, default=20, help="epochs a side trains (default 20)")
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported
    with tempfile.TemporaryDirectory(prefix="progress-overhead-") as folder:
        work = Path(folder)
        (work / "code").mkdir()
        sys.path[:0] = [str(overhead.EXAMPLE), str(work / "code")]
        bench = overhead.Bench(work)
        row = overhead.Row("progress", "trainer.task", args.epochs, _unused, {})
        floor_wall, floor_cpu, _ = measure(bench, row, args.pairs, (False, False))
        wall, cpu, hooks = measure(bench, row, args.pairs, (True, False))
    print(f"{'step time ratio A / B':<44} {'min':>6} {'median':>7} {'max':>6}  target")
    print(line("(0) without / without, wall time", floor_wall, target=False))
    print(line("(0) without / without, CPU time", floor_cpu, target=False))
    print(line("with progress / without, wall time", wall))
    print(line("with progress / without, CPU time", cpu))
    print(line("1 + the writer's hook per step / step time", hooks))
    print(f"{args.pairs} pairs a row; (0): the noise floor of this machine, in this run.")
    print(
        f"{args.epochs} epochs a side of examples/binary_classifier; a record at most every "
        f"{progress.INTERVAL_S:g} s, at an epoch's end {progress.EPOCH_GAP_S:g} s or more after the last, "
        "and at the end of fit."
    )


def _unused(dataset: Any, context: Any) -> Any:
    """A row's hand-written script: this benchmark compares the entrypoint with itself, so none runs."""
    raise AssertionError("no hand-written side here")


if __name__ == "__main__":
    main()
