"""``cloudtrain-runtime doctor``: are the devices, versions and cluster what the plan expects?

A job on the wrong hardware can look healthy: with one GPU visible instead of eight it
still trains, on a global batch the plan never chose. Doctor checks, before a run is
trusted:

- **the plan** (``--config``, ``CLOUDTRAIN_CONFIG`` or the SageMaker hyperparameters, as
  the runtime reads it); without one it expects the smallest distributed job: >= 2
  replicas, strategy ``auto``;
- **the environment** the provider gave, read by the runtime's own adapters
  (``cloudtrain_runtime.cluster``): who this replica is, who is chief, how many hosts;
- **versions**: Python, TensorFlow, Keras, JAX, CUDA and cuDNN (TensorFlow's build),
  NCCL where known;
- **devices** each framework sees, and ``nvidia-smi``'s rows where the driver is installed;
- **a run**: the strategy the runtime would create here, its replica count (>= 2, or the
  plan's), one Keras training step under it, and an all-reduce whose sum is checked on
  every replica.

Every check is one ``Check`` (``cloudtrain_runtime.diagnosis``): ``ok``, ``warn`` or
``fail``, with the fix when it is not ok; the exit status is 1 when any check fails.
This module checks the plan, the environment, the versions and the driver, and runs
the rest (``cloudtrain_runtime.doctor_run``). Probing (TensorFlow, JAX, nvidia-smi) is
kept apart from judging, which is plain functions of the facts found.

Example:
>>> tf_config = '{"cluster": {"chief": ["a:2222"], "worker": ["b:2222"]}, "task": {"type": "worker", "index": 0}}'
>>> _, line = environment_check({"TF_CONFIG": tf_config}, root="/")
>>> line.status, line.detail
('ok', 'TF_CONFIG: this replica is worker_0, rank 1 of 2 host(s), not the chief; chief: a:2222')
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from types import ModuleType
from typing import Any

from cloudtrain_runtime import cluster as cluster_lib
from cloudtrain_runtime import config as config_lib
from cloudtrain_runtime import devices, doctor_run, environments
from cloudtrain_runtime.diagnosis import (
    FAIL,
    OK,
    ORDER,
    WARN,
    Check,
    Expectation,
    exit_code,
    render_json,
    render_text,
)
from cloudtrain_runtime.errors import ClusterError, ConfigError
from cloudtrain_runtime.paths import root_from, under_root
from cloudtrain_runtime.replica import ClusterInfo

# What doctor holds a machine to when no plan is given: the smallest distributed job,
# 2 replicas on one host, strategy auto, Keras on TensorFlow. Only the counts, the
# strategy and the backend are read; the paths are never opened.
NO_PLAN: dict[str, Any] = {
    "name": "doctor",
    "epochs": 1,
    "per_replica_batch": 1,
    "replicas": 2,
    "learning_rate": 0.01,
    "base_learning_rate": 0.01,
    "mixed_precision": "off",
    "strategy": "auto",
    "strategy_requested": "auto",
    "keras_backend": "tensorflow",
    "accelerator": "cpu",
    "devices_per_host": 2,
    "hosts": 1,
    "backup_dir": "unused",
    "tensorboard_dir": "unused",
    "export_dir": "unused",
}
# NVIDIA's CUDA images set NCCL_VERSION; TensorFlow's [and-cuda] extra installs NCCL as a wheel.
NCCL_VERSION_ENV = "NCCL_VERSION"
NCCL_WHEELS = ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11")
NVIDIA_SMI_QUERY = ("--query-gpu=index,name,memory.total,driver_version", "--format=csv,noheader,nounits")
NVIDIA_SMI_TIMEOUT_S = 30
# TensorFlow's stock images ship tensorflow; the runtime extra installs tensorflow-cpu.
INSTALL_TENSORFLOW = "Install TensorFlow: pip install 'cloudtrain[runtime]' (or tensorflow), or use an image built from containers/."


def config_source(config_file: str | None, env: Mapping[str, str], root: str) -> str | None:
    """Where ``config.load`` would read the plan from (in its order), or None when nowhere."""
    if config_file:
        return f"--config {config_file}"
    if env.get(config_lib.CONFIG_ENV):
        return config_lib.CONFIG_ENV
    files = (file for _, file in environments.hyperparameter_files())
    return next((file for file in files if under_root(root, file).is_file()), None)


def expectation(
    config_file: str | None, env: Mapping[str, str], root: str, cluster: ClusterInfo
) -> tuple[Expectation, Check]:
    """The plan this machine is held to, and the ``config`` line saying where it came from."""
    source = config_source(config_file, env, root)
    defaults = Expectation(config_lib.from_dict(NO_PLAN, "doctor's defaults"), planned=False)
    if source is None:
        return defaults, Check(
            "config", OK, "no plan given: expecting >= 2 replicas, strategy auto, Keras on TensorFlow"
        )
    try:
        config = config_lib.load(config_file, env, root, environments.hyperparameter_files())
    except ConfigError as err:
        fix = "Pass the plan's runtime configuration (cloudtrain doctor JOB does), or none to check for >= 2 replicas."
        return defaults, Check("config", FAIL, str(err), fix)
    stand_in = cluster.provider == environments.BareMachine.provider and config.hosts > 1
    planned = Expectation(config, planned=True, stand_in=stand_in)
    detail = (
        f"the plan from {source}: {config.hosts} host(s) × {config.devices_per_host} device(s) = "
        f"{config.replicas} replicas, strategy {config.strategy}, Keras on {config.keras_backend}"
    )
    return planned, Check("config", OK, detail)


def environment_check(env: Mapping[str, str], root: str) -> tuple[ClusterInfo, Check]:
    """This replica's place in the job, read by the runtime's adapters; a bare machine when unreadable."""
    adapter = environments.detect(env, root)
    try:
        info = cluster_lib.from_environment(env, root)
    except ClusterError as err:
        fix = (
            "Correct the value the message names to the shape it shows; outside a training job, "
            "remove it to check this machine alone."
        )
        return environments.BareMachine().cluster(env, root), Check("environment", FAIL, str(err), fix)
    return info, Check("environment", OK, describe_cluster(adapter.label, info))


def describe_cluster(label: str, info: ClusterInfo) -> str:
    """``TF_CONFIG: this replica is worker_0, rank 1 of 2 hosts, not the chief; chief: a:2222``."""
    role = "the chief" if info.is_chief else "not the chief"
    text = (
        f"{label}: this replica is {info.task_id}, rank {info.rank} of {info.num_hosts} host(s), "
        f"{role}; chief: {info.hosts[0]}"
    )
    if info.tf_config is not None:
        text += f"; TF_CONFIG the runtime writes: {json.dumps(info.tf_config, separators=(',', ':'))}"
    return text


def hosts_check(expected: Expectation, cluster: ClusterInfo) -> Check | None:
    """The environment must have the plan's hosts; None when there is no plan to compare with."""
    config = expected.config
    if not expected.planned:
        return None
    if expected.stand_in:
        return Check(
            "hosts",
            OK,
            f"this machine stands in for the plan's {config.hosts} hosts: all {config.replicas} "
            "replicas run in this one process",
        )
    if cluster.num_hosts != config.hosts:
        return Check(
            "hosts",
            FAIL,
            f"the plan expects {config.hosts} host(s), but the environment gave {cluster.num_hosts}",
            "Run the job the plan was made for (resources.hosts), and check that the provider started every host.",
        )
    return Check("hosts", OK, f"{cluster.num_hosts} host(s), as planned")


