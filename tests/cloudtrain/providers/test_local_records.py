"""A local run's records are believed only after checks: ids, corrupt files, recycled pids.

The processes here are real (``sleep``, ``true``); nothing stands in for ``os.kill``. A
pid is made to look recycled by writing a live, unrelated process's pid with a token
(boot id, start time) it does not have, which is what a record looks like after the
recorded process ended and the system handed its pid to another.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cloudtrain.errors import JobNotFoundError, ProviderError
from cloudtrain.messages import quote
from cloudtrain.outputs import Outputs
from cloudtrain.provider import Reason
from cloudtrain.providers import local
from cloudtrain.providers.local import failures, run
from cloudtrain.providers.local.job import LocalJob, run_dir_for
from cloudtrain.providers.local.processes import ProcessRecord, identify
from cloudtrain.providers.local.records import parse_status, read_record, write_record
from tests.conftest import Result

pytestmark = pytest.mark.timeout(60)

RUN = "demo-20260101-120000-0a1b"
JOB_ID = f"local:{RUN}"
OUTPUTS = dict.fromkeys(Outputs.names(), "/nowhere")
NO_RESTART = {"limit": 0, "rule": "none allowed"}
REQUEST = {"replicas": [{"name": "chief-0"}], "outputs": OUTPUTS, "restarts": {"host": NO_RESTART}}
RUNNING = {"state": "running", "provider_state": "RUNNING (attempt 1 of 1)", "detail": ""}
TICK_S = 0.01
# Long enough for a signal, had one been sent, to have ended the process.
SIGNAL_SETTLE_S = 0.3


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dead: ProcessRecord) -> Path:
    """A run whose launcher has died: request.json, a running status.json, a stale launcher.pid."""
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path / "home"))
    folder = tmp_path / "home" / "runs" / RUN
    folder.mkdir(parents=True)
    write_record(folder / "request.json", REQUEST)
    write_record(folder / "status.json", RUNNING)
    write_record(folder / "launcher.pid", dead.to_json())
    return folder


@pytest.fixture
def dead() -> ProcessRecord:
    """The record of a process that has ended, so its pid is free to be handed out again."""
    proc = subprocess.Popen(["true"])
    record = ProcessRecord.of(proc.pid)  # running, or a zombie until reaped: identifiable either way
    proc.wait()
    # Start times count clock ticks (1/100 s): any process started from here on has a later one,
    # as the next owner of a recycled pid always has.
    time.sleep(TICK_S * 3)
    return record


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated process leading its own group, as the new owner of a recycled pid would."""
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


def _still_alive(proc: subprocess.Popen[bytes]) -> bool:
    time.sleep(SIGNAL_SETTLE_S)
    return proc.poll() is None


def _pid_record(pid: Any, **changes: Any) -> dict[str, Any]:
    return {"pid": pid, "pgid": pid, "boot_id": "b", "start_time": "1", **changes}


def _json(record: dict[str, Any], **changes: Any) -> bytes:
    return json.dumps({**record, **changes}).encode()


# Recycled pids and stale records.


@pytest.mark.parametrize(
    "forge",
    [
        # the old token of a process that ended, with the pid now held by another
        lambda dead, live: dataclasses.replace(dead, pid=live.pid, pgid=live.pgid),
        # the right boot, another start time: the pid was recycled since
        lambda dead, live: dataclasses.replace(live, start_time=str(int(live.start_time) + 1)),
        # the right start time, another boot id: a record from before a reboot
        lambda dead, live: dataclasses.replace(live, boot_id="00000000-0000-0000-0000-000000000000"),
        # the pid leads another group than the one recorded
        lambda dead, live: dataclasses.replace(live, pgid=dead.pid),
    ],
    ids=["old-token", "start-time", "boot-id", "group"],
)
def test_cancel_never_signals_a_process_that_is_not_provably_the_recorded_one(
    run_dir: Path,
    dead: ProcessRecord,
    bystander: subprocess.Popen[bytes],
    forge: Callable[[ProcessRecord, ProcessRecord], ProcessRecord],
) -> None:
    live = ProcessRecord.of(bystander.pid)
    forged = forge(dead, live)
    assert forged != live
    write_record(run_dir / "replicas.pid", {"chief-0": forged.to_json()})
    job = local.provider.attach(JOB_ID)
    assert job.status().provider_state == "LAUNCHER_GONE"
    job.cancel()
    assert _still_alive(bystander)


