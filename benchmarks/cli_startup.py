"""CLI start-up time against bare Python, measured in the same run, as interleaved pairs.

Each round runs ``python -c pass`` before every command, each in a fresh interpreter, so
a load that comes and goes on a shared machine weighs on both sides of a pair alike. For
every command it prints the median wall time, the median of its wall time above the
paired bare Python, the ratio of the medians, and the same "above" in CPU time (user +
system of the process, from ``wait4``): what the command costs whatever the neighbours
do, where the wall time on a busy machine also counts the time spent waiting for a core.
Targets: ``--help`` within 0.1 s of bare Python; every spec command (``validate``,
``plan``, ``render``, ``submit --dry-run``, ``cost``) within 0.25 s: nothing heavy on the
start-up path.

Byte-code caching is left on (``PYTHONDONTWRITEBYTECODE`` is cleared for the commands),
as for an installed cloudtrain; the warm-up round writes the caches.

With ``--instructions`` each command and bare Python run once under valgrind's callgrind
instead, and the table shows the instructions each executed (millions) and their ratio:
a count no neighbour changes, to compare two versions on a busy machine.

    python benchmarks/cli_startup.py [--rounds 9] [--instructions]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

EXAMPLE = str(Path(__file__).resolve().parent.parent / "examples" / "binary_classifier" / "job.yaml")
CLI = [sys.executable, "-m", "cloudtrain"]
BASELINE = [sys.executable, "-c", "pass"]
HELP_TARGET_S = 0.10
SPEC_TARGET_S = 0.25
# name -> (argv, seconds above bare Python it may take)
COMMANDS = {
    "cloudtrain --help": ([*CLI, "--help"], HELP_TARGET_S),
    "cloudtrain validate job.yaml": ([*CLI, "validate", EXAMPLE], SPEC_TARGET_S),
    "cloudtrain plan job.yaml --json": (
        [*CLI, "plan", EXAMPLE, "--provider", "vertex", "--json"],
        SPEC_TARGET_S,
    ),
    "cloudtrain render job.yaml": ([*CLI, "render", EXAMPLE, "--provider", "vertex"], SPEC_TARGET_S),
    "cloudtrain submit --dry-run": (
        [*CLI, "submit", EXAMPLE, "--provider", "sagemaker", "--dry-run"],
        SPEC_TARGET_S,
    ),
    "cloudtrain cost -t 1200@a100": (
        [*CLI, "cost", EXAMPLE, "--throughput", "1200@a100-40gb"],
        SPEC_TARGET_S,
    ),
}


class Sample(NamedTuple):
    """One run of a command: seconds of wall time and of CPU time (user + system)."""

    wall: float
    cpu: float


def run_once(argv: list[str], env: dict[str, str]) -> Sample:
    """Start ``argv``, let it run and exit; its wall and CPU seconds."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}")
    return Sample(wall, usage.ru_utime + usage.ru_stime)


def measure(rounds: int, env: dict[str, str]) -> tuple[dict[str, list[Sample]], dict[str, list[Sample]]]:
    """Per command: its samples, and those of the bare Python run just before each; after a warm-up round."""
    for argv, _ in COMMANDS.values():
        run_once(argv, env)
    bare: dict[str, list[Sample]] = {name: [] for name in COMMANDS}
    times: dict[str, list[Sample]] = {name: [] for name in COMMANDS}
    for _ in range(rounds):
        for name, (argv, _) in COMMANDS.items():
            bare[name].append(run_once(BASELINE, env))
            times[name].append(run_once(argv, env))
    return bare, times


def above(samples: list[Sample], paired: list[Sample], field: str) -> float:
    """The median, over the pairs, of how much longer the command took than bare Python."""
    return statistics.median(
        getattr(one, field) - getattr(base, field) for one, base in zip(samples, paired, strict=True)
    )


def instructions(argv: list[str], env: dict[str, str]) -> int:
    """Instructions ``argv`` executes, counted by valgrind's callgrind (its ``I refs``)."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
        capture_output=True,
        text=True,
        env={**env, "PYTHONHASHSEED": "0"},  # the same hashes, the same dict probes, run after run
        check=True,
    )
    return int(re.search(r"I\s+refs:\s+([\d,]+)", done.stderr).group(1).replace(",", ""))  # type: ignore[union-attr]


def print_instructions(env: dict[str, str]) -> None:
    """One callgrind run per command (after the warm-up that writes the byte-code caches)."""
    for argv, _ in COMMANDS.values():
        run_once(argv, env)
    bare = instructions(BASELINE, env)
    print(f"{'command':<30} {'instructions M':>15} {'above python M':>15} {'ratio':>6}")
    print(f"{'python -c pass (baseline)':<30} {bare / 1e6:>15.0f} {'':>15} {1.0:>6.1f}")
    for name, (argv, _) in COMMANDS.items():
        count = instructions(argv, env)
        print(f"{name:<30} {count / 1e6:>15.0f} {(count - bare) / 1e6:>15.0f} {count / bare:>6.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions with valgrind instead"
    )
    args = parser.parse_args()
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    if args.instructions:
        print_instructions(env)
        return
    bare, times = measure(args.rounds, env)
    baseline = statistics.median(sample.wall for samples in bare.values() for sample in samples)
    print(f"{'command':<30} {'median s':>9} {'above python s':>15} {'ratio':>6} {'cpu above s':>12}  target")
    print(f"{'python -c pass (baseline)':<30} {baseline:>9.3f} {'':>15} {1.0:>6.1f}")
    for name, (_, target) in COMMANDS.items():
        wall_above, cpu_above = above(times[name], bare[name], "wall"), above(times[name], bare[name], "cpu")
        median = statistics.median(sample.wall for sample in times[name])
        verdict = "ok" if wall_above <= target else "OVER"
        print(
            f"{name:<30} {median:>9.3f} {wall_above:>15.3f} {median / baseline:>6.1f} {cpu_above:>12.3f}"
            f"  ≤ {target:.2f} {verdict}"
        )


if __name__ == "__main__":
    main()
