"""No silent CPU: the devices a replica sees, judged against its plan, from the facts as probes give them.

``judge`` is a plain function of the plan and a ``Sight``; these rows are the situations a
GPU job meets (a CPU build of TensorFlow, no driver in the container, a driver older than
the CUDA, GPUs hidden, too few GPUs) and the paths that must keep working (CPU plans,
TPU plans, devices emulated on the CPU by the local provider, the spec's CPU fallback).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cloudtrain_runtime import config as config_lib
from cloudtrain_runtime import doctor, doctor_run
from cloudtrain_runtime.device_check import (
    EMULATED,
    FALLBACK,
    OK,
    SHORT,
    Sight,
    judge,
    may_fall_back,
    nvidia_driver,
    planned_kind,
)
from cloudtrain_runtime.diagnosis import FAIL, WARN
from cloudtrain_runtime.errors import ConfigError

DRIVER = "550.54.15"
OLD_DRIVER = "470.256.02"
# /proc/driver/nvidia/version as the 550 driver writes it.
VERSION_FILE = (
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"
)


def _plan(accelerator: str = "t4", per_host: int = 1, **changes: Any) -> config_lib.RuntimeConfig:
    values = {
        **doctor.NO_PLAN,
        "accelerator": accelerator,
        "devices_per_host": per_host,
        "replicas": per_host,
    }
    return config_lib.from_dict({**values, **changes}, "test")


def _sight(gpus: int = 0, **changes: Any) -> Sight:
    facts = {"gpu_build": True, "cuda": "12.5.1", "visible": None, "driver": DRIVER, "library_path": ""}
    return Sight("TensorFlow", gpus, **{**facts, **changes})


@pytest.mark.parametrize(
    ("plan", "sight", "status", "says"),
    [
        (_plan("cpu"), _sight(0, gpu_build=False, driver=None), OK, "planned CPU; TensorFlow sees 0 GPUs"),
        (_plan("tpu-v5e", 4), _sight(0, driver=None), OK, "TPUStrategy checks them"),  # not counted here
        (_plan("t4"), _sight(1), OK, "planned 1 × t4 per host; TensorFlow sees 1 GPU"),
        (_plan("a100-40gb", 8), _sight(8), OK, "planned 8 × a100-40gb per host; TensorFlow sees 8 GPUs"),
        (
            _plan("t4", 2),
            _sight(0, emulated=2),
            EMULATED,
            "emulated on the CPU as 2 device(s)",
        ),  # local provider
        (_plan("t4", 2), _sight(1, emulated=2), SHORT, "but TensorFlow sees 1 GPU"),  # real GPUs, too few
        (_plan("t4"), _sight(0, gpu_build=False), SHORT, "no CUDA support (tensorflow-cpu is installed"),
        (_plan("t4"), _sight(0, driver=None), SHORT, "no NVIDIA driver reaches the container"),
        (_plan("t4"), _sight(0, visible=""), SHORT, "CUDA_VISIBLE_DEVICES='' hides GPUs: unset it."),
        (_plan("t4", 8), _sight(4), SHORT, "has 4 usable GPU(s), fewer than the plan"),
        (_plan("t4"), _sight(0, driver=OLD_DRIVER), SHORT, "(12.5.1) needs CUDA forward compatibility"),
        (_plan("t4", allow_cpu_fallback=True), _sight(0), FALLBACK, "Training on the CPU instead"),
        (_plan("t4", 8, allow_cpu_fallback=True), _sight(4), SHORT, "fewer than the plan"),  # only from none
        (_plan("cpu", allow_cpu_fallback=True), _sight(0), OK, "planned CPU"),  # nothing to fall back from
    ],
)
def test_judge(plan: config_lib.RuntimeConfig, sight: Sight, status: str, says: str) -> None:
    verdict = judge(plan, sight)
    assert (verdict.status, says in verdict.line) == (status, True), verdict.line
    assert "\n" not in verdict.line  # one line, as the runtime prints it


def test_a_shortfall_names_the_shape_what_is_seen_and_the_cause_in_one_line() -> None:
    verdict = judge(_plan("t4", 2), _sight(0, driver=OLD_DRIVER, library_path="/usr/local/lib"))
    assert verdict.line == (
        "Planned 2 × t4 per host, but TensorFlow sees 0 GPUs (built with CUDA 12.5.1; CUDA_VISIBLE_DEVICES "
        f"unset; NVIDIA driver {OLD_DRIVER}). Likely cause: CUDA does not start with driver {OLD_DRIVER}: a "
        "driver older than the CUDA TensorFlow was built with (12.5.1) needs CUDA forward compatibility "
        "(/usr/local/cuda/compat on LD_LIBRARY_PATH; here it is not), or the CUDA libraries are missing "
        "(TF_CPP_MIN_LOG_LEVEL=0 shows TensorFlow's 'Cannot dlopen' lines). To train on the CPU on "
        "purpose, set resources.allow_cpu_fallback: true."
    )


def test_the_fallback_keeps_the_planned_replicas_and_global_batch() -> None:
    verdict = judge(_plan("t4", 2, allow_cpu_fallback=True, per_replica_batch=16), _sight(0, driver=None))
    assert verdict.status == FALLBACK
    assert verdict.instead == (
        "Training on the CPU instead, as resources.allow_cpu_fallback allows: 2 logical CPU device(s) per "
        "host, global batch 32 as planned."
    )
    assert "no NVIDIA driver" in (verdict.cause or "")  # doctor's fix still says why
    assert "set resources.allow_cpu_fallback" not in verdict.line  # already set


def test_a_jax_sight_names_jax() -> None:
    verdict = judge(_plan("t4", keras_backend="jax"), Sight("JAX", 0, None, None, None, DRIVER))
    assert verdict.line.startswith(
        "Planned 1 × t4 per host, but JAX sees 0 GPUs (CUDA_VISIBLE_DEVICES unset;"
    )


@pytest.mark.parametrize(
    ("accelerator", "kind", "allowed", "falls_back"),
    [
        ("cpu", "cpu", True, False),  # a CPU plan runs on the CPU anyway
        ("tpu-v5e", "tpu", False, False),
        ("l4", "gpu", True, True),
        ("l4", "gpu", False, False),  # the default: stop
    ],
)
def test_planned_kind_and_fallback(accelerator: str, kind: str, allowed: bool, falls_back: bool) -> None:
    plan = _plan(accelerator, allow_cpu_fallback=allowed)
    assert (planned_kind(plan), may_fall_back(plan)) == (kind, falls_back)


@pytest.mark.parametrize(
    ("content", "driver"),
    [
        (VERSION_FILE, DRIVER),
        (  # recorded on an H200 host with NVIDIA's open kernel modules, where the DLC's sed reads ""
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)  \n"
            "GCC version:  gcc version 15.3.0 (GCC) \n",
            "580.159.04",
        ),
        ("not a driver file\n", None),
        (b"\xff\xfe\x00garbage", None),  # corrupt: never a traceback
        (None, None),  # no driver: no file
    ],
)
def test_nvidia_driver(tmp_path: Path, content: str | bytes | None, driver: str | None) -> None:
    path = tmp_path / "version"
    if isinstance(content, str):
        path.write_text(content)
    elif content is not None:
        path.write_bytes(content)
    assert nvidia_driver(path) == driver


@pytest.mark.parametrize(
    ("plan", "sight", "status"),
    [
        (_plan("t4"), _sight(1), "ok"),
        (_plan("t4"), _sight(0), FAIL),
        (_plan("t4", allow_cpu_fallback=True), _sight(0), WARN),
    ],
)
def test_doctor_reports_the_same_verdict(plan: config_lib.RuntimeConfig, sight: Sight, status: str) -> None:
    verdict = judge(plan, sight)
    check = doctor_run.plan_devices_check(verdict)
    assert (check.check, check.status) == ("plan-devices", status)
    assert verdict.detail in check.detail
    if status == FAIL:
        assert check.fix == verdict.cause
    if status == WARN:
        assert check.fix is not None and (verdict.cause or "") in check.fix


def test_the_runtime_config_defaults_to_no_fallback() -> None:
    assert config_lib.from_dict(doctor.NO_PLAN, "older SDK").allow_cpu_fallback is False
    with pytest.raises(ConfigError, match="'allow_cpu_fallback' must be a boolean"):
        config_lib.from_dict({**doctor.NO_PLAN, "allow_cpu_fallback": "yes"}, "test")
