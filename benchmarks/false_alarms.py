"""False alarms of the hang watchdog: clean runs of the bundled example with a tight floor.

examples/binary_classifier runs as its job does on this machine: 2 processes on loopback
(MultiWorkerMirroredStrategy, one CPU replica each), 3 epochs of 16 steps, with
``training.hang_timeout`` at ``--floor`` seconds (5 by default, a twelfth of the default
60 s). Nothing hangs, so every alarm (a ``hang watchdog:`` line, exit 75) is a false one:
compiling, the first step, validation, the epoch-end backups and the export must pass
unwatched or in time.

The baseline, in the same run: ``--baseline`` runs with the watchdog off; the ratio is
the median wall time of a run with the watchdog over one without (the watching costs
nothing a run can see: about 1).

Printed: one row per run (watchdog on or off, the exit codes, alarms, wall seconds), then
the alarms over all watched runs and the ratio.

    python benchmarks/false_alarms.py [--runs 20] [--baseline 3] [--floor 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from notice_backup import EXAMPLE, ROOT, config, ports

ALARM = "hang watchdog:"


def one_run(hang_timeout: int | str) -> tuple[list[int], int, float]:
    """The replicas' exit codes, the alarms in their logs, and the run's wall seconds."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        settings = {**config(root), "epochs": 3, "hang_timeout": hang_timeout}
        (root / "config.json").write_text(json.dumps(settings))
        cluster = {"worker": [f"127.0.0.1:{port}" for port in ports(2)]}
        started, procs = time.perf_counter(), []
        for index in range(2):
            env = {k: v for k, v in os.environ.items() if not k.startswith(("CLOUDTRAIN_", "TF_CONFIG"))}
            env.update(
                CLOUDTRAIN_ROOT=str(root),
                TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}}),
                TF_CPP_MIN_LOG_LEVEL="2",
                PYTHONPATH=os.pathsep.join([str(ROOT / "entrypoints"), env.get("PYTHONPATH", "")]),
            )
            command = [sys.executable, "-m", "cloudtrain_runtime", "--config", str(root / "config.json")]
            procs.append(
                subprocess.Popen(
                    command, cwd=EXAMPLE, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
                )
            )
        outputs = [proc.communicate(timeout=600)[0] for proc in procs]
        seconds = time.perf_counter() - started
        return [proc.returncode for proc in procs], sum(output.count(ALARM) for output in outputs), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="clean runs with the watchdog on")
    parser.add_argument("--baseline", type=int, default=3, help="runs with the watchdog off")
    parser.add_argument("--floor", type=int, default=5, help="training.hang_timeout, seconds")
    args = parser.parse_args()
    print(f"{'run':>4} {'watchdog':>9} {'exits':>8} {'alarms':>7} {'wall s':>7}")
    walls: dict[str, list[float]] = {"on": [], "off": []}
    alarms = 0
    plan = [("off", "off")] * args.baseline + [("on", args.floor)] * args.runs
    for number, (kind, hang_timeout) in enumerate(plan, start=1):
        codes, raised, seconds = one_run(hang_timeout)
        walls[kind].append(seconds)
        alarms += raised if kind == "on" else 0
        exits = ",".join(map(str, codes))
        print(f"{number:>4} {kind:>9} {exits:>8} {raised:>7} {seconds:>7.1f}")
    ratio = statistics.median(walls["on"]) / statistics.median(walls["off"])
    print(
        f"false alarms: {alarms} in {args.runs} runs (floor {args.floor}s); "
        f"median wall on/off: {ratio:.2f} (target: 0 alarms, ratio about 1)"
    )


if __name__ == "__main__":
    main()
