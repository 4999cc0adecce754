"""The local launcher with real processes: streaming, restart on a death, give-up, cancel, attach.

The replicas here run a small real script instead of the TensorFlow runtime, so these
tests take seconds; ``test_local_training.py`` runs the real runtime. The script plays
a replica honestly: it reads TF_CONFIG and CLOUDTRAIN_FAULT and, like a surviving MWMS
worker whose peer died, blocks forever once a fault is injected, so the run only
recovers if the launcher stops the survivors itself.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cloudtrain import api
from cloudtrain.api import plan
from cloudtrain.bundle import Bundle
from cloudtrain.errors import JobNotFoundError
from cloudtrain.planning import Plan
from cloudtrain.provider import Reason
from cloudtrain.providers import local
from cloudtrain.providers.local.job import LocalJob
from cloudtrain.providers.local.launcher import HEARTBEAT_S, first_failure
from cloudtrain.providers.local.processes import is_running
from cloudtrain.spec import JobSpec
from tests.conftest import Result

pytestmark = pytest.mark.timeout(120)

# What a finished run folder holds: the launcher's records, no host folders.
RUN_RECORDS = [
    "launcher.log",
    "launcher.pid",
    "output.log",
    "output.times",
    "request.json",
    "started",
    "status.json",
]

REPLICA_SCRIPT = """\
import json, os, pathlib, signal, sys, time
task = json.loads(os.environ["TF_CONFIG"])["task"]
me = f"{task['type']}:{task['index']}"
root = pathlib.Path(os.environ["CLOUDTRAIN_ROOT"])
print("hello from", me, "pid", os.getpid(), "gcs linked", (root / "gcs").is_symlink())
fault = os.environ.get("CLOUDTRAIN_FAULT", "")
if fault.startswith((me + "@", "spot@")):
    print("dying", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
if fault or os.environ.get("MODE") == "hang":
    time.sleep(600)
if os.environ.get("MODE") == "fail":
    sys.exit(3)
if os.environ.get("MODE", "").startswith("exit:") and me == "chief:0":
    sys.exit(int(os.environ["MODE"].removeprefix("exit:")))
if os.environ.get("MODE") == "crash" and me == "worker:0":
    os.kill(os.getpid(), signal.SIGKILL)
if os.environ.get("MODE", "").startswith("exported"):  # the chief records a verified export
    config = json.loads(os.environ["CLOUDTRAIN_CONFIG"])
    export = pathlib.Path(config["export_dir"])
    marker = export.parent / "cloudtrain-complete.json"
    if me == "chief:0":
        export.mkdir(parents=True, exist_ok=True)
        (export / "saved_model.pb").write_bytes(b"")
        run = os.environ.get("MARKER_RUN", config["run_id"])
        marker.write_text(json.dumps({"run": run, "export": str(export)}))
        print("exported", flush=True)
    if os.environ["MODE"] == "exported-slow-exit":  # every replica is slow to exit after it
        time.sleep(600)
    if me != "chief:0":  # then a worker dies
        while not marker.exists():
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGKILL)
if os.environ.get("MODE") == "chatty":  # a line every 0.1 s, as training prints progress
    while True:
        print("tick", flush=True)
        time.sleep(0.1)