def test_cancel_stops_a_replica_that_provably_is_the_recorded_one(
    run_dir: Path, bystander: subprocess.Popen[bytes]
) -> None:
    # the control for the test above: the same set-up with a true record does signal
    write_record(run_dir / "replicas.pid", {"chief-0": ProcessRecord.of(bystander.pid).to_json()})
    local.provider.attach(JOB_ID).cancel()
    assert bystander.wait(timeout=10) == -signal.SIGKILL


def test_a_recycled_launcher_pid_counts_as_gone_and_is_not_signalled(
    run_dir: Path, dead: ProcessRecord, bystander: subprocess.Popen[bytes]
) -> None:
    forged = dataclasses.replace(dead, pid=bystander.pid, pgid=bystander.pid)
    write_record(run_dir / "launcher.pid", forged.to_json())
    job = local.provider.attach(JOB_ID)
    final = job.wait(poll_s=0.1)
    assert (final.state, final.provider_state) == ("failed", "LAUNCHER_GONE")
    job.cancel()
    assert _still_alive(bystander)


@pytest.mark.parametrize(
    "launcher",
    [
        "dead",  # the launcher ended without a final status
        "missing",  # it never recorded itself
    ],
)
def test_a_dead_launcher_makes_the_run_failed_not_running(run_dir: Path, launcher: str) -> None:
    if launcher == "missing":
        (run_dir / "launcher.pid").unlink()
    status = LocalJob(JOB_ID).status()
    assert (status.state, status.provider_state) == ("failed", "LAUNCHER_GONE")


def test_a_live_launcher_keeps_the_run_running(run_dir: Path, bystander: subprocess.Popen[bytes]) -> None:
    write_record(run_dir / "launcher.pid", ProcessRecord.of(bystander.pid).to_json())
    assert LocalJob(JOB_ID).status().state == "running"


@pytest.mark.parametrize("file", ["launcher.pid", "replicas.pid"])
@pytest.mark.parametrize("pid", [0, -1, 1])
def test_pids_0_minus_1_and_1_in_a_record_are_refused_and_never_signalled(
    run_dir: Path, run_cli: Callable[..., Result], file: str, pid: int
) -> None:
    record = {"chief-0": _pid_record(pid)} if file == "replicas.pid" else _pid_record(pid)
    write_record(run_dir / file, record)
    (run_dir / "launcher.alive").touch()  # a launcher seen alive lately: its record must be believed
    result = _cancel_beside_a_witness(run_cli)
    assert result.code == 1
    assert len(result.errors) == 1
    assert result.errors[0].startswith(
        f"cloudtrain cannot trust {run_dir / file}: 'pid' must be a pid from 2"
    )


@pytest.mark.parametrize("file", ["launcher.pid", "replicas.pid"])
def test_the_cancelling_process_group_is_never_signalled(
    run_dir: Path, run_cli: Callable[..., Result], file: str
) -> None:
    ours = ProcessRecord.of(os.getpid()).to_json()  # a true record, of a process in our own group
    write_record(run_dir / file, {"chief-0": ours} if file == "replicas.pid" else ours)
    result = run_cli("cancel", JOB_ID)
    assert result.code == 1
    assert result.errors == [
        f"Refusing to signal pid {os.getpid()} (process group {os.getpgrp()}): a run's record never names "
        "pid 0 or 1 or the group of the cloudtrain command itself, so the record is wrong."
    ]


# Job IDs.


@pytest.mark.parametrize(
    "job_id",
    [
        "local:../../x",  # up and out of the runs folder
        "local:..",  # the local home itself
        "local:../x",  # a sibling of runs/ (one is planted there below)
        "local:",  # no run
        "local:a/b",  # a folder below a run
        "local:/etc",  # an absolute path
        "local:Demo-20260101-120000-0a1b",  # upper case: never made by submit
        "local:-demo",  # starts like an option
        "local:demo\x00",  # a NUL byte
        "local:" + "a" * 85,  # longer than a 63-character job name's run
    ],
)
def test_a_malformed_job_id_is_refused_before_any_path_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Callable[..., Result], job_id: str
) -> None:
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path / "home"))
    (tmp_path / "home" / "x").mkdir(parents=True)
    write_record(tmp_path / "home" / "x" / "request.json", REQUEST)
    with pytest.raises(JobNotFoundError, match=r"is not a local job ID\. Expected local:<run>"):
        local.provider.attach(job_id)
    with pytest.raises(ProviderError, match=r"is not a local job ID"):
        LocalJob(job_id)
    result = run_cli("status", job_id)
    assert result.code == 2  # it names no job: the exit code of any ID that names none
    assert result.errors == [
        f"{quote(job_id)} is not a local job ID. Expected local:<run>, <run> being the run folder name that "
        "submit printed (e.g. local:demo-20260101-120000-1a2b) or a run id."
    ]


