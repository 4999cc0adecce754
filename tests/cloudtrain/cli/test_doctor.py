"""``cloudtrain doctor``: the child it starts, the report it reads back, and real runs here.

The checks themselves are tested in tests/cloudtrain_runtime/test_doctor.py; here, what
the CLI hands the runtime (the plan's replicas and configuration), how it reads the
answer, and two real runs on this machine with emulated devices.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cloudtrain.cli.doctor_command import DoctorRequest, doctor_request, read_report
from cloudtrain.errors import CloudtrainError
from cloudtrain.planning import plan
from cloudtrain.specfile import load_spec
from cloudtrain_runtime import config as runtime_config
from cloudtrain_runtime.diagnosis import FAIL, OK, WARN, Check
from tests.cloudtrain.test_startup import HEAVY
from tests.conftest import Result

RUNTIME_DOCTOR = ("-m", "cloudtrain_runtime", "doctor", "--json")


def test_without_a_job_the_child_checks_two_emulated_devices_and_no_stray_plan() -> None:
    request = doctor_request(None)
    assert request.argv == (sys.executable, *RUNTIME_DOCTOR)
    env = request.environment({"PATH": "/bin", "CLOUDTRAIN_CONFIG": '{"replicas": 8}'})
    assert env == {"PATH": "/bin", "CLOUDTRAIN_CPU_DEVICES": "2"}


def test_with_a_job_the_child_gets_the_plans_replicas_and_configuration(example_job: Path) -> None:
    spec = load_spec(example_job, ["resources.hosts=1", "resources.per_host=4"])
    planned = plan(spec, "vertex")
    env = doctor_request(planned).environment({})
    assert env["CLOUDTRAIN_CPU_DEVICES"] == "4"
    sent = runtime_config.parse(env["CLOUDTRAIN_CONFIG"], "test")
    assert (sent.replicas, sent.hosts, sent.strategy) == (4, 1, planned.strategy) == (4, 1, "mirrored")


def test_the_childs_json_report_is_read_back() -> None:
    rows = [{"check": "replicas", "status": "fail", "detail": "1 replica(s)", "fix": "Add a device."}]
    done = subprocess.CompletedProcess(["python"], 1, json.dumps(rows), "")
    assert read_report(done, doctor_request(None)) == [
        Check("replicas", FAIL, "1 replica(s)", "Add a device.")
    ]


def test_a_child_that_dies_without_a_report_names_its_last_words_and_the_command() -> None:
    request = DoctorRequest(("/venv/bin/python", *RUNTIME_DOCTOR))
    done = subprocess.CompletedProcess(["python"], 134, "", "...\nFatal Python error: Aborted\n")
    with pytest.raises(CloudtrainError) as caught:
        read_report(done, request)
    message = str(caught.value)
    assert message.startswith("The checks gave no report (exit 134, ")
    assert ": Fatal Python error: Aborted. Run them by hand to see why: " in message
    assert message.endswith("CLOUDTRAIN_CPU_DEVICES=2 /venv/bin/python -m cloudtrain_runtime doctor")


def test_provider_without_a_job_is_an_error(run_cli: Callable[..., Result]) -> None:
    result = run_cli("doctor", "--provider", "vertex")
    assert result.code == 2
    assert result.errors == [
        "--provider and --set choose whose plan to check; give JOB too: cloudtrain doctor job.yaml --provider P"
    ]


# --- real runs: TensorFlow in the child, never in the CLI ------------------------------------


def _clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """This environment without any cluster, plan or device setting of the developer's."""
    stray = ("TF_CONFIG", "CLOUDTRAIN_", "CLUSTER_SPEC", "AIP_", "CUDA_VISIBLE_DEVICES", "SM_")
    kept = {name: value for name, value in os.environ.items() if not name.startswith(stray)}
    return {**kept, "XDG_CACHE_HOME": str(tmp_path), **extra}


def _doctor(
    args: list[str], env: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], dict[str, Check]]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "cloudtrain", "doctor", *args, "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    rows = json.loads(done.stdout)
    return done, {row["check"]: Check(**row) for row in rows}


@pytest.mark.multiprocess
def test_doctor_here_checks_two_emulated_replicas_without_importing_tensorflow(tmp_path: Path) -> None:
    done, checks = _doctor([], _clean_env(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert [check for check in checks.values() if check.status == FAIL] == []
    assert checks["tf-devices"].detail.startswith("2 cpu device(s), emulated (CLOUDTRAIN_CPU_DEVICES=2)")
    assert checks["strategy"].detail == "mirrored: 1 host × 2 cpu: MirroredStrategy"
    assert checks["replicas"] == Check("replicas", OK, "2 replica(s): 1 host(s) × 2 cpu device(s), >= 2")
    assert checks["smoke-step"].status == OK
    assert checks["all-reduce"] == Check(
        "all-reduce", OK, "SUM over 2 replica(s) = 3 on every replica, as expected"
    )
    heavy = sorted({m.group(1) for m in HEAVY.finditer(done.stderr.replace("\n", " \n"))})
    assert heavy == []  # the CLI process: the child's imports are not in its -X importtime


@pytest.mark.multiprocess
def test_doctor_with_a_job_checks_its_plan_and_exits_1_on_a_broken_cluster(
    tmp_path: Path, example_job: Path
) -> None:
    env = _clean_env(
        tmp_path, TF_CONFIG='{"cluster": {"chief": ["a:1"]}, "task": {"type": "chief", "index": 3}}'
    )
    done, checks = _doctor([str(example_job), "--set", "resources.hosts=3"], env)
    assert done.returncode == 1, done.stderr[-2000:]
    assert list(checks)[:2] == ["plan", "config"]
    assert checks["config"].detail.startswith(
        "the plan from CLOUDTRAIN_CONFIG: 3 host(s) × 1 device(s) = 3 replicas"
    )
    assert checks["environment"].status == FAIL
    assert "TF_CONFIG task chief:3 is not in its cluster" in checks["environment"].detail
    assert checks["strategy"].detail.startswith("multi-worker: 3 hosts × 1 cpu: MultiWorkerMirroredStrategy")
    assert checks["replicas"] == Check(
        "replicas", OK, "3 replica(s): 1 host(s) × 3 cpu device(s), as planned"
    )
    assert checks["all-reduce"].detail == "SUM over 3 replica(s) = 6 on every replica, as expected"
    # the plan's T4s are emulated on the CPU on purpose (CLOUDTRAIN_CPU_DEVICES): not a missing GPU,
    # but not the T4s either (regression: a T4 plan checked on a machine with no GPU was all ok)
    assert checks["plan-devices"].status == WARN and "emulated on the CPU" in checks["plan-devices"].detail
    assert "say nothing of the planned GPUs" in checks["plan-devices"].detail
    assert [name for name, check in checks.items() if check.status == FAIL] == ["environment"]
