"""benchmarks/gpu_scaling.py, the prepared run for a lent GPU machine: its commands and its table.

The script's measurements need a GPU; here its dry run shows every command it would run
(through the real CLI, each a shape the spec accepts), and its pieces are checked alone.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from cloudtrain.specfile import load_spec

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_scaling.py"


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_scaling", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_scaling"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_dry_run_shows_doctor_bench_train_compare_and_the_entrypoint_benchmark(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--dry-run", "--cpu", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    commands = [line[2:] for line in done.stdout.splitlines() if line.startswith("$ ")]
    verbs = [
        command.split()[1] if command.startswith("cloudtrain") else Path(command.split()[1]).name
        for command in commands
    ]
    assert verbs == [
        "doctor",
        *(["bench", "submit", "submit", "compare"] * 2),
        "entrypoint_overhead.py",
    ]
    benches = [command for command in commands if command.startswith("cloudtrain bench")]
    assert ["training.mixed_precision=off" in benches[0], "training.mixed_precision=auto" in benches[1]] == [
        True,
        True,
    ]
    submits = [command for command in commands if command.startswith("cloudtrain submit")]
    assert ["resources.per_host=1" in submits[0], "resources.per_host=2" in submits[1]] == [True, True]


def test_every_shape_it_runs_is_a_valid_spec(tmp_path: Path) -> None:
    gpu = script()
    for devices in (1, 8):
        for precision in gpu.PRECISIONS:
            words = gpu.shape(gpu.Machine("h100-80gb", "NVIDIA H100", 8), devices, precision, tmp_path)
            overrides = tuple(words[1::2])
            spec = load_spec(gpu.EXAMPLE, overrides)
            assert (spec.resources.per_host, spec.resources.accelerator) == (devices, "h100-80gb")


@pytest.mark.parametrize(
    ("model", "memory", "name"),
    [
        ("NVIDIA H200", 139.8, "h200-141gb"),
        ("NVIDIA A100-SXM4-40GB", 39.5, "a100-40gb"),  # the A100 of its memory size
        ("NVIDIA A100-SXM4-80GB", 79.2, "a100-80gb"),
        ("Tesla T4", 15.0, "t4"),
        ("NVIDIA A10G", 22.0, "a10g"),
        ("Some Future GPU", 10.0, "cpu"),  # unknown: priced and planned as no accelerator
    ],
)
def test_nvidia_smi_names_become_the_catalogs(model: str, memory: float, name: str) -> None:
    assert script().neutral_name(model, memory) == name


def test_the_table_has_one_line_per_row_and_every_failure(tmp_path: Path) -> None:
    gpu = script()
    run = gpu.Run(tmp_path, dry_run=False)
    run.row("bench 1 × h200-141gb, precision off", "12,345 ex/s", "ceiling 13,000 ex/s")
    run.failures.append("compare-auto: exit 1")
    text = gpu.table(run, gpu.Machine("h200-141gb", "NVIDIA H200", 1))
    assert text.splitlines() == [
        "gpu_scaling on 1 × NVIDIA H200 (h200-141gb)",
        "",
        "bench 1 × h200-141gb, precision off     12,345 ex/s  ceiling 13,000 ex/s",
        "FAILED compare-auto: exit 1",
    ]