def test_the_longest_id_submit_can_make_is_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path / "home"))
    name = "a" * 63  # the longest job name (spec.JobSpec.name)
    assert (
        run_dir_for(f"local:{name}-20260101-120000-0a1b")
        == tmp_path / "home" / "runs" / f"{name}-20260101-120000-0a1b"
    )


# Corrupt records: one error line each, through the CLI.

CORRUPTIONS = [
    # status.json, read by every status
    ("status.json", b'{"state": "runn', "status", "Unterminated string"),  # truncated mid-write
    ("status.json", b"", "status", "Expecting value"),  # empty: a crash before the first write
    ("status.json", b'{"state": "running"}\x00\x00', "status", "it contains NUL bytes"),  # a torn block
    ("status.json", b"\xff\xfe{}", "status", "'utf-8' codec can't decode"),  # not text
    ("status.json", b"[]", "status", "expected a JSON object, got list"),  # JSON, but not a record
    ("status.json", _json(RUNNING, state=1), "status", "'state' must be str, got 1"),  # wrong type
    ("status.json", _json(RUNNING, state="exploded"), "status", "'state' must be one of pending"),  # unknown
    ("status.json", b'{"state": "running"}', "status", "'provider_state' must be str"),  # a field lost
    ("status.json", b"[" * 100_000, "status", "maximum recursion depth exceeded"),  # nested too deep to parse
    # launcher.pid, read by status while the run is not over
    ("launcher.pid", b"12345", "status", "expected a JSON object, got int"),  # a bare pid proves nothing
    ("launcher.pid", _json(_pid_record(-1)), "status", "'pid' must be a pid from 2 to 4194304"),  # negative
    ("launcher.pid", _json(_pid_record(2**40)), "status", "got 1099511627776"),  # beyond any pid_max
    ("launcher.pid", _json(_pid_record("123")), "status", "'pid' must be int, got '123'"),  # a string
    ("launcher.pid", _json(_pid_record(True)), "status", "'pid' must be int, got True"),  # true: no pid
    ("launcher.pid", _json(_pid_record(7.0)), "status", "'pid' must be int, got 7.0"),  # a float
    ("launcher.pid", _json(_pid_record(7, pgid=-7)), "status", "'pgid' must be a pid from 2"),  # bad group
    ("launcher.pid", _json(_pid_record(7, start_time=None)), "status", "'start_time' must"),  # no token
    ("launcher.pid", _json(_pid_record(7, boot_id="")), "status", "'boot_id' must be 1 to 100"),  # empty
    # replicas.pid, read by cancel once the launcher is gone
    ("replicas.pid", b'["chief-0"]', "cancel", "expected a JSON object of replica names"),  # a list
    ("replicas.pid", b'{"chief-0": {"pid": 12', "cancel", "Expecting"),  # truncated
    ("replicas.pid", b'{"chief-0": 4242}', "cancel", "expected a JSON object, got int"),  # a bare pid
    ("replicas.pid", _json({"chief-0": _pid_record(2**31)}), "cancel", "got 2147483648"),  # beyond pid_max
]


@pytest.mark.parametrize(("file", "content", "command", "problem"), CORRUPTIONS)
def test_a_corrupt_record_is_one_error_line_naming_the_file_and_the_way_out(
    run_dir: Path, run_cli: Callable[..., Result], file: str, content: bytes, command: str, problem: str
) -> None:
    (run_dir / file).write_bytes(content)
    result = run_cli(command, JOB_ID)
    assert result.code == 1
    assert result.err.count("\n") == 1, result.err  # one line, no traceback
    (error,) = result.errors
    assert error.startswith(f"cloudtrain cannot trust {run_dir / file}: ")
    assert problem in error
    assert error.endswith(f"then remove the run folder {run_dir}.")


