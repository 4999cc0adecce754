"""What ``submit`` writes where: the result alone on stdout, the followed log and every note on stderr.

The local runs here are real (the detached launcher, the run folder, the followed log);
their one replica is a small script instead of the TensorFlow runtime, so nothing trains.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cloudtrain.cli.conftest import Scripted
from tests.conftest import Result

Run = Callable[..., Result]
REPLICA = "print('epoch 1/1 loss=0.5')\nprint('export=done')\n"


@pytest.fixture
def project(scripted_job: Scripted) -> Path:
    """A one-host local job whose replica prints two lines."""
    return scripted_job(REPLICA)


# regression: the JSON line was followed by every log line on stdout (JSONDecodeError: Extra data)
def test_submit_json_is_one_document_and_the_followed_log_goes_to_stderr(run_cli: Run, project: Path) -> None:
    result = run_cli("submit", str(project), "--json")
    assert result.code == 0, result.err
    document = json.loads(result.out)
    assert document["id"].startswith("local:scripted-") and document["attached"] is False
    assert re.search(r"/outputs/runs/[0-9]{8}-[0-9]{6}-[0-9a-f]{6}/model$", document["outputs"]["model"])
    assert "[chief-0] epoch 1/1 loss=0.5" in result.err.splitlines()


# regression: ID=$(cloudtrain submit job.yaml) captured the whole log
def test_piped_submit_prints_the_id_alone(run_cli: Run, project: Path) -> None:
    result = run_cli("submit", str(project))
    assert result.code == 0, result.err
    assert result.out.splitlines() == [result.out.strip()] and result.out.startswith("local:scripted-")
    assert "[chief-0] export=done" in result.err.splitlines()


# regression: a second submit of one run id replayed the old log without a word
def test_a_second_submit_of_a_run_id_says_it_attached(run_cli: Run, project: Path) -> None:
    first = run_cli("submit", str(project), "--run-id", "r1", "--json")
    second = run_cli("submit", str(project), "--run-id", "r1", "--json")
    job_id = json.loads(first.out)["id"]
    assert json.loads(second.out) == {**json.loads(first.out), "attached": True}
    assert (
        f"Attached to {job_id}, which an earlier submit of this spec, code and run id started; "
        "nothing new was started. A followed log starts from its beginning. For a new run: --new, or another "
        "--run-id."
    ) in second.err.splitlines()
    assert "Attached" not in first.err


@pytest.mark.usefixtures("toycloud")
def test_submit_json_through_a_real_pipe_is_valid_json(example_job: Path) -> None:
    """``cloudtrain submit --wait --json | python -m json.tool``, as a shell runs it."""
    python = shlex.quote(sys.executable)
    submit = f"{python} -m cloudtrain submit {shlex.quote(str(example_job))} -p toycloud --wait --json"
    piped = subprocess.run(
        ["bash", "-o", "pipefail", "-c", f"{submit} | {python} -m json.tool"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["id"].startswith("toy:")
    assert any(line.startswith("[chief-0] training toy:") for line in piped.stderr.splitlines())
