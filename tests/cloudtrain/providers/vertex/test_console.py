"""After ``submit`` and in ``status``: the job's console page and the TensorBoard command, on the fakes."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cloudtrain.providers.fakes.vertex_jobservice import FakeJobService
from tests.conftest import Result

EXAMPLE = str(Path(__file__).resolve().parents[4] / "examples" / "binary_classifier" / "job.yaml")
JOB = re.compile(r"projects/(?P<project>[^/]+)/locations/(?P<region>[^/]+)/customJobs/(?P<number>\d+)")


@pytest.mark.usefixtures("fake_gcs")
def test_submit_and_status_show_the_console_page(
    run_cli: Callable[..., Result], fake_vertex: FakeJobService
) -> None:
    submitted = run_cli("submit", EXAMPLE, "--provider", "vertex")
    assert submitted.code == 0, submitted.err
    match = JOB.fullmatch(submitted.out.strip())
    assert match is not None
    console = (
        f"Console: https://console.cloud.google.com/agent-platform/locations/{match['region']}"
        f"/training/{match['number']}?project={match['project']}"
    )
    assert console in submitted.err.splitlines()
    assert re.search(r"^TensorBoard: tensorboard --logdir gs://\S+$", submitted.err, re.MULTILINE)
    status = run_cli("status", match.group(0))
    assert status.out.splitlines()[0] == "queued (JOB_STATE_PENDING)"
    assert console in status.err.splitlines()
