"""Did scaling pay on this GPU machine? One prepared run, one table.

For a machine lent for minutes: ``cloudtrain doctor``, then for mixed precision off and on
(``auto``: bf16 from Ampere, fp16 on T4/V100) ``cloudtrain bench`` of the example on 1 and
on all GPUs (one host, MirroredStrategy) and a training run on each, put side by side by
``cloudtrain compare``; last, the entrypoint against a hand-written script of the same
model (``benchmarks/entrypoint_overhead.py``, rows (a) and (a0)). Everything runs through
the real CLI on the local provider, as a user would; each step's output is kept under
``--out`` (JSON, the compare PNGs, every log), and one table is printed at the end.

    python benchmarks/gpu_scaling.py [--out DIR] [--epochs 10] [--steps 200] [--pairs 3]
    python benchmarks/gpu_scaling.py --dry-run     # the commands, nothing run
    python benchmarks/gpu_scaling.py --cpu         # on this CPU, 2 emulated devices: checks the script

The machine needs what ``cloudtrain submit`` needs here (``pip install 'cloudtrain[runtime,plot]'``:
TensorFlow with its CUDA libraries, Keras); ``doctor`` comes first and says what is missing.
With one GPU, "all GPUs" is that one: the scaling rows then repeat the 1-GPU ones and compare
is skipped. ``--cpu`` numbers are this machine's CPU, never a GPU's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "binary_classifier" / "job.yaml"
PRECISIONS = ("off", "auto")
CPU_DEVICES = 2
STEP_TIMEOUT_S = 540


@dataclass(frozen=True)
class Machine:
    """What the run is on: the GPU's neutral accelerator name, its model and how many there are."""

    accelerator: str
    model: str
    devices: int


@dataclass
class Run:
    """The commands run so far, their output files, and the table's rows."""

    out: Path
    dry_run: bool
    rows: list[tuple[str, str, str]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def cli(
        self, name: str, *args: str, timeout: float = STEP_TIMEOUT_S
    ) -> subprocess.CompletedProcess[str] | None:
        """``cloudtrain ARGS``; its stdout to ``<out>/<name>.out``, stderr to ``.err``. None on a dry run."""
        return self.command(name, [sys.executable, "-m", "cloudtrain", *args], timeout)

    def command(self, name: str, argv: list[str], timeout: float) -> subprocess.CompletedProcess[str] | None:
        print(f"$ {' '.join(argv[2:] if argv[1:2] == ['-m'] else argv)}", flush=True)
        if self.dry_run:
            return None
        started = time.monotonic()
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=timeout, check=False, cwd=REPO
            )
        except subprocess.TimeoutExpired:
            self.failures.append(f"{name}: over {timeout:.0f} s")
            return None
        (self.out / f"{name}.out").write_text(done.stdout)
        (self.out / f"{name}.err").write_text(done.stderr)
        if done.returncode:
            self.failures.append(f"{name}: exit {done.returncode}, see {self.out / (name + '.err')}")
        print(f"  {name}: exit {done.returncode} in {time.monotonic() - started:.0f} s", flush=True)
        return done

    def row(self, what: str, value: str, detail: str = "") -> None:
        self.rows.append((what, value, detail))