print("done", me)
"""


def stop_runs(home: Path) -> None:
    """Cancel whatever a failing test left running, so no replica outlives its test."""
    for run in sorted((home / "runs").glob("*")):
        job = local.provider.attach(f"local:{run.name}")
        job.cancel()
        job.wait(poll_s=0.2)


def _submit(
    tmp_path: Path,
    *,
    fault: str | None = None,
    env: dict[str, str] | None = None,
    max_restarts: int = 3,
    restarts: dict[str, Any] | None = None,
    max_runtime: str = "1h",
) -> LocalJob:
    """Submit a 2-host plain local job whose replicas run REPLICA_SCRIPT."""
    return local.provider.submit(
        *_prepared(
            tmp_path,
            fault=fault,
            env=env,
            max_restarts=max_restarts,
            restarts=restarts,
            max_runtime=max_runtime,
        )
    )


def _prepared(
    tmp_path: Path,
    *,
    fault: str | None = None,
    env: dict[str, str] | None = None,
    max_restarts: int = 3,
    restarts: dict[str, Any] | None = None,
    max_runtime: str = "1h",
) -> tuple[Plan, dict[str, Any], Bundle]:
    """What ``_submit`` submits: the plan, the request (replicas running REPLICA_SCRIPT) and the bundle."""
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    (project / "replica.py").write_text(REPLICA_SCRIPT)
    spec = JobSpec(
        name="launcher-test",
        code={"module": "trainer.task", "source_dir": str(project)},
        resources={"hosts": 2},
        storage={"root": str(tmp_path / "outputs")},
        limits={"max_runtime": max_runtime},
    )
    planned, packed = api.pack_code(plan(spec, "local").with_run("r1"))
    request = local.with_fault(local.render(planned), fault)
    for replica in request["replicas"]:
        replica["argv"] = [sys.executable, str(project / "replica.py")]
        replica["env"].update(env or {})
    request["restarts"]["host"]["limit"] = max_restarts
    request["restarts"].update(restarts or {})
    return planned, request, packed


def test_a_run_streams_prefixed_lines_and_ends_succeeded(tmp_path: Path, home: Path) -> None:
    job = _submit(tmp_path)
    final = job.wait(poll_s=0.2)
    lines = list(job.logs())
    assert final.state == "succeeded", lines
    assert any(
        line.startswith("[chief-0] hello from chief:0") and "gcs linked True" in line for line in lines
    )
    assert "[worker-0] done worker:0" in lines
    assert lines[-1].startswith("[cloudtrain] Job succeeded.")
    # the bundle was "uploaded" under storage.root/code, named by its content hash
    assert [p.name for p in (tmp_path / "outputs" / "code").iterdir()] == [
        Path(job.request["upload"]["target"]).name
    ]
    # host folders, like cloud VMs' disks, do not outlive the job
    assert sorted(p.name for p in job.run_dir.iterdir()) == RUN_RECORDS


def test_a_dead_replica_stops_the_others_and_the_set_restarts_once(tmp_path: Path, home: Path) -> None:
    job = _submit(tmp_path, fault="worker:0@epoch:1")
    final = job.wait(poll_s=0.2)
    lines = list(job.logs())
    assert final.state == "succeeded", lines
    assert "[worker-0] dying" in lines
    assert "[cloudtrain] Replica worker-0 died (killed by SIGKILL). Stopping the other replicas." in lines
    assert (
        "[cloudtrain] Restarting all replicas (host restart 1 of 3: the local provider restarts the set "
        "up to 3 times)." in lines
    )
    # the fault is injected on the first attempt only: each replica finishes exactly once
    assert lines.count("[chief-0] done chief:0") == 1
    assert lines.count("[worker-0] done worker:0") == 1
    assert lines[-1] == "[cloudtrain] Job succeeded after 1 restart. All 2 replicas exited 0."


def test_a_run_past_its_max_runtime_is_stopped_with_nothing_left_running(tmp_path: Path, home: Path) -> None:
    # regression: limits.max_runtime was planned and printed, and a hung run trained on for ever
    job = _submit(tmp_path, env={"MODE": "hang"}, max_runtime="2s")
    final = job.wait(poll_s=0.2)
    lines = list(job.logs())
    assert (final.state, final.provider_state) == ("failed", "MAX_RUNTIME_EXCEEDED"), lines
    assert (
        final.detail
        == "stopped: limits.max_runtime (2s) reached; raise limits.max_runtime, or make the job faster."
    )
    assert final.failure is not None and (final.failure.reason, final.failure.code) == (
        Reason.CONFIGURATION,
        "max_runtime",
    )
    pids = [int(line.split(" pid ")[1].split()[0]) for line in lines if " pid " in line]
    assert len(pids) == 2 and not any(is_running(pid) for pid in pids)
    assert not any("Restarting" in line for line in lines)  # a limit is not a loss to recover from
    assert sorted(p.name for p in job.run_dir.iterdir()) == RUN_RECORDS


def test_a_run_that_succeeded_says_where_its_model_stays(tmp_path: Path, home: Path) -> None:
    # regression: an emulated run's last word on the model was export=<run>/hosts/chief-0/gcs/..., a folder
    # removed at the end; the model is where the request's outputs say (the stand-in bucket)
    job = _submit(tmp_path)
    assert job.wait(poll_s=0.2).state == "succeeded"
    assert list(job.logs())[-2] == f"[cloudtrain] Model: {job.request['outputs']['model']}"
    assert not (job.run_dir / "hosts").exists()


def test_a_relative_local_home_is_taken_from_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # regression: every run failed in the replica, which opens its root and bundle from other folders
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", "relative-home")
    job = _submit(tmp_path)
    try:
        assert job.wait(poll_s=0.2).state == "succeeded", list(job.logs())
        root = job.request["replicas"][0]["env"]["CLOUDTRAIN_ROOT"]
        assert root.startswith(f"{tmp_path}/relative-home/runs/")
        assert local.provider.attach(job.id).run_dir == tmp_path / "relative-home" / "runs" / job.run_dir.name
    finally:
        stop_runs(tmp_path / "relative-home")


def test_a_replica_lost_after_the_chiefs_verified_export_does_not_restart_the_run(
    tmp_path: Path, home: Path
) -> None:
    job = _submit(tmp_path, env={"MODE": "exported"})
    final = job.wait(poll_s=0.2)
    lines = list(job.logs())
    assert final.state == "succeeded", lines
    assert not any("Restarting" in line for line in lines)
    assert (
        "[cloudtrain] The chief's export is complete and verified; replica worker-0 died afterwards "
        "(killed by SIGKILL). Not restarting."
    ) in lines


def test_another_runs_completion_marker_does_not_stop_a_restart(tmp_path: Path, home: Path) -> None:
    job = _submit(tmp_path, env={"MODE": "exported", "MARKER_RUN": "an-earlier-run"}, max_restarts=1)
    final = job.wait(poll_s=0.2)
    lines = list(job.logs())
    assert final.state == "failed", lines
    assert any(
        line.startswith("[cloudtrain] Restarting all replicas (host restart 1 of 1:") for line in lines
    )


def test_a_replica_killed_on_every_attempt_fails_the_job_at_the_restart_limit(
    tmp_path: Path, home: Path
) -> None:
    job = _submit(tmp_path, env={"MODE": "crash"}, max_restarts=1)
    final = job.wait(poll_s=0.2)
    lines = list(job.logs())
    assert final.state == "failed"
    assert final.detail == "Replica worker-0 died (killed by SIGKILL). Gave up after 1 restart."
    assert sum("hello from worker:0" in line for line in lines) == 2
    # a lost host, in every provider's words: the machine was taken, the run may resume
    assert final.failure is not None
    assert (final.failure.reason, final.failure.code) == (Reason.PREEMPTED, "killed by SIGKILL")


def test_a_replica_that_exits_75_after_the_notice_is_restarted_as_a_reclaim(
    tmp_path: Path, home: Path
) -> None:
    job = _submit(tmp_path, env={"MODE": "exit:75"}, max_restarts=1)
    final = job.wait(poll_s=0.2)
    lines = list(job.logs())
    assert final.state == "failed"
    assert final.detail == (
        "Replica chief-0 was reclaimed (exit 75: it got the notice and backed up its step, or its hang watchdog "
        "found no step progress). Gave up after 1 restart."
    )
    assert any(
        line.startswith("[cloudtrain] Restarting all replicas (host restart 1 of 1:") for line in lines
    )
    assert final.failure is not None
    assert (final.failure.reason, final.failure.code) == (Reason.PREEMPTED, "exit 75")


def test_a_lost_host_is_not_restarted_where_the_request_allows_no_restart(tmp_path: Path, home: Path) -> None:
    # what an emulated SageMaker request without RetryStrategy says (sagemaker.emulate.restarts)
    rule = {"limit": 0, "rule": "the request has no RetryStrategy"}
    job = _submit(tmp_path, fault="worker:0@epoch:1", restarts={"host": rule})
    final = job.wait(poll_s=0.2)
    lines = list(job.logs())
    assert final.state == "failed", lines
    assert "[cloudtrain] Not restarting: the request has no RetryStrategy." in lines
    assert not any("Restarting" in line for line in lines)


def test_a_spot_interruption_kills_every_replica_and_restarts_by_the_spot_rule(
    tmp_path: Path, home: Path
) -> None:
    no_host_restart = {"limit": 0, "rule": "the request has no RetryStrategy"}
    spot = {"limit": 10, "rule": "managed spot training resumes until MaxWaitTimeInSeconds"}
    job = _submit(tmp_path, fault="spot@epoch:1", restarts={"host": no_host_restart, "spot": spot})
    final = job.wait(poll_s=0.2)
    lines = list(job.logs())
    assert final.state == "succeeded", lines
    assert sum(line.endswith("] dying") for line in lines) == 2  # the chief and the worker
    assert any(", spot interruption). Stopping the other replicas." in line for line in lines)
    assert (
        "[cloudtrain] Restarting all replicas (spot restart 1 of 10: managed spot training resumes "
        "until MaxWaitTimeInSeconds)." in lines
    )


def test_a_replica_that_exits_with_an_error_fails_the_job_without_a_restart(
    tmp_path: Path, home: Path
) -> None:
    job = _submit(tmp_path, env={"MODE": "fail"})
    final = job.wait(poll_s=0.2)
    lines = list(job.logs())
    assert final.state == "failed"
    assert final.detail == "Replica chief-0 failed (exit 3)."
    assert not any("Restarting" in line for line in lines)
    assert final.failure is not None
    assert (final.failure.reason, final.failure.code) == (Reason.USER_CODE, "exit 3")


def test_cancel_from_another_handle_stops_every_replica(tmp_path: Path, home: Path) -> None:
    job = _submit(tmp_path, env={"MODE": "hang"})
    pids = _replica_pids(job, count=2)
    local.provider.attach(job.id).cancel()
    final = job.wait(poll_s=0.2)
    assert final.state == "cancelled"
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_killed_launcher_leaves_its_replicas_running_and_cancel_stops_them_and_tidies(
    tmp_path: Path, home: Path
) -> None:
    # regression: status said failed while the orphaned replicas trained on, and cancel left hosts/ behind
    job = _submit(tmp_path, env={"MODE": "hang"})
    pids = _replica_pids(job, count=2)
    _kill_launcher(job)
    now = job.status()
    assert (now.state, now.provider_state) == ("running", "LAUNCHER_GONE")
    assert "replicas chief-0, worker-0 still run unsupervised" in now.detail
    assert now.detail.endswith(f"Stop them with: cloudtrain cancel {job.id}")
    assert job.summary().ended is None
    job.cancel()
    assert not any(is_running(pid) for pid in pids)  # cancel returns once they are gone
    final = job.status()
    assert (final.state, final.provider_state) == ("cancelled", "CANCELLED")
    assert final.detail.startswith("Cancelled by the user after the local launcher died (last seen alive at ")
    assert final.detail.endswith("stopped chief-0, worker-0.")
    assert sorted(p.name for p in job.run_dir.iterdir()) == RUN_RECORDS


def test_a_killed_launcher_whose_replicas_died_too_ended_when_it_was_last_seen_alive(
    tmp_path: Path, home: Path, run_cli: Callable[..., Result]
) -> None:
    # regression: the end came from status.json, written when the attempt started: a duration of 0.0 s
    job = _submit(tmp_path, env={"MODE": "chatty"})
    _replica_pids(job, count=2)
    time.sleep(2.5)
    killed = _kill_launcher(job)
    final = job.wait(poll_s=0.2)  # each replica dies at its next line: the pipe it wrote to is gone
    assert (final.state, final.provider_state) == ("failed", "LAUNCHER_GONE")
    assert "(last seen alive at " in final.detail
    described = job.summary()
    assert described.ended is not None and described.duration_s is not None
    assert killed - HEARTBEAT_S - 0.5 <= described.ended.timestamp() <= killed  # last seen alive
    assert described.started is not None and described.duration_s > 1.0  # it ran for seconds, not 0.0
    cancelled = run_cli("cancel", job.id)  # nothing runs: the end stays what it was, and the host folders go
    assert (cancelled.code, cancelled.err) == (
        0,
        f"{job.id} already finished: failed (LAUNCHER_GONE): {final.detail} Nothing to cancel.\n",
    )
    assert job.status() == final
    assert job.summary().ended == described.ended
    assert sorted(p.name for p in job.run_dir.iterdir()) == RUN_RECORDS


def _kill_launcher(job: LocalJob) -> float:
    """SIGKILL the run's launcher, as the OOM killer would; when it was killed."""
    pid = json.loads((job.run_dir / "launcher.pid").read_text())["pid"]
    os.kill(pid, signal.SIGKILL)
    killed = time.time()
    _wait_until_gone(pid)
    return killed