def peers_check(cluster: ClusterInfo) -> Check | None:
    """Whether every peer's host name resolves now, where the environment names peers before they do."""
    hint = environments.named(cluster.provider).peer_hint
    if hint is None or cluster.num_hosts < 2:
        return None
    try:
        cluster_lib.wait_for_peers(cluster, attempts=1)
    except ClusterError as err:
        fix = "Peers resolve only once every host has started, so the runtime retries with back-off; rerun doctor in a minute."
        return Check("peers", WARN, str(err), fix)
    return Check("peers", OK, f"every peer's host name resolves: {', '.join(cluster.hosts)}")


def installed(distribution: str) -> str | None:
    """The installed version of ``distribution``, or None; read from metadata, nothing imported."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def python_check() -> Check:
    """The interpreter the runtime runs on: its version and where it lives (a venv or the image's)."""
    return Check("python", OK, f"{platform.python_version()} ({sys.executable})")


def import_tensorflow() -> tuple[ModuleType | None, Check]:
    """TensorFlow, imported once the environment is prepared (it reads TF_CONFIG and log levels at import)."""
    try:
        import tensorflow as tf
    except ImportError as err:
        return None, Check("tensorflow", FAIL, f"TensorFlow cannot be imported: {err}", INSTALL_TENSORFLOW)
    return tf, Check("tensorflow", OK, f"{tf.__version__} ({os.path.dirname(tf.__file__)})")


def keras_check(config: config_lib.RuntimeConfig, env: MutableMapping[str, str]) -> Check:
    """Keras 3 (or tf_keras under TF_USE_LEGACY_KERAS=1), and the backend the plan trains on."""
    name = "tf_keras" if devices.legacy_keras(env) else "keras"
    version = installed(name.replace("_", "-"))
    if version is None:
        return Check("keras", FAIL, f"{name} is not installed", f"pip install {name}")
    return Check("keras", OK, f"{name} {version}, backend {config.keras_backend}")


def jax_check(config: config_lib.RuntimeConfig) -> Check:
    """JAX and jaxlib: needed only when the plan trains Keras on JAX."""
    jax, jaxlib = installed("jax"), installed("jaxlib")
    if jax is None or jaxlib is None:
        status = FAIL if config.keras_backend == "jax" else OK
        fix = "pip install 'cloudtrain[jax]'" if status == FAIL else None
        return Check("jax", status, "not installed (needed only for training.keras_backend: jax)", fix)
    return Check("jax", OK, f"jax {jax}, jaxlib {jaxlib}")


def cuda_check(build: Mapping[str, Any]) -> Check:
    """The CUDA and cuDNN TensorFlow was built with (``tf.sysconfig.get_build_info()``)."""
    if build.get("is_cuda_build"):
        detail = f"TensorFlow built with CUDA {build.get('cuda_version', '?')}, cuDNN {build.get('cudnn_version', '?')}"
    elif build.get("is_rocm_build"):
        detail = f"TensorFlow built with ROCm {build.get('rocm_version', '?')}"
    else:
        detail = "TensorFlow built without CUDA: a CPU build, which cannot use GPUs"
    return Check("cuda", OK, detail)


def nccl_version(env: Mapping[str, str]) -> tuple[str, str] | None:
    """(NCCL version, where it was found), or None where nothing says."""
    if env.get(NCCL_VERSION_ENV):
        return env[NCCL_VERSION_ENV], NCCL_VERSION_ENV
    found = ((installed(wheel), wheel) for wheel in NCCL_WHEELS)
    return next(((version, wheel) for version, wheel in found if version), None)


def nccl_check(env: Mapping[str, str], gpus: int) -> Check:
    """NCCL all-reduces across GPUs; with fewer than 2 GPUs nothing here uses it."""
    found = nccl_version(env)
    if found is not None:
        return Check("nccl", OK, f"NCCL {found[0]} ({found[1]})")
    if gpus < 2:
        return Check("nccl", OK, "not found; not needed here: NCCL all-reduces across GPUs only")
    return Check(
        "nccl",
        WARN,
        f"no NCCL version found ({NCCL_VERSION_ENV} unset, no {' or '.join(NCCL_WHEELS)} wheel) "
        f"with {gpus} GPUs",
        "The all-reduce check says whether it works. TensorFlow's GPU wheels bring NCCL: "
        "pip install 'tensorflow[and-cuda]'.",
    )


@dataclass(frozen=True)
class Gpu:
    """One row of ``nvidia-smi --query-gpu``."""

    index: str
    name: str
    memory_mib: str
    driver: str

    def __str__(self) -> str:
        return f"{self.index}: {self.name}, {self.memory_mib} MiB, driver {self.driver}"


def parse_nvidia_smi(text: str) -> list[Gpu]:
    """The rows of ``nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader,nounits``.

    Example:
    >>> parse_nvidia_smi("0, NVIDIA H200, 143771, 550.54.15\\n")
    [Gpu(index='0', name='NVIDIA H200', memory_mib='143771', driver='550.54.15')]
    """
    rows = [[cell.strip() for cell in line.split(",")] for line in text.splitlines() if line.strip()]
    return [Gpu(*cells) for cells in rows if len(cells) == len(dataclasses.fields(Gpu))]


def run_nvidia_smi() -> subprocess.CompletedProcess[str] | None:
    """nvidia-smi's answer to the GPU query, or None where the binary is not installed."""
    binary = shutil.which("nvidia-smi")
    if binary is None:
        return None
    try:
        return subprocess.run(
            [binary, *NVIDIA_SMI_QUERY], capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return subprocess.CompletedProcess([binary], 1, "", f"{type(err).__name__}: {err}")


def nvidia_smi_check(done: subprocess.CompletedProcess[str] | None) -> tuple[list[Gpu] | None, Check]:
    """The driver's GPUs (None when nvidia-smi is not installed) and the ``nvidia-smi`` line."""
    if done is None:
        return None, Check("nvidia-smi", OK, "not installed: no NVIDIA driver here")
    gpus = parse_nvidia_smi(done.stdout) if done.returncode == 0 else []
    if done.returncode != 0 or not gpus:
        said = (done.stderr or done.stdout).strip().splitlines()[:1] or ["no output"]
        return [], Check(
            "nvidia-smi",
            FAIL,
            f"nvidia-smi found no working GPU (exit {done.returncode}): {said[0]}",
            "The driver does not reach the GPUs: use a machine type with GPUs, and start the "
            "container with them (docker run --gpus all).",
        )
    return gpus, Check("nvidia-smi", OK, f"{len(gpus)} GPU(s): {'; '.join(map(str, gpus))}")


def gpus_check(
    driver_gpus: list[Gpu] | None, tf_gpus: int, *, cuda_build: bool, visible: str | None
) -> Check:
    """Whether TensorFlow sees every GPU the driver lists.

    ``driver_gpus`` is nvidia-smi's list (None without nvidia-smi); ``visible`` the value
    of CUDA_VISIBLE_DEVICES, if set.
    """
    hidden = f"CUDA_VISIBLE_DEVICES={visible!r} hides GPUs: unset it" if visible is not None else ""
    if not driver_gpus:
        return Check(
            "gpus", OK, f"TensorFlow sees {tf_gpus} GPU(s)" if tf_gpus else "no GPU here: CPU devices"
        )
    listed = len(driver_gpus)
    if tf_gpus == 0 and not cuda_build:
        return Check(
            "gpus",
            FAIL,
            f"nvidia-smi lists {listed} GPU(s), but this TensorFlow is a CPU build and sees none",
            "Install TensorFlow with CUDA: pip install 'tensorflow[and-cuda]', or use a TensorFlow GPU image.",
        )
    if tf_gpus < listed:
        fix = hidden or (
            "TensorFlow cannot load CUDA for them: check that the driver supports the CUDA TensorFlow "
            "was built with (the cuda line; nvidia-smi's header shows the highest it supports)."
        )
        return Check("gpus", FAIL, f"nvidia-smi lists {listed} GPU(s), but TensorFlow sees {tf_gpus}", fix)
    return Check("gpus", OK, f"TensorFlow sees all {listed} GPU(s) nvidia-smi lists")


def driver_checks(tf: ModuleType, env: Mapping[str, str], driver_gpus: list[Gpu] | None) -> list[Check]:
    """TensorFlow's CUDA build, NCCL, and whether TensorFlow sees the GPUs the driver lists."""
    build = dict(tf.sysconfig.get_build_info())
    tf_gpus = len(tf.config.list_physical_devices("GPU"))
    visible = env.get("CUDA_VISIBLE_DEVICES")
    cuda_build = bool(build.get("is_cuda_build"))
    return [
        cuda_check(build),
        nccl_check(env, tf_gpus),
        gpus_check(driver_gpus, tf_gpus, cuda_build=cuda_build, visible=visible),
    ]


def run(config_file: str | None, env: MutableMapping[str, str], root: str) -> list[Check]:
    """Every check, in report order (``ORDER``); ``env`` is prepared for TensorFlow and JAX on the way.

    JAX lists its devices before TensorFlow creates its own, so neither finds the GPU
    memory taken by the other.
    """
    cluster, environment_line = environment_check(env, root)
    expected, config_line = expectation(config_file, env, root, cluster)
    checks = [config_line, environment_line]
    checks += [line for line in (hosts_check(expected, cluster), peers_check(cluster)) if line]
    try:
        devices.prepare_environment(expected.config, cluster, env)
    except ConfigError as err:
        return [
            *checks,
            Check("keras", FAIL, str(err), "Change the environment or the spec as the message says."),
        ]
    tf, tensorflow_line = import_tensorflow()
    checks += [python_check(), tensorflow_line, keras_check(expected.config, env), jax_check(expected.config)]
    driver_gpus, smi_line = nvidia_smi_check(run_nvidia_smi())
    checks += [smi_line, doctor_run.jax_devices_check(expected.config, env)]
    if tf is not None:
        checks += driver_checks(tf, env, driver_gpus)
        checks += doctor_run.tensorflow_checks(expected, cluster, tf, env)
    return sorted(checks, key=lambda check: ORDER.index(check.check))


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """``cloudtrain-runtime doctor [--config FILE] [--json]``.

    Example:
    >>> parse_args(["--json"]).as_json
    True
    """
    parser = argparse.ArgumentParser(
        prog="cloudtrain-runtime doctor",
        description="Check devices, versions, the cluster and an all-reduce before trusting a run. "
        "Exit status 1 when any check fails.",
    )
    parser.add_argument(
        "--config", help="the plan's runtime configuration JSON file (else CLOUDTRAIN_CONFIG)"
    )
    parser.add_argument(
        "--json",
        dest="as_json",
        action="store_true",
        help="print a JSON list of {check, status, detail, fix}",
    )
    return parser.parse_args(list(argv))


def main(argv: Sequence[str], env: MutableMapping[str, str]) -> int:
    """Run every check, print the report, and return the exit status."""
    args = parse_args(argv)
    checks = run(args.config, env, root_from(env))
    print(render_json(checks) if args.as_json else render_text(checks), flush=True)
    return exit_code(checks)