REQUEST_DAMAGE = [
    (b'{"replicas": [', "Expecting value"),  # truncated
    (_json(REQUEST, replicas="chief-0"), "'replicas' must be list"),  # wrong type
    (_json(REQUEST, replicas=[]), "must be a non-empty list"),  # no replica
    (
        _json(REQUEST, restarts={"host": {"limit": -1, "rule": "r"}}),
        "'restarts.host' must have a 'limit' >= 0",
    ),
    (_json(REQUEST, outputs={"model": 1}), "'outputs' must map model"),  # not paths
    (None, "it is missing"),  # deleted
]


@pytest.mark.parametrize(("content", "problem"), REQUEST_DAMAGE)
def test_a_damaged_request_is_named_where_it_is_needed_and_stops_neither_status_nor_cancel(
    run_dir: Path,
    run_cli: Callable[..., Result],
    bystander: subprocess.Popen[bytes],
    content: bytes | None,
    problem: str,
) -> None:
    # regression: a running job whose request.json was deleted could no longer be cancelled
    write_record(run_dir / "replicas.pid", {"chief-0": ProcessRecord.of(bystander.pid).to_json()})
    if content is None:
        (run_dir / "request.json").unlink()
    else:
        (run_dir / "request.json").write_bytes(content)
    with pytest.raises(ProviderError) as raised:
        local.provider.attach(JOB_ID).outputs  # noqa: B018
    assert str(raised.value).startswith(f"cloudtrain cannot trust {run_dir / 'request.json'}: ")
    assert problem in str(raised.value)
    status = run_cli("status", JOB_ID)
    assert status.code == 0
    assert status.out.startswith("running (LAUNCHER_GONE): The local launcher died (last seen alive at ")
    cancelled = run_cli("cancel", JOB_ID)
    assert (cancelled.code, cancelled.err) == (0, f"Cancelled {JOB_ID}.\n")
    assert bystander.wait(timeout=10) == -signal.SIGKILL


def test_a_launcher_given_a_corrupt_request_records_failed_with_the_reason(run_dir: Path) -> None:
    (run_dir / "request.json").write_bytes(b'{"replicas": [')
    launched = subprocess.run(
        [sys.executable, "-c", run.LAUNCHER_PROGRAM, str(run_dir)], capture_output=True, check=False
    )
    assert launched.returncode != 0
    status = LocalJob(JOB_ID).status()
    assert (status.state, status.provider_state) == ("failed", "LAUNCHER_ERROR")
    assert f"cloudtrain cannot trust {run_dir / 'request.json'}: Expecting value" in status.detail


# Writing records and run folders.


def test_two_concurrent_uploads_of_one_bundle_both_succeed_and_leave_one_whole_file(tmp_path: Path) -> None:
    # regression: both copies went through one temp name and the second rename found nothing
    bundle = tmp_path / "0123abcd.tar.gz"
    bundle.write_bytes(os.urandom(4 * 1024 * 1024))
    for round_ in range(5):
        target = tmp_path / f"bucket-{round_}" / "code" / bundle.name
        assert _together(functools.partial(run._upload, bundle, target)) == []
        assert [p.name for p in target.parent.iterdir()] == [bundle.name]
        assert target.read_bytes() == bundle.read_bytes()


def _together(action: Callable[[], None], count: int = 2) -> list[BaseException]:
    """Run ``action`` in ``count`` threads released at the same moment; what they raised."""
    start = threading.Barrier(count)
    failures: list[BaseException] = []

    def go() -> None:
        start.wait()
        try:
            action()
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=go) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failures


def test_a_taken_run_id_is_never_shared_a_new_one_is_drawn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(run, "time", SimpleNamespace(strftime=lambda _: "20260101-120000"))
    tokens = iter(["0a1b", "0a1b", "ffff"])
    monkeypatch.setattr(run, "secrets", SimpleNamespace(token_hex=lambda _: next(tokens)))
    first = run._new_run("demo")
    second = run._new_run("demo")
    assert (first[0], second[0]) == ("local:demo-20260101-120000-0a1b", "local:demo-20260101-120000-ffff")
    assert first[1] != second[1]


