"""The Dockerfiles: pinned bases matching the supported TensorFlow, and the runtime as ENTRYPOINT."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from cloudtrain_runtime.main import parse_args

REPO = Path(__file__).resolve().parents[2]
DOCKERFILES = {"cpu": REPO / "containers" / "cpu.Dockerfile", "gpu": REPO / "containers" / "gpu.Dockerfile"}
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def _instruction(dockerfile: Path, name: str) -> str:
    lines = [line for line in dockerfile.read_text().splitlines() if line.startswith(f"{name} ")]
    assert len(lines) == 1, f"{dockerfile.name} must have exactly one {name}"
    return lines[0][len(name) + 1 :].strip()


def _catalog_tensorflow(kind: str) -> dict[str, str]:
    with (REPO / "sdk" / "cloudtrain" / "catalog" / "images.csv").open(newline="") as f:
        return {row["uri"]: row["tensorflow"] for row in csv.DictReader(f) if row["kind"] == kind}


@pytest.mark.parametrize("kind", sorted(DOCKERFILES))
def test_base_image_is_pinned_to_the_supported_tensorflow(kind: str) -> None:
    base = _instruction(DOCKERFILES[kind], "FROM")
    match = re.fullmatch(r"tensorflow/tensorflow:(\d+\.\d+\.\d+)(-gpu)?", base)
    assert match, f"unpinned or unexpected base image {base!r}"
    assert (match.group(2) == "-gpu") == (kind == "gpu")
    assert _catalog_tensorflow(kind).get(base) == match.group(1)  # a tag the catalog lists
    runtime_pin = next(
        d for d in PYPROJECT["project"]["optional-dependencies"]["runtime"] if d.startswith("tensorflow")
    )
    assert re.search(r"==(\d+\.\d+)", runtime_pin).group(1) == match.group(1).rsplit(".", 1)[0]
    assert metadata.version("tensorflow-cpu").startswith(match.group(1).rsplit(".", 1)[0])


@pytest.mark.parametrize("kind", sorted(DOCKERFILES))
def test_keras_pin_is_the_version_the_runtime_is_tested_with(kind: str) -> None:
    pin = re.search(r'"keras==([\d.]+)"', DOCKERFILES[kind].read_text()).group(1)
    assert pin == metadata.version("keras")


@pytest.mark.parametrize("kind", sorted(DOCKERFILES))
def test_entrypoint_is_the_runtime_console_script(kind: str) -> None:
    entrypoint = json.loads(_instruction(DOCKERFILES[kind], "ENTRYPOINT"))  # exec form: JSON array
    assert entrypoint == ["cloudtrain-runtime"]
    assert PYPROJECT["project"]["scripts"]["cloudtrain-runtime"] == "cloudtrain_runtime.main:main"


def test_sagemakers_train_argument_is_accepted() -> None:
    assert parse_args(["train"]).config is None
    assert parse_args(["train", "--config", "c.json"]).config == "c.json"


def test_module_entry_runs_and_fails_cleanly_without_config(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "CLOUDTRAIN_ROOT": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "cloudtrain_runtime", "train"], capture_output=True, text=True, env=env
    )
    assert done.returncode == 2
    assert done.stderr.startswith("cloudtrain-runtime: error: No runtime configuration found.")
    assert done.stderr.count("\n") == 1  # one line, no traceback
