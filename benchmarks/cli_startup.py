"""CLI start-up time against bare Python, measured in the same run.

Runs each command N times in a fresh interpreter and prints the median wall time,
the time above ``python -c pass`` and the ratio. Target: under 0.25 s above bare
Python for ``--help`` and ``plan --json`` (nothing heavy on the start-up path).

    python benchmarks/cli_startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "binary_classifier" / "job.yaml"
CLI = [sys.executable, "-m", "cloudtrain"]
COMMANDS = {
    "python -c pass (baseline)": [sys.executable, "-c", "pass"],
    "cloudtrain --help": [*CLI, "--help"],
    "cloudtrain validate job.yaml": [*CLI, "validate", str(EXAMPLE)],
    "cloudtrain plan job.yaml --json": [*CLI, "plan", str(EXAMPLE), "--provider", "vertex", "--json"],
}
TARGET_S = 0.25


def median_wall_time(argv: list[str], runs: int) -> float:
    """Median seconds for ``argv`` to start, run and exit, after one warm-up run."""
    subprocess.run(argv, check=True, capture_output=True)
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    results = {name: median_wall_time(argv, runs) for name, argv in COMMANDS.items()}
    baseline = results["python -c pass (baseline)"]
    print(f"{'command':<34} {'median s':>9} {'above python s':>15} {'ratio':>7}  target")
    for name, seconds in results.items():
        above = seconds - baseline
        verdict = "" if name.startswith("python") else ("ok" if above < TARGET_S else "OVER")
        print(f"{name:<34} {seconds:>9.3f} {above:>15.3f} {seconds / baseline:>7.1f}  {verdict}")


if __name__ == "__main__":
    main()