def test_when_every_run_id_is_taken_submit_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(run, "time", SimpleNamespace(strftime=lambda _: "20260101-120000"))
    monkeypatch.setattr(run, "secrets", SimpleNamespace(token_hex=lambda _: "0a1b"))
    run._new_run("demo")
    with pytest.raises(ProviderError, match=r"8 new run IDs were all taken\. Submit again\."):
        run._new_run("demo")


def test_a_record_is_replaced_whole_and_leaves_no_temp_file(tmp_path: Path) -> None:
    write_record(tmp_path / "status.json", RUNNING)
    write_record(tmp_path / "status.json", {**RUNNING, "state": "succeeded"})
    assert [p.name for p in tmp_path.iterdir()] == ["status.json"]
    assert json.loads((tmp_path / "status.json").read_text())["state"] == "succeeded"


# Without /proc (macOS): ``ps`` identifies, or nothing is signalled.


def test_without_proc_ps_proves_identity_and_a_wrong_token_is_still_refused(
    tmp_path: Path, bystander: subprocess.Popen[bytes]
) -> None:
    no_proc = tmp_path / "no-proc"
    record = ProcessRecord.of(bystander.pid, proc=no_proc)
    in_proc = identify(bystander.pid)
    assert in_proc is not None
    assert (record.pid, record.pgid) == (bystander.pid, in_proc.pgid)
    recycled = dataclasses.replace(record, start_time="Thu Jan  1 00:00:00 1970")
    assert not recycled.signal(signal.SIGKILL, group=True, proc=no_proc)
    assert _still_alive(bystander)
    assert record.signal(signal.SIGKILL, group=True, proc=no_proc)
    assert bystander.wait(timeout=10) == -signal.SIGKILL


def test_without_proc_or_ps_nothing_is_signalled_and_the_error_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bystander: subprocess.Popen[bytes]
) -> None:
    record = ProcessRecord.of(bystander.pid)
    monkeypatch.setenv("PATH", str(tmp_path))  # no ps on it
    with pytest.raises(ProviderError, match=r"this system has no /proc and `ps` failed .* Stop the run's"):
        record.signal(signal.SIGKILL, group=True, proc=tmp_path / "no-proc")
    assert _still_alive(bystander)


# The run folder and the local home, damaged.


@pytest.mark.parametrize("make", [Path.mkdir, lambda path: os.mkfifo(path)], ids=["folder", "fifo"])
def test_a_log_that_is_not_a_file_is_one_error_line(
    run_dir: Path, run_cli: Callable[..., Result], make: Callable[[Path], object]
) -> None:
    # regression: `logs` ended in IsADirectoryError when output.log was a folder (a FIFO would block)
    write_record(run_dir / "status.json", {"state": "succeeded", "provider_state": "SUCCEEDED", "detail": ""})
    make(run_dir / "output.log")
    result = run_cli("logs", JOB_ID)
    assert (result.code, result.out) == (1, "")
    assert result.err.count("\n") == 1, result.err
    assert result.errors[0].startswith(
        f"cloudtrain cannot trust {run_dir / 'output.log'}: it is not a regular file."
    )


@pytest.mark.parametrize("home", ["a-file", "a-file/below"], ids=["file", "below-a-file"])
def test_a_local_home_that_cannot_hold_runs_is_one_error_line_naming_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    run_cli: Callable[..., Result],
    example_job: Path,
    home: str,
) -> None:
    # regression: submit ended in FileExistsError when CLOUDTRAIN_LOCAL_HOME was a file
    (tmp_path / "a-file").write_text("not a folder")
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path / home))
    result = run_cli("submit", str(example_job), "--provider", "local", "--no-wait")
    assert (result.code, result.out) == (1, "")
    (error,) = result.errors
    assert error.startswith(f"Cannot make a local run: {tmp_path / 'a-file'} is a file, not a folder. ")
    assert error.endswith(
        f"Set CLOUDTRAIN_LOCAL_HOME to a folder this user can write (it is {str(tmp_path / home)!r}), or unset it."
    )
    assert "Traceback" not in result.err