def gpus() -> Machine | None:
    """The GPUs ``nvidia-smi`` lists, named as the catalog names them; None without one."""
    if shutil.which("nvidia-smi") is None:
        return None
    found = subprocess.run(
        ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.splitlines()
    if not found:
        return None
    model, memory = (part.strip() for part in found[0].split(",", 1))
    return Machine(neutral_name(model, float(memory) / 1024), model, len(found))


def neutral_name(model: str, memory_gib: float) -> str:
    """The catalog's accelerator for an ``nvidia-smi`` model name: its family, the closest memory size.

    Example:
    >>> neutral_name("NVIDIA A100-SXM4-80GB", 79.2), neutral_name("Tesla T4", 15.0)
    ('a100-80gb', 't4')
    """
    from cloudtrain import catalog

    family = [
        a for a in catalog.accelerators().values() if a.name.split("-")[0] in model.lower().replace(" ", "")
    ]
    if not family:
        return "cpu"
    return min(family, key=lambda a: abs(a.memory_gb - memory_gib)).name


def shape(machine: Machine, devices: int, precision: str, root: Path | None = None) -> list[str]:
    """The ``--set`` overrides of the example on ``devices`` devices of one host."""
    sets = [
        f"resources.accelerator={machine.accelerator}",
        "resources.hosts=1",
        f"resources.per_host={devices}",
        f"training.mixed_precision={precision}",
    ]
    sets += [f"storage.root={root}"] if root else []
    return [item for value in sets for item in ("--set", value)]


def doctor(run: Run, machine: Machine) -> bool:
    done = run.cli("doctor", "doctor", str(EXAMPLE), *shape(machine, machine.devices, "auto"), "--json")
    if done is None:
        return run.dry_run
    checks = _json(done.stdout, [])
    failed = [c["check"] for c in checks if c.get("status") == "fail"]
    run.row("doctor", "ok" if not failed else "FAIL", ", ".join(failed) or f"{len(checks)} checks")
    return not failed


def bench(run: Run, machine: Machine, precision: str, steps: int) -> None:
    name = f"bench-{precision}"
    args = [
        "bench",
        str(EXAMPLE),
        *shape(machine, machine.devices, precision),
        "--steps",
        str(steps),
        "--json",
    ]
    done = run.cli(name, *args)
    found = _json(done.stdout, {}) if done else {}
    for measured in found.get("runs", []):
        run.row(
            f"bench {measured['replicas']} × {machine.accelerator}, precision {precision}",
            f"{measured['pipeline_examples_per_sec']:,.0f} ex/s",
            f"ceiling {measured['ceiling_examples_per_sec']:,.0f} ex/s, input wait {measured['input_wait']:.0%}",
        )
    if found.get("scaling_efficiency") is not None:
        run.row(
            f"scaling efficiency, precision {precision}",
            f"{found['scaling_efficiency']:.2f}",
            found["scaling"]["verdict"],
        )
    if found.get("precision"):
        run.row(
            f"mixed precision (bench, {precision})",
            found["precision"]["verdict"],
            found["precision"]["detail"],
        )


def train_and_compare(run: Run, machine: Machine, precision: str, epochs: int) -> None:
    counts = sorted({1, machine.devices})
    ids = []
    for devices in counts:
        root = run.out / f"outputs-{precision}-{devices}"
        done = run.cli(
            f"train-{precision}-{devices}",
            "submit",
            str(EXAMPLE),
            *shape(machine, devices, precision, root),
            "--set",
            f"training.epochs={epochs}",
        )
        ids.append(done.stdout.splitlines()[0] if done and done.stdout else f"<run on {devices}>")
    if len(ids) < 2:
        run.row(f"compare, precision {precision}", "skipped", "one GPU: nothing to scale to")
        return
    done = run.cli(
        f"compare-{precision}", "compare", *ids, "--json", "--plot", str(run.out / f"compare-{precision}.png")
    )
    found = _json(done.stdout, {}) if done else {}
    for verdict in found.get("verdicts", []):
        ratios = (
            verdict["speedup_examples_per_sec"],
            verdict["epochs_to_target_ratio"],
            verdict["time_to_target_ratio"],
        )
        shown = " ".join("?" if r is None else f"{r:.2f}×" for r in ratios)
        run.row(
            f"compare {counts[-1]} vs 1 × {machine.accelerator}, precision {precision}",
            verdict["verdict"],
            f"speed-up, epochs, time to target: {shown}",
        )


def overhead(run: Run, pairs: int) -> None:
    argv = [
        sys.executable,
        str(REPO / "benchmarks" / "entrypoint_overhead.py"),
        "--pairs",
        str(pairs),
        "--only",
        "(a",
    ]
    done = run.command("entrypoint-overhead", argv, STEP_TIMEOUT_S)
    for line in (done.stdout if done else "").splitlines():
        if line.startswith("(a"):
            label, numbers = line[:38].strip(), line[38:].split()
            run.row(
                f"entrypoint / script {label.split(')')[0]})",
                f"{numbers[1]}×",
                f"median of {pairs} pairs, min {numbers[0]}, max {numbers[2]}",
            )


def _json(text: str, empty: Any) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return empty


def table(run: Run, machine: Machine) -> str:
    width = max((len(what) for what, _, _ in run.rows), default=10)
    lines = [f"gpu_scaling on {machine.devices} × {machine.model} ({machine.accelerator})", ""]
    lines += [f"{what:<{width}}  {value:>14}  {detail}" for what, value, detail in run.rows]
    lines += [f"FAILED {failure}" for failure in run.failures]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "gpu-scaling-out")))
    parser.add_argument("--epochs", type=int, default=10, help="epochs of each compared training run")
    parser.add_argument("--steps", type=int, default=200, help="bench steps timed per measurement")
    parser.add_argument("--pairs", type=int, default=3, help="A/B pairs of the entrypoint benchmark")
    parser.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    parser.add_argument(
        "--cpu", action="store_true", help=f"run on this CPU with {CPU_DEVICES} emulated devices"
    )
    args = parser.parse_args()
    machine = Machine("cpu", "CPU (emulated devices)", CPU_DEVICES) if args.cpu else gpus()
    if machine is None and args.dry_run:  # what a machine with 2 GPUs would run
        machine = Machine("ACCELERATOR", "GPU", 2)
    if machine is None:
        print("No GPU: nvidia-smi lists none. Use --cpu to check the script on this CPU, or --dry-run.")
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    run = Run(args.out, args.dry_run)
    os.environ["CLOUDTRAIN_LOCAL_HOME"] = str(args.out.resolve() / "local-home")
    if doctor(run, machine):
        for precision in PRECISIONS:
            bench(run, machine, precision, args.steps)
            train_and_compare(run, machine, precision, args.epochs)
        overhead(run, args.pairs)
    if args.dry_run:
        return 0
    text = table(run, machine)
    (args.out / "gpu_scaling.txt").write_text(text + "\n")
    print(text)
    return 1 if run.failures else 0


if __name__ == "__main__":
    sys.exit(main())