def test_a_cancel_after_the_chiefs_verified_export_records_the_run_succeeded(
    tmp_path: Path, home: Path
) -> None:
    # regression: a run that trained and exported was recorded cancelled while its marker said complete
    job = _submit(tmp_path, env={"MODE": "exported-slow-exit"})
    for line in job.logs(follow=True):
        if line == "[chief-0] exported":
            break
    job.cancel()
    final = job.status()
    assert (final.state, final.detail) == (
        "succeeded",
        "The chief's export was complete and verified when the cancel stopped the replicas.",
    )


def test_a_cancel_before_the_export_records_the_run_cancelled(tmp_path: Path, home: Path) -> None:
    # the control for the test above: without a verified export, the cancel is what happened
    job = _submit(tmp_path, env={"MODE": "exported-slow-exit", "MARKER_RUN": "an-earlier-run"})
    for line in job.logs(follow=True):
        if line == "[chief-0] exported":
            break
    job.cancel()
    assert job.status().state == "cancelled"


def _wait_until_gone(pid: int) -> None:
    """Orphans are reaped by init, so an ended one may linger as a zombie for a moment."""
    while is_running(pid):
        time.sleep(0.05)


def _replica_pids(job: LocalJob, count: int) -> list[int]:
    pids: list[int] = []
    for line in job.logs(follow=True):
        if " hello from " in line:
            pids.append(int(line.split(" pid ")[1].split()[0]))
        if len(pids) == count:
            return pids
    raise AssertionError("the replicas never started")


