"""A job that waits for capacity, on this machine: ``--fault pending@DURATION`` and the pending limit.

The launcher holds the run in the provider's waiting state before any replica starts; the
pending limit (``provider.pending.wait_to_start``, ``submit --max-pending``) cancels a job
that is still waiting, and lets one that starts in time train. The first tests run the
launcher with stand-in replicas (``test_local_launcher``); the last one trains for real
through the CLI, as a user would type it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from cloudtrain.errors import ProviderError
from cloudtrain.provider import JobStatus
from cloudtrain.provider.failures import Reason
from cloudtrain.provider.pending import wait_to_start
from cloudtrain.providers.local.job import LocalJob
from cloudtrain.providers.local.processes import ProcessRecord
from cloudtrain.providers.local.records import LAUNCHER_FILE, STARTED_FILE, read_record
from tests.cloudtrain.providers.test_local_launcher import _submit


def launcher_alive(job: LocalJob) -> bool:
    record = read_record(job.run_dir / LAUNCHER_FILE, ProcessRecord.from_json)
    return record is not None and record.is_alive()


def test_a_job_still_pending_at_the_limit_is_cancelled_with_reason_capacity(
    tmp_path: Path, home: Path
) -> None:
    job = _submit(tmp_path, fault="pending@6s")
    seen: list[JobStatus] = []
    final = wait_to_start(job, limit_s=2, poll_s=0.2, on_status=seen.append)
    waiting = next(status for status in seen if status.pending_reason)  # the first is the launcher starting
    assert (waiting.state, waiting.provider_state) == ("pending", "PENDING")
    assert waiting.pending_reason == "waiting for capacity (--fault pending@6s)"
    assert waiting.pending_since is not None
    assert final.state == "cancelled"
    assert final.failure is not None and final.failure.reason == Reason.CAPACITY
    assert "did not start within 2s: waiting for capacity (--fault pending@6s)" in final.failure.message
    assert final.failure.code == "limits.max_pending"
    # nothing left running, nothing ever started
    assert not launcher_alive(job)
    assert not (job.run_dir / STARTED_FILE).exists()
    assert not any("hello from" in line for line in job.logs())
    assert job.status().state == "cancelled"  # what the run records, read again


def test_a_job_that_starts_within_the_limit_runs_and_showed_pending_before(
    tmp_path: Path, home: Path
) -> None:
    job = _submit(tmp_path, fault="pending@3s")
    before = job.wait(poll_s=0.1, until=lambda now: bool(now.pending_reason))
    assert (before.state, before.provider_state) == ("pending", "PENDING")
    assert job.summary().started is None  # waiting: not started
    started = wait_to_start(job, limit_s=60, poll_s=0.2)
    assert started.state in ("running", "succeeded")
    final = job.wait(poll_s=0.2)
    assert final.state == "succeeded"
    assert final.pending_since is None and final.failure is None
    summary = job.summary()
    assert summary.started is not None and summary.started >= before.pending_since  # type: ignore[operator]
    # the pending fault is the launcher's own: no replica saw it
    assert not any("dying" in line for line in job.logs())


def test_an_emulated_vertex_flex_job_waits_in_vertex_words(tmp_path: Path, home: Path) -> None:
    from cloudtrain import api
    from cloudtrain.providers import local
    from cloudtrain.specfile import load_spec

    example = Path(__file__).resolve().parents[3] / "examples" / "binary_classifier" / "job.yaml"
    spec = load_spec(example, ["resources.accelerator=l4", "resources.capacity=flex", "resources.hosts=1"])
    request = local.Local(emulate="vertex", fault="pending@5s").render(
        api.plan(spec, "vertex")
        .with_bundle("gs://my-bucket/binary-classifier/code/0123.tar.gz")
        .with_run("r1")
    )
    assert request["waiting"] == {
        "state": "queued",
        "provider_state": "JOB_STATE_PENDING",
        "reason": "waiting for flex-start capacity (Dynamic Workload Scheduler)",
    }
    assert request["fault"] == "pending@5s"


@pytest.mark.multiprocess
@pytest.mark.timeout(600)
@pytest.mark.usefixtures("private_tmpdir")
def test_submit_max_pending_cancels_a_waiting_job_and_lets_a_prompt_one_train(project: Path) -> None:
    def submit(*args: str) -> subprocess.CompletedProcess[str]:
        command = [
            sys.executable,
            "-m",
            "cloudtrain",
            "submit",
            str(project / "job.yaml"),
            "--set",
            "resources.hosts=1",
        ]
        return subprocess.run([*command, *args], capture_output=True, text=True, check=False)

    cancelled = submit("--fault", "pending@6s", "--max-pending", "2s")
    assert cancelled.returncode == 1, cancelled.stderr
    assert re.search(
        r"^pending \(PENDING\): waiting for capacity \(--fault pending@6s\), since ", cancelled.stderr, re.M
    )
    assert "Why: capacity: It did not start within 2s: waiting for capacity" in cancelled.stderr
    assert cancelled.stderr.rstrip().endswith("capacity mode (limits.max_pending)")
    gone = LocalJob(cancelled.stdout.strip())
    assert gone.status().state == "cancelled" and not launcher_alive(gone)

    trained = submit("--fault", "pending@4s", "--max-pending", "5m")
    assert trained.returncode == 0, trained.stderr
    assert "pending (PENDING): waiting for capacity (--fault pending@4s)" in trained.stderr
    assert re.search(r"^\[chief-0\] epoch 3/3 ", trained.stderr, re.M)


def test_status_says_why_and_since_when_a_job_waits(tmp_path: Path, home: Path, run_cli: Any) -> None:
    job = _submit(tmp_path, fault="pending@30s")
    job.wait(poll_s=0.1, until=lambda now: bool(now.pending_reason))
    shown = run_cli("status", job.id)
    assert shown.out.splitlines()[:2] == [
        "pending (PENDING)",
        f"pending: waiting for capacity (--fault pending@30s), since {_local(job.status().pending_since)}",
    ]
    as_json = json.loads(run_cli("status", job.id, "--json").out)
    assert as_json["pending_reason"] == "waiting for capacity (--fault pending@30s)"
    assert datetime.fromisoformat(as_json["pending_since"]) == job.status().pending_since
    job.cancel()  # a cancel during the wait ends it at once, nothing started
    assert job.status().state == "cancelled" and not (job.run_dir / STARTED_FILE).exists()


def _local(moment: datetime | None) -> str:
    assert moment is not None
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            ("--max-pending", "soon"),
            "--max-pending: 'soon' must be a duration like 90m, 24h or 2d, e.g. 30m; 0 waits for ever.",
        ),
        (
            ("--max-pending", "9" * 400),
            "--max-pending: '9999999999999999999999999999999999999999' must have at most 18 digits, e.g. 30m; 0 waits for ever.",
        ),
        (
            ("--max-pending", "-5s"),
            "--max-pending: '-5s' must be a duration like 90m, 24h or 2d, e.g. 30m; 0 waits for ever.",
        ),
        (("--fault", "pending@400d"), "--fault: 'pending@400d' is not a fault."),
        (
            ("--queue", "team a", "--provider", "kubernetes"),
            "resources.capacity.name: 'team a' is not a LocalQueue name",
        ),
    ],
)
def test_bad_capacity_options_are_one_line_and_exit_2(
    run_cli: Any, example_job: Path, args: tuple[str, ...], error: str
) -> None:
    result = run_cli("submit", str(example_job), "--dry-run", *args)
    assert result.code == 2, result.err
    assert result.errors[0].startswith(error)
    assert "Traceback" not in result.err


def test_a_hostile_pending_record_is_one_error_naming_the_file(tmp_path: Path, home: Path) -> None:
    job = _submit(tmp_path, fault="pending@30s")
    job.cancel()
    status = job.run_dir / "status.json"
    record = json.loads(status.read_text())
    for since in ("not a time", "2026-01-01T12:00:00", 12):  # not ISO, no zone, not text
        status.write_text(json.dumps({**record, "pending_since": since, "pending_reason": "x"}))
        with pytest.raises(ProviderError, match=r"cloudtrain cannot trust .*status.json"):
            job.status()
