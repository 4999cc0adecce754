"""The backup on the provider's notice against the budget it must fit in, for the bundled example.

examples/binary_classifier runs as its job does on this machine: 2 processes on loopback
(MultiWorkerMirroredStrategy, one CPU replica each), 16 steps an epoch, 20 epochs (room for
the replicas' check, which comes every few steps where steps are this short). The last
host gets the notice after step 20 (``CLOUDTRAIN_FAULT=preempt@step:20``, SIGTERM then
SIGKILL after ``--grace`` seconds); the replicas agree at the next step, the chief writes
the verified backup of that step and both exit 75. The chief's log line says how long the
backup took from the step the replicas agreed on (the first check after the notice: a
few milliseconds here) to its committed manifest; the budget is ``notice.BUDGET_SHARE`` of the grace (24 s of
the 30 s of a GCE/Vertex spot VM or a default Kubernetes pod, the shortest grace any
provider gives: see docs/keep-running.md).

Printed: one row per try (seconds from the notice to the committed backup, the budget, their
ratio, target well below 1) and the median.

    python benchmarks/notice_backup.py [--tries 3] [--grace 30]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "binary_classifier"
RECLAIMED = 75
WRITTEN = re.compile(r"written in ([0-9.]+)s \(budget ([0-9.]+)s\)")


def config(root: Path) -> dict[str, object]:
    """The example's job as its runtime configuration, writing under ``root``."""
    return {
        "name": "binary-classifier",
        "module": "trainer.task",
        "epochs": 20,
        "steps_per_epoch": 16,
        "per_replica_batch": 16,
        "replicas": 2,
        "hosts": 2,
        "learning_rate": 0.01,
        "base_learning_rate": 0.01,
        "mixed_precision": "off",
        "strategy": "auto",
        "keras_backend": "tensorflow",
        "accelerator": "cpu",
        "devices_per_host": 1,
        "backup_dir": str(root / "backup"),
        "tensorboard_dir": str(root / "logs"),
        "export_dir": str(root / "out" / "model"),
    }


def ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    found = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return found


def one_try(grace_s: float) -> tuple[float, float]:
    """Seconds from the notice to the committed backup, and the budget, from the chief's log."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "config.json").write_text(json.dumps(config(root)))
        cluster = {"worker": [f"127.0.0.1:{port}" for port in ports(2)]}
        procs = []
        for index in range(2):
            env = {k: v for k, v in os.environ.items() if not k.startswith(("CLOUDTRAIN_", "TF_CONFIG"))}
            env.update(
                CLOUDTRAIN_ROOT=str(root),
                CLOUDTRAIN_FAULT="preempt@step:20",
                CLOUDTRAIN_GRACE_S=f"{grace_s:g}",
                TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}}),
                TF_CPP_MIN_LOG_LEVEL="2",
                PYTHONPATH=os.pathsep.join([str(ROOT / "entrypoints"), env.get("PYTHONPATH", "")]),
            )
            command = [sys.executable, "-m", "cloudtrain_runtime", "--config", str(root / "config.json")]
            procs.append(subprocess.Popen(command, cwd=EXAMPLE, env=env, stdout=subprocess.PIPE, text=True))
        outputs = [proc.communicate(timeout=300)[0] for proc in procs]
        codes = [proc.returncode for proc in procs]
        found = WRITTEN.search(outputs[0])
        if codes != [RECLAIMED, RECLAIMED] or found is None:
            sys.exit(
                f"the run did not end with the notice's backup (exit codes {codes}):\n{outputs[0][-2000:]}"
            )
        return float(found[1]), float(found[2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--grace", type=float, default=30.0, help="the provider's grace, seconds")
    args = parser.parse_args()
    print(f"{'try':>4} {'backup s':>9} {'budget s':>9} {'ratio':>7}")
    taken = []
    for number in range(1, args.tries + 1):
        seconds, budget = one_try(args.grace)
        taken.append(seconds)
        print(f"{number:>4} {seconds:>9.2f} {budget:>9.1f} {seconds / budget:>7.3f}")
    median = statistics.median(taken)
    print(f"{'med':>4} {median:>9.2f} {budget:>9.1f} {median / budget:>7.3f}  (target: < 1)")


if __name__ == "__main__":
    main()