def test_status_and_logs_work_from_the_cli_by_id(
    tmp_path: Path, home: Path, run_cli: Callable[..., Result]
) -> None:
    job = _submit(tmp_path)
    job.wait(poll_s=0.2)
    status = run_cli("status", job.id, "--json")
    assert status.code == 0, status.err
    assert json.loads(status.out)["state"] == "succeeded"
    assert "[worker-0] done worker:0" in run_cli("logs", job.id).out.splitlines()


def test_attach_to_an_unknown_run_names_the_folder_it_looked_in(home: Path) -> None:
    with pytest.raises(JobNotFoundError, match=r"No local run 'local:nope' under .*runs"):
        local.provider.attach("local:nope")


def test_a_death_by_signal_is_blamed_before_the_error_exit_it_caused() -> None:
    # regression: a survivor that fails on "connection reset" must not turn a lost host into a job error
    procs = {
        "chief-0": subprocess.Popen(
            [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]
        ),
        "worker-0": subprocess.Popen([sys.executable, "-c", "raise SystemExit(1)"]),
    }
    for proc in procs.values():
        proc.wait()
    assert first_failure(procs) == (-signal.SIGKILL, "chief-0")


# Concurrent submits and damaged records, with the real launcher.


def test_two_identical_submits_at_the_same_moment_make_one_run_and_both_return_it(
    tmp_path: Path, home: Path
) -> None:
    # regression: two runs, sharing one storage root, with no lock
    prepared = _prepared(tmp_path, env={"MODE": "hang"})
    start = threading.Barrier(2)
    jobs: list[LocalJob] = []

    def racer() -> None:
        start.wait()
        jobs.append(local.provider.submit(*prepared))

    threads = [threading.Thread(target=racer) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(jobs) == 2 and jobs[0].id == jobs[1].id
    assert [path.name for path in (home / "runs").iterdir()] == [jobs[0].run_dir.name]


def test_the_same_run_after_it_succeeded_is_returned_and_after_it_failed_retried(
    tmp_path: Path, home: Path
) -> None:
    first = _submit(tmp_path)
    assert first.wait(poll_s=0.2).state == "succeeded"
    assert _submit(tmp_path).id == first.id  # the same request and run id: that run, attached
    failed = _submit(tmp_path, env={"MODE": "fail"})
    assert failed.wait(poll_s=0.2).state == "failed"
    assert _submit(tmp_path, env={"MODE": "fail"}).id != failed.id  # a failed run is retried


@pytest.mark.parametrize(
    "damage",
    [
        lambda run: (run / "request.json").unlink(),  # deleted
        lambda run: (run / "request.json").write_text('{"replicas": ['),  # truncated
        lambda run: (run / "status.json").write_bytes(b"\x00\x00"),  # a torn block
    ],
    ids=["request-deleted", "request-truncated", "status-torn"],
)
def test_a_running_job_with_damaged_records_is_cancelled_from_its_process_records(
    tmp_path: Path, home: Path, run_cli: Callable[..., Result], damage: Callable[[Path], object]
) -> None:
    # regression: a running job whose request.json was deleted could no longer be cancelled
    job = _submit(tmp_path, env={"MODE": "hang"})
    pids = _replica_pids(job, count=2)
    damage(job.run_dir)
    result = run_cli("cancel", job.id)
    assert (result.code, result.err) == (0, f"Cancelled {job.id}.\n")
    assert not any(is_running(pid) for pid in pids)
    assert json.loads((job.run_dir / "status.json").read_text())["state"] == "cancelled"
    assert not (job.run_dir / "hosts").exists()


def test_logs_since_starts_at_the_first_line_written_since_then(tmp_path: Path, home: Path) -> None:
    # regression: `logs --since 1s` printed every line of a local run
    job = _submit(tmp_path, env={"MODE": "chatty"})
    _replica_pids(job, count=2)
    time.sleep(1.0)
    since = datetime.now(UTC)
    time.sleep(0.5)
    job.cancel()
    everything, recent = list(job.logs()), list(job.logs(since=since))
    assert "[chief-0] tick" in recent and recent == everything[-len(recent) :]
    assert not any(" hello from " in line for line in recent)  # printed before `since`
    assert len(recent) < len(everything) - 10
