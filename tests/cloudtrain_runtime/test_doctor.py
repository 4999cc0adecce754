"""``cloudtrain-runtime doctor``: its checks against recorded environments, and its verdicts.

The judging functions take facts (an environment, a replica count, nvidia-smi's answer)
and are tested with those facts as the providers and tools give them. One run of the
real command, in a subprocess, checks the text report and the exit status end to end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cloudtrain_runtime import config as config_lib
from cloudtrain_runtime import doctor, doctor_run
from cloudtrain_runtime.diagnosis import (
    FAIL,
    OK,
    WARN,
    Check,
    Expectation,
    exit_code,
    from_rows,
    render_json,
    render_text,
)
from cloudtrain_runtime.replica import ClusterInfo

CHIEF_AND_WORKER = {"chief": ["10.0.0.2:2222"], "worker": ["10.0.0.3:2222"]}
# RFC 6761: names under .invalid never resolve, whatever the machine's DNS.
UNRESOLVABLE = ["algo-1.invalid", "algo-2.invalid"]


def _tf_config(task_type: str, index: int) -> dict[str, str]:
    return {
        "TF_CONFIG": json.dumps({"cluster": CHIEF_AND_WORKER, "task": {"type": task_type, "index": index}})
    }


def _sagemaker_root(
    tmp_path: Path, hosts: list[str], current: str, config: dict[str, Any] | None = None
) -> str:
    """A SageMaker ``/opt/ml/input/config`` under ``tmp_path``, as tests/cloudtrain_runtime/test_cluster.py builds it."""
    folder = tmp_path / "opt/ml/input/config"
    folder.mkdir(parents=True)
    resource = {"current_host": current, "hosts": hosts, "network_interface_name": "eth0"}
    (folder / "resourceconfig.json").write_text(json.dumps(resource))
    if config is not None:
        (folder / "hyperparameters.json").write_text(json.dumps({"cloudtrain_config": json.dumps(config)}))
    return str(tmp_path)


def _config(**changes: Any) -> config_lib.RuntimeConfig:
    return config_lib.from_dict({**doctor.NO_PLAN, **changes}, "test")


def _cluster(hosts: int, provider: str = "tf_config") -> ClusterInfo:
    addresses = tuple(f"10.0.0.{i}:2222" for i in range(hosts))
    return ClusterInfo(provider, "chief", 0, 0, True, addresses, Path("/"))


# --- the environment the provider gave ---------------------------------------------------


def test_a_tf_config_chief_is_named_the_chief() -> None:
    info, line = doctor.environment_check(_tf_config("chief", 0), root="/")
    assert line == Check(
        "environment",
        OK,
        "TF_CONFIG: this replica is chief_0, rank 0 of 2 host(s), the chief; chief: 10.0.0.2:2222",
    )
    assert info.is_chief


def test_a_tf_config_worker_names_the_chief_it_is_not() -> None:
    info, line = doctor.environment_check(_tf_config("worker", 0), root="/")
    assert line.status == OK
    assert line.detail == (
        "TF_CONFIG: this replica is worker_0, rank 1 of 2 host(s), not the chief; chief: 10.0.0.2:2222"
    )
    assert (info.rank, info.num_hosts) == (1, 2)


def test_a_sagemaker_host_reads_resourceconfig_and_shows_the_tf_config_it_writes(tmp_path: Path) -> None:
    root = _sagemaker_root(tmp_path, ["algo-1", "algo-2"], current="algo-2")
    info, line = doctor.environment_check({}, root)
    assert line.status == OK
    assert line.detail.startswith(
        "SageMaker: this replica is worker_1, rank 1 of 2 host(s), not the chief; chief: algo-1:8890; "
    )
    written = json.loads(line.detail.split("TF_CONFIG the runtime writes: ", 1)[1])
    assert written == {
        "cluster": {"worker": ["algo-1:8890", "algo-2:8890"]},
        "task": {"type": "worker", "index": 1},
    }
    assert info.provider == "sagemaker"


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"TF_CONFIG": '{"cluster": {"worker": ["a:1"]}'}, "TF_CONFIG must be JSON like"),  # cut short
        (
            {"TF_CONFIG": json.dumps({"cluster": CHIEF_AND_WORKER, "task": {"type": "worker", "index": 3}})},
            "TF_CONFIG task worker:3 is not in its cluster",  # no fourth worker
        ),
        (
            {"TF_CONFIG": json.dumps({"cluster": {"ps": ["p:1"]}, "task": {"type": "ps", "index": 0}})},
            "no parameter servers",  # a parameter-server job
        ),
    ],
)
def test_a_broken_tf_config_is_a_fail_line_with_the_fix(env: dict[str, str], says: str) -> None:
    info, line = doctor.environment_check(env, root="/")
    assert (line.check, line.status) == ("environment", FAIL)
    assert says in line.detail
    assert line.fix is not None and line.fix.startswith("Correct the value the message names")
    assert (info.provider, info.num_hosts) == ("bare", 1)  # the other checks go on, on this machine
    assert exit_code([line]) == 1


def test_a_resourceconfig_without_this_host_is_a_fail_line(tmp_path: Path) -> None:
    root = _sagemaker_root(tmp_path, ["algo-1", "algo-2"], current="algo-3")
    _, line = doctor.environment_check({}, root)
    assert line.status == FAIL
    assert "must list current_host among hosts" in line.detail


# --- the plan ----------------------------------------------------------------------------


def test_without_a_plan_doctor_expects_two_replicas() -> None:
    expected, line = doctor.expectation(None, {}, "/", _cluster(1, "bare"))
    assert not expected.planned and expected.config.replicas == 2
    assert line.status == OK and line.detail.startswith("no plan given: expecting >= 2 replicas")


def test_a_multi_host_plan_on_a_bare_machine_is_checked_in_one_process() -> None:
    config = {**doctor.NO_PLAN, "replicas": 4, "hosts": 2, "devices_per_host": 2, "strategy": "multi-worker"}
    expected, line = doctor.expectation(
        None, {"CLOUDTRAIN_CONFIG": json.dumps(config)}, "/", _cluster(1, "bare")
    )
    assert expected.planned and expected.stand_in
    assert line.detail.startswith("the plan from CLOUDTRAIN_CONFIG: 2 host(s) × 2 device(s) = 4 replicas")
    hosts = doctor.hosts_check(expected, _cluster(1, "bare"))
    assert hosts is not None and hosts.status == OK and "stands in for the plan's 2 hosts" in hosts.detail


def test_a_malformed_plan_is_a_fail_line_and_the_defaults_stand() -> None:
    expected, line = doctor.expectation(None, {"CLOUDTRAIN_CONFIG": "{not json"}, "/", _cluster(1, "bare"))
    assert line.status == FAIL and "not valid JSON" in line.detail
    assert not expected.planned


def test_a_sagemaker_plan_for_three_hosts_on_two_fails_the_hosts_check(tmp_path: Path) -> None:
    plan = {**doctor.NO_PLAN, "replicas": 3, "hosts": 3, "devices_per_host": 1}
    root = _sagemaker_root(tmp_path, ["algo-1", "algo-2"], current="algo-1", config=plan)
    info, _ = doctor.environment_check({}, root)
    expected, line = doctor.expectation(None, {}, root, info)
    assert line.detail.startswith("the plan from /opt/ml/input/config/hyperparameters.json: 3 host(s)")
    hosts = doctor.hosts_check(expected, info)
    assert hosts is not None
    assert (hosts.status, hosts.detail) == (FAIL, "the plan expects 3 host(s), but the environment gave 2")


def test_peers_that_resolve_pass_and_peers_that_do_not_warn(tmp_path: Path) -> None:
    root = _sagemaker_root(tmp_path, UNRESOLVABLE, current=UNRESOLVABLE[0])
    mapped = {"CLOUDTRAIN_HOSTS": f"{UNRESOLVABLE[0]}=127.0.0.1:5000,{UNRESOLVABLE[1]}=127.0.0.1:5001"}
    resolving = doctor.peers_check(doctor.environment_check(mapped, root)[0])
    missing = doctor.peers_check(doctor.environment_check({}, root)[0])
    assert resolving is not None and resolving.status == OK
    assert missing is not None and missing.status == WARN
    assert "'algo-1.invalid' did not resolve" in missing.detail


def test_only_environments_whose_peers_resolve_late_get_a_peers_line() -> None:
    info, _ = doctor.environment_check(_tf_config("chief", 0), root="/")
    assert doctor.peers_check(info) is None


# --- replicas and strategy -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "hosts", "local", "kind", "status", "fix_says"),
    [
        (Expectation(_config(), planned=False), 1, 2, "cpu", OK, None),  # the minimum
        (Expectation(_config(), planned=False), 1, 1, "cpu", FAIL, "CLOUDTRAIN_CPU_DEVICES=2"),  # one device
        (Expectation(_config(), planned=False), 2, 1, "gpu", OK, None),  # 2 hosts × 1 GPU is 2 replicas
        (Expectation(_config(replicas=4, hosts=2), planned=True, stand_in=True), 1, 4, "cpu", OK, None),
        (
            Expectation(_config(replicas=4, hosts=2), planned=True, stand_in=True),
            1,
            2,
            "cpu",
            FAIL,
            "CLOUDTRAIN_CPU_DEVICES=4",  # the SDK's process holds all 4
        ),
        (
            Expectation(_config(replicas=1, devices_per_host=1), planned=True),
            1,
            1,
            "cpu",
            WARN,
            "Nothing to fix",
        ),
        (
            Expectation(_config(replicas=16, hosts=2, devices_per_host=8), planned=True),
            2,
            4,
            "gpu",
            FAIL,
            "This host has 4 gpu(s) and 8 are needed",  # half the GPUs are missing
        ),
    ],
)
def test_replicas(
    expected: Expectation, hosts: int, local: int, kind: str, status: str, fix_says: str | None
) -> None:
    line = doctor_run.replicas_check(expected, _cluster(hosts), local, kind)
    assert line.status == status, line
    assert (fix_says in (line.fix or "")) if fix_says else line.fix is None


def test_a_multi_worker_plan_run_here_is_checked_with_mirrored_strategy() -> None:
    expected = Expectation(
        _config(replicas=2, hosts=2, devices_per_host=1, strategy="multi-worker"), True, True
    )
    choice, line = doctor_run.strategy_check(expected, _cluster(1, "bare"), count=2, kind="cpu")
    assert choice is not None and choice.name == "multi-worker"
    assert line.detail.endswith("checked here as MirroredStrategy over all its replicas in one process")
    local = doctor_run.local_choice(choice, 2)
    assert local is not None and local.name == "mirrored"


def test_a_tpu_plan_without_a_tpu_fails_the_strategy_check() -> None:
    expected = Expectation(
        _config(strategy="tpu", strategy_requested="tpu", accelerator="tpu-v5e"), planned=True
    )
    choice, line = doctor_run.strategy_check(expected, _cluster(1, "bare"), count=1, kind="cpu")
    assert choice is None
    assert line.status == FAIL and "no TPU is attached" in line.detail


@pytest.mark.parametrize(
    ("loss", "copies", "problem"),
    [
        (0.5, {"kernel": [np.ones(2), np.ones(2)]}, None),  # the same on both replicas, and moved
        (float("nan"), {"kernel": [np.ones(2), np.ones(2)]}, "the loss is nan"),  # diverged
        (
            0.5,
            {"kernel": [np.ones(2), np.zeros(2)]},
            "replicas hold different values of ['kernel']",
        ),  # not mirrored
        (0.5, {"kernel": [np.zeros(2), np.zeros(2)]}, "the weights did not move"),  # no update applied
    ],
)
def test_smoke_problem(loss: float, copies: dict[str, list[np.ndarray]], problem: str | None) -> None:
    assert doctor_run.smoke_problem(loss, copies, before=[np.zeros(2)]) == problem


# --- versions and the driver ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("driver", "tf_gpus", "cuda_build", "visible", "status", "fix_says"),
    [
        (None, 0, False, None, OK, None),  # no driver, no GPU: CPU devices
        (2, 0, False, None, FAIL, "pip install 'tensorflow[and-cuda]'"),  # tensorflow-cpu on a GPU host
        (2, 0, True, None, FAIL, "check that the driver supports the CUDA"),  # CUDA build, no GPU found
        (8, 2, True, "0,1", FAIL, "CUDA_VISIBLE_DEVICES='0,1' hides GPUs"),  # 6 of 8 hidden
        (2, 2, True, None, OK, None),  # every GPU seen
    ],
)
def test_gpus(
    driver: int | None, tf_gpus: int, cuda_build: bool, visible: str | None, status: str, fix_says: str | None
) -> None:
    gpus = (
        None
        if driver is None
        else [doctor.Gpu(str(i), "NVIDIA H200", "143771", "550.54.15") for i in range(driver)]
    )
    line = doctor.gpus_check(gpus, tf_gpus, cuda_build=cuda_build, visible=visible)
    assert line.status == status
    assert (fix_says in (line.fix or "")) if fix_says else line.fix is None


def test_nvidia_smi_rows_are_listed() -> None:
    text = "0, NVIDIA H200, 143771, 550.54.15\n1, NVIDIA H200, 143771, 550.54.15\n"
    gpus, line = doctor.nvidia_smi_check(subprocess.CompletedProcess(["nvidia-smi"], 0, text, ""))
    assert gpus is not None and [gpu.index for gpu in gpus] == ["0", "1"]
    assert line == Check(
        "nvidia-smi",
        OK,
        "2 GPU(s): 0: NVIDIA H200, 143771 MiB, driver 550.54.15; 1: NVIDIA H200, 143771 MiB, driver 550.54.15",
    )


def test_a_driver_that_does_not_answer_is_a_fail_line() -> None:
    said = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    gpus, line = doctor.nvidia_smi_check(subprocess.CompletedProcess(["nvidia-smi"], 9, "", said + "\n"))
    assert gpus == []
    assert (line.status, line.detail) == (FAIL, f"nvidia-smi found no working GPU (exit 9): {said}")


def test_no_nvidia_smi_means_no_driver() -> None:
    assert doctor.nvidia_smi_check(None) == (
        None,
        Check("nvidia-smi", OK, "not installed: no NVIDIA driver here"),
    )


@pytest.mark.parametrize(
    ("build", "detail"),
    [
        (
            {
                "is_cuda_build": False,
                "is_rocm_build": False,
                "is_tensorrt_build": False,
            },  # tensorflow-cpu 2.21
            "TensorFlow built without CUDA: a CPU build, which cannot use GPUs",
        ),
        (
            {
                "is_cuda_build": True,
                "cuda_version": "12.5.1",
                "cudnn_version": "9",
            },  # tensorflow[and-cuda] 2.21
            "TensorFlow built with CUDA 12.5.1, cuDNN 9",
        ),
    ],
)
def test_cuda(build: dict[str, Any], detail: str) -> None:
    assert doctor.cuda_check(build) == Check("cuda", OK, detail)


def test_nccl_from_nvidias_image_variable() -> None:
    assert doctor.nccl_check({"NCCL_VERSION": "2.21.5"}, gpus=8) == Check(
        "nccl", OK, "NCCL 2.21.5 (NCCL_VERSION)"
    )


def test_no_nccl_warns_only_where_gpus_would_use_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor, "NCCL_WHEELS", ("no-such-nccl-wheel",))
    assert doctor.nccl_check({}, gpus=1).status == OK
    assert doctor.nccl_check({}, gpus=2).status == WARN


def test_jax_is_needed_only_for_keras_on_jax(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor, "installed", lambda distribution: None)  # a machine without JAX
    assert doctor.jax_check(_config()).status == OK
    assert doctor.jax_check(_config(keras_backend="jax")).status == FAIL


# --- the report ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("statuses", "code"),
    [
        ([], 0),  # nothing checked, nothing failed
        ([OK, OK], 0),
        ([OK, WARN], 0),  # warnings never stop a run
        ([OK, WARN, FAIL], 1),
        ([FAIL], 1),
    ],
)
def test_exit_code(statuses: list[str], code: int) -> None:
    assert exit_code([Check(f"c{i}", status, "d") for i, status in enumerate(statuses)]) == code


def test_the_text_report_puts_each_fix_under_its_line() -> None:
    checks = [Check("python", OK, "3.11.7"), Check("replicas", WARN, "1 replica", "Add a device.")]
    assert render_text(checks).splitlines() == [
        "ok    python    3.11.7",
        "warn  replicas  1 replica",
        "                fix: Add a device.",
        "0 failed, 1 warning, 1 ok",
    ]


def test_the_json_report_reads_back() -> None:
    checks = [Check("python", OK, "3.11.7"), Check("replicas", FAIL, "1 replica", "Add a device.")]
    rows = json.loads(render_json(checks))
    assert rows[1] == {"check": "replicas", "status": "fail", "detail": "1 replica", "fix": "Add a device."}
    assert from_rows(rows) == checks


@pytest.mark.parametrize(
    "rows",
    [
        {"check": "python"},  # not a list
        [{"check": "python", "status": "ok", "detail": "3.11"}],  # no fix key
        [{"check": "python", "status": "fine", "detail": "3.11", "fix": None}],  # unknown status
        [{"check": "python", "status": "ok", "detail": 3.11, "fix": None}],  # detail not a string
    ],
)
def test_a_report_of_another_shape_is_refused(rows: Any) -> None:
    with pytest.raises(ValueError):
        from_rows(rows)


def test_doctor_arguments() -> None:
    args = doctor.parse_args(["--config", "run.json", "--json"])
    assert (args.config, args.as_json) == ("run.json", True)


# --- the real command ----------------------------------------------------------------------


@pytest.mark.multiprocess
def test_the_runtime_command_fails_on_a_broken_tf_config_and_one_device(tmp_path: Path) -> None:
    """``python -m cloudtrain_runtime doctor`` imports TensorFlow, so it runs in its own process."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "CLOUDTRAIN_ROOT": str(tmp_path),
        "TF_CONFIG": '{"cluster": {"worker": ["a:1"]}',
    }
    done = subprocess.run(
        [sys.executable, "-m", "cloudtrain_runtime", "doctor"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    lines = done.stdout.splitlines()
    found = {
        check: (status, detail)
        for status, check, detail in (line.split(maxsplit=2) for line in lines[:-1] if line[:1] != " ")
    }
    assert done.returncode == 1, done.stderr[-2000:]
    assert found["environment"][0] == FAIL and found["environment"][1].startswith(
        "TF_CONFIG must be JSON like"
    )
    assert found["replicas"] == (
        FAIL,
        "1 replica(s): 1 host(s) × 1 cpu device(s); a distributed run needs >= 2",
    )
    assert found["all-reduce"][0] == OK  # one replica still sums to itself
    assert lines[-1].startswith("2 failed, ")
