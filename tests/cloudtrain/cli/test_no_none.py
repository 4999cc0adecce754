"""No "None" reaches a user: what validate, plan and cost print for every bundled example and a CPU project.

A ``None`` in a message is a value the code never had (``catalog/speeds.csv: cpu None``:
the CPU has no relative speed, and none is needed for the accelerator measured on).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO, Result

EXAMPLES = sorted((REPO / "examples").glob("*/job.yaml"))
# The clouds' settings a plan needs, as placeholders (a profile would give them).
CLOUD = {
    "vertex": ("--set", "vertex.project=my-project", "--set", "vertex.storage_root=gs://my-bucket/demo"),
    "sagemaker": (
        "--set",
        "sagemaker.role=arn:aws:iam::123456789012:role/SageMakerTraining",
        "--set",
        "sagemaker.storage_root=s3://my-bucket/demo",
    ),
}
NONE = re.compile(r"\bNone\b")


def commands(job: Path) -> list[tuple[str, ...]]:
    """The spec commands a user runs on ``job``: every provider's plan, the price list, a priced estimate."""
    return [
        ("validate", str(job)),
        ("validate", str(job), "--json"),
        ("plan", str(job)),
        *(("plan", str(job), "--provider", provider, *sets) for provider, sets in CLOUD.items()),
        ("cost", str(job)),
        ("cost", str(job), "-t", "1200@a100-40gb"),
        ("cost", str(job), "-t", "300@cpu"),
    ]


def shown(result: Result) -> list[str]:
    return [line for line in (result.out + result.err).splitlines() if NONE.search(line)]


@pytest.mark.parametrize("job", EXAMPLES, ids=[job.parent.name for job in EXAMPLES])
def test_no_command_prints_none_for_a_bundled_example(job: Path, run_cli: Callable[..., Result]) -> None:
    for args in commands(job):
        result = run_cli(*args)
        assert result.code in (0, 2), (args, result.err)
        assert shown(result) == [], args


def test_no_command_prints_none_for_a_cpu_project(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    # regression: "scaled by relative speed (catalog/speeds.csv: cpu None)"
    assert run_cli("init", str(tmp_path / "cpu-project")).code == 0
    job = tmp_path / "cpu-project" / "job.yaml"
    for args in commands(job):
        result = run_cli(*args)
        assert result.code == 0, (args, result.err)
        assert shown(result) == [], args
    priced = run_cli("cost", str(job), "-t", "300@cpu").out
    assert "300 examples/s on 1 × cpu (--throughput), as measured × devices × eff." in priced
