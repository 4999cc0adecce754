"""Ctrl-C on the commands that follow a job: the real ``cloudtrain`` in a subprocess, sent SIGINT.

A foreground ``submit`` of a local run stops the run, as Ctrl-C stops a script: its
replicas are gone and it is recorded cancelled. So do SIGTERM (a CI job's timeout) and
SIGHUP (a closed terminal), with the shell's exit status for each, and the same for a
local sweep and its running trials. ``wait`` and ``logs --follow`` only
follow, so they stop following and say in one line that the run still runs and how to
stop it. Never a bare ``Aborted.``. SIGINT goes to the ``cloudtrain`` process alone, as a
terminal sends it to the foreground process group: the launcher and the replicas lead
sessions of their own.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from cloudtrain.outputs import Outputs
from cloudtrain.providers.local.processes import ProcessRecord, is_running
from cloudtrain.providers.local.records import write_record

RUN = "demo-20260101-120000-0a1b"
JOB_ID = f"local:{RUN}"
REQUEST = {
    "replicas": [{"name": "chief-0"}],
    "outputs": dict.fromkeys(Outputs.names(), "/nowhere"),
    "restarts": {},
}
INTERRUPTED = 130


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def running(home: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A local run under way: its launcher stands in as a live process leading its own session."""
    launcher = subprocess.Popen(["sleep", "120"], start_new_session=True)
    folder = home / "runs" / RUN
    folder.mkdir(parents=True)
    write_record(folder / "request.json", REQUEST)
    write_record(
        folder / "status.json", {"state": "running", "provider_state": "RUNNING (attempt 1)", "detail": ""}
    )
    write_record(folder / "launcher.pid", ProcessRecord.of(launcher.pid).to_json())
    (folder / "output.log").write_text("[chief-0] epoch 1/9\n")
    yield launcher
    launcher.kill()
    launcher.wait()


def _cloudtrain(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "cloudtrain", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _read_until(proc: subprocess.Popen[str], stream: IO[str], starts: str) -> None:
    """Read ``stream`` up to a line starting with ``starts``: the command is following by then."""
    for line in stream:
        if line.startswith(starts):
            return
    raise AssertionError(f"no line starting {starts!r}; stderr: {proc.stderr.read() if proc.stderr else ''}")


def _interrupt(proc: subprocess.Popen[str], signum: int = signal.SIGINT) -> str:
    """Send SIGINT, as Ctrl-C in a terminal does (or ``signum``); what the command wrote on stderr."""
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=150)
    return err


@pytest.mark.parametrize(
    ("args", "stream", "first"),
    [
        (("wait", JOB_ID, "--poll", "1"), "stderr", "running (RUNNING (attempt 1))"),
        (("logs", JOB_ID, "--follow"), "stdout", "[chief-0] epoch 1/9"),
    ],
    ids=["wait", "logs-follow"],
)
def test_ctrl_c_on_a_follower_stops_following_and_says_how_to_stop_the_run(
    running: subprocess.Popen[bytes], args: tuple[str, ...], stream: str, first: str
) -> None:
    # regression: a bare "Aborted." and nothing about the run that still trained
    proc = _cloudtrain(*args)
    _read_until(proc, getattr(proc, stream), first)
    err = _interrupt(proc)
    assert proc.returncode == INTERRUPTED
    assert err.splitlines()[-1] == (
        f"Stopped following {JOB_ID}; it still runs on this machine. Stop it with: cloudtrain cancel {JOB_ID}"
    )
    assert "Aborted" not in err and "Traceback" not in err
    assert running.poll() is None  # only following stopped: the run goes on


@pytest.mark.multiprocess
@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    "signum",
    [
        signal.SIGINT,  # regression: "Aborted." and the replicas trained on
        signal.SIGTERM,  # regression: exit 143, nothing printed, status said running
        signal.SIGHUP,  # regression: exit 129, the run trained on with no terminal left
    ],
    ids=["ctrl-c", "sigterm", "sighup"],
)
def test_ctrl_c_on_a_foreground_local_submit_stops_the_run(
    home: Path, tmp_path: Path, example_job: Path, signum: int
) -> None:
    project = tmp_path / "project"
    shutil.copytree(example_job.parent, project, ignore=shutil.ignore_patterns("outputs"))
    proc = _cloudtrain("submit", str(project / "job.yaml"), "--set", "training.epochs=1000")
    assert proc.stdout is not None
    job_id = proc.stdout.readline().strip()
    assert proc.stderr is not None
    _read_until(proc, proc.stderr, "[chief-0] epoch 1/1000")  # piped: the log follows on stderr
    replicas = json.loads((home / "runs" / job_id.removeprefix("local:") / "replicas.pid").read_text())
    err = _interrupt(proc, signum)
    assert proc.returncode == 128 + signum, err
    assert err.splitlines()[-2:] == [
        f"Interrupted: stopping {job_id} (Ctrl-C again to leave it stopping on its own)...",
        f"Stopped {job_id}: cancelled (CANCELLED): Cancelled by the user.",
    ]
    assert "Aborted" not in err and "Traceback" not in err
    assert not any(is_running(record["pid"]) for record in replicas.values())
    status = subprocess.run(
        [sys.executable, "-m", "cloudtrain", "status", job_id, "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert json.loads(status.stdout)["state"] == "cancelled"


@pytest.mark.multiprocess
@pytest.mark.timeout(400)
def test_sigterm_on_a_foreground_local_sweep_stops_it_and_its_trials(
    home: Path, tmp_path: Path, repo: Path
) -> None:
    # regression: Ctrl-C on a local sweep only stopped following; its trials trained on
    project = tmp_path / "project"
    shutil.copytree(repo / "examples" / "tuning", project, ignore=shutil.ignore_patterns("outputs"))
    settings = ["tuning.max_trials=2", "tuning.parallel_trials=1", "training.epochs=1000"]
    proc = _cloudtrain("submit", str(project / "job.yaml"), *(f"--set={setting}" for setting in settings))
    assert proc.stdout is not None and proc.stderr is not None
    sweep_id = proc.stdout.readline().strip()
    _read_until(proc, proc.stderr, "trial 1 epoch 1 ")  # a trial trains
    err = _interrupt(proc, signal.SIGTERM)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert err.splitlines()[-1] == f"Stopped {sweep_id}: cancelled (CANCELLED): The sweep was cancelled."
    status = subprocess.run(
        [sys.executable, "-m", "cloudtrain", "status", sweep_id, "--json"], capture_output=True, text=True
    )
    trials = json.loads(status.stdout)["trials"]
    assert [trial["state"] for trial in trials] == ["cancelled"]
    trial = subprocess.run(
        [sys.executable, "-m", "cloudtrain", "status", trials[0]["job"], "--json"],
        capture_output=True,
        text=True,
    )
    assert json.loads(trial.stdout)["state"] == "cancelled"