@pytest.mark.parametrize(
    ("rc", "reason", "code"),
    [
        (2, Reason.CONFIGURATION, "exit 2"),  # the runtime's ConfigError and ClusterError
        (1, Reason.USER_CODE, "exit 1"),  # the training code raised
        (-9, Reason.PREEMPTED, "killed by SIGKILL"),  # the host was lost
    ],
)
def test_a_failed_runs_reason_survives_its_status_file(
    tmp_path: Path, rc: int, reason: Reason, code: str
) -> None:
    path = tmp_path / "status.json"
    failure = failures.exit_failure(rc, "Replica chief-0 failed.")
    write_record(
        path,
        {
            "state": "failed",
            "provider_state": "FAILED",
            "detail": "x",
            "failure": failures.to_record(failure),
        },
    )
    status = read_record(path, parse_status)
    assert status is not None and status.failure == failure
    assert (status.failure.reason, status.failure.code) == (reason, code)


def test_a_status_file_without_a_failure_still_reads() -> None:
    # a run recorded before failures were kept, or one whose failure this version cannot read
    assert parse_status({"state": "failed", "provider_state": "FAILED", "detail": "x"}).failure is None
    assert (
        parse_status(
            {"state": "failed", "provider_state": "FAILED", "detail": "x", "failure": {"reason": "?"}}
        ).failure
        is None
    )


# Every record replaced by a folder, a FIFO or /dev/zero: cancel still stops the run.
RECORDS = ["status.json", "request.json", "launcher.pid", "launcher.alive", "output.log"]


def _replace(path: Path, kind: str) -> None:
    path.unlink(missing_ok=True)
    if kind == "folder":
        (path / "inside").mkdir(parents=True)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(kind)


@pytest.mark.parametrize("kind", ["folder", "fifo", "/dev/zero"])
@pytest.mark.parametrize("record", RECORDS)
def test_cancel_stops_a_run_whatever_became_of_a_record(
    run_dir: Path,
    run_cli: Callable[..., Result],
    bystander: subprocess.Popen[bytes],
    record: str,
    kind: str,
) -> None:
    # regression: status.json replaced by a folder ended cancel in an IsADirectoryError traceback
    write_record(run_dir / "replicas.pid", {"chief-0": ProcessRecord.of(bystander.pid).to_json()})
    _replace(run_dir / record, kind)
    cancelled = run_cli("cancel", JOB_ID)
    assert cancelled.code == 0 and cancelled.err.count("\n") == 1, cancelled.err
    assert bystander.wait(timeout=10) == -signal.SIGKILL
    assert LocalJob(JOB_ID).status().state == "cancelled"
    if (record, kind) == ("status.json", "folder"):  # kept aside for the user to look at
        assert (run_dir / "status.json.damaged" / "inside").is_dir()


@pytest.mark.parametrize("kind", ["folder", "fifo", "/dev/zero"])
def test_a_replicas_record_that_is_no_file_is_one_error_line(
    run_dir: Path, run_cli: Callable[..., Result], kind: str
) -> None:
    _replace(run_dir / "replicas.pid", kind)
    result = run_cli("cancel", JOB_ID)
    assert result.code == 1 and result.err.count("\n") == 1, result.err
    assert result.errors[0].startswith(f"cloudtrain cannot trust {run_dir / 'replicas.pid'}: ")


@pytest.mark.parametrize("pid", [0, -1, 1])
def test_a_damaged_launcher_record_of_a_long_silent_launcher_stops_nothing_it_names(
    run_dir: Path, run_cli: Callable[..., Result], bystander: subprocess.Popen[bytes], pid: int
) -> None:
    # the launcher has not touched launcher.alive for longer than orphans.SILENT_S: gone
    write_record(run_dir / "launcher.pid", _pid_record(pid))
    write_record(run_dir / "replicas.pid", {"chief-0": ProcessRecord.of(bystander.pid).to_json()})
    result = _cancel_beside_a_witness(run_cli)
    assert (result.code, result.err) == (0, f"Cancelled {JOB_ID}.\n")
    assert bystander.wait(timeout=10) == -signal.SIGKILL


def _cancel_beside_a_witness(run_cli: Callable[..., Result]) -> Result:
    """``cancel JOB_ID``, asserting that a process in our own group outlived it.

    kill(0, …) or kill(-1, …), which a pid of 0 or -1 in a record would make, would end it.
    """
    witness = subprocess.Popen(["sleep", "60"])
    try:
        result = run_cli("cancel", JOB_ID)
        assert _still_alive(witness)
    finally:
        witness.kill()
        witness.wait()
    return result
