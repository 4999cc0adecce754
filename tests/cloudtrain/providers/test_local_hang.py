"""A hung replica on the local provider: the hang watchdog ends the attempt, the run resumes and finishes.

Real processes, real TensorFlow (MultiWorkerMirroredStrategy on 2 hosts on loopback):
``--fault hang@step:20`` makes the last host's replica sleep in its step callback for
ever; the chief waits for it in the next all-reduce. With ``training.hang_timeout: 5`` a
watchdog fires after 5 s without a step, says which replica and where it is stuck, and
exits 75; the launcher restarts the set, which resumes from the last epoch's backup.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cloudtrain import api
from cloudtrain.providers import local

pytestmark = [pytest.mark.multiprocess, pytest.mark.timeout(300), pytest.mark.usefixtures("private_tmpdir")]


def test_a_hung_replica_is_detected_and_the_run_resumes_and_finishes(project: Path) -> None:
    spec = api.as_spec(project / "job.yaml", ("training.hang_timeout=5", "training.epochs=2"))
    job = api.submit(spec, local.Local(fault="hang@step:20"))
    final = job.wait(poll_s=1.0)
    lines = list(job.logs())
    assert final.state == "succeeded", "\n".join(lines[-40:])
    alarms = [
        (found[1], index)
        for index, line in enumerate(lines)
        if (found := re.match(r"\[(\w+-\d)\] hang watchdog: replica \w+:\d made no training step for", line))
    ]
    assert alarms, lines
    replica, at = alarms[0]
    # the training thread's stack, as Python prints it, in that replica's lines after the alarm
    stack = [line for line in lines[at + 1 :] if line.startswith(f"[{replica}]   File ")]
    assert any("keras" in line for line in stack), lines[at:]
    assert any("was reclaimed (exit 75:" in line for line in lines)
    assert any(line.startswith("[cloudtrain] Restarting all replicas (host restart 1 of") for line in lines)
    result = json.loads(
        (project / "outputs" / "runs" / job.request["run_id"] / "cloudtrain-result.json").read_text()
    )
    assert result["resumed_from_epoch"] == 1  # the hang came at step 20, in epoch 2 (16 steps an epoch)
    assert result["epochs_run"] == [1, 2]
