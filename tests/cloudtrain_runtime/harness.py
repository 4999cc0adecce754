"""Run the real entrypoint as several processes on loopback, like hosts of one job.

Each process gets its own TF_CONFIG with free loopback ports, the same
CLOUDTRAIN_ROOT and a clean environment. When one process dies the harness kills its
siblings after a 3 s grace: the survivors would otherwise block in an all-reduce until
the heartbeat timeout (~10 s for TensorFlow, 100 s for JAX).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TRAINERS = Path(__file__).parent / "trainers"
SIBLING_GRACE_S = 3.0
_SCRUBBED = ("TF_CONFIG", "CLUSTER_SPEC", "TF_USE_LEGACY_KERAS", "KERAS_BACKEND", "XLA_FLAGS")


@dataclass(frozen=True)
class Run:
    """What a launch left behind: exit codes, each process's output and the chief's results."""

    returncodes: list[int]
    outputs: list[str]
    root: Path
    results_dir: Path

    @property
    def ok(self) -> bool:
        return all(code == 0 for code in self.returncodes)

    @property
    def result(self) -> dict[str, Any]:
        return json.loads((self.results_dir / "cloudtrain-result.json").read_text())

    def explain(self) -> str:
        return "\n".join(
            f"--- process {i} rc={rc}\n{out[-3000:]}"
            for i, (rc, out) in enumerate(zip(self.returncodes, self.outputs, strict=True))
        )


def free_ports(count: int) -> list[int]:
    """``count`` distinct free loopback ports (bound together, then released)."""
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def runtime_config(root: Path, **overrides: Any) -> dict[str, Any]:
    """A runtime configuration for the test trainers, writing under ``root``."""
    config = {
        "name": "runtime-test",
        "module": "regression",
        "epochs": 3,
        "per_replica_batch": 16,
        "replicas": 2,
        "hosts": 2,
        "learning_rate": 0.01,
        "base_learning_rate": 0.01,
        "mixed_precision": "off",
        "strategy": "auto",
        "keras_backend": "tensorflow",
        "accelerator": "cpu",
        "devices_per_host": 1,
        "backup_dir": str(root / "backup"),
        "tensorboard_dir": str(root / "logs"),
        "export_dir": str(root / "out" / "model"),
    }
    config.update(overrides)
    return config


def launch(
    processes: int,
    config: Mapping[str, Any],
    root: Path,
    *,
    code_dir: Path = TRAINERS,
    env: Mapping[str, str] | None = None,
    timeout: float = 240,
) -> Run:
    """Start ``processes`` entrypoints (TF_CONFIG only when > 1) and wait for all of them."""
    root.mkdir(parents=True, exist_ok=True)
    config_file = root / f"config-{time.monotonic_ns()}.json"
    config_file.write_text(json.dumps(config))
    addresses = [f"127.0.0.1:{port}" for port in free_ports(processes)]
    logs = [root / f"process-{i}-{time.monotonic_ns()}.log" for i in range(processes)]
    argv = ["--config", str(config_file)]
    procs = [_start(argv, _env(root, env, addresses, i), code_dir, log) for i, log in enumerate(logs)]
    return _finish(procs, logs, root, Path(config["export_dir"]).parent, timeout)


def launch_sagemaker(
    hosts: int,
    config: Mapping[str, Any],
    root: Path,
    *,
    code_dir: Path = TRAINERS,
    env: Mapping[str, str] | None = None,
    timeout: float = 240,
) -> Run:
    """Emulate SageMaker hosts algo-1..N, each with its own /opt/ml tree under ``root/algo-i``.

    As on SageMaker: no TF_CONFIG, ``resourceconfig.json`` and ``hyperparameters.json``
    (the config as the ``cloudtrain_config`` string) in each tree, and the container
    started with the argument ``train``. CLOUDTRAIN_HOSTS maps the host names to
    loopback ports, since algo-N do not resolve here. ``env`` is added to every host's environment.
    """
    names = [f"algo-{i + 1}" for i in range(hosts)]
    overrides = ",".join(
        f"{name}=127.0.0.1:{port}" for name, port in zip(names, free_ports(hosts), strict=True)
    )
    procs, logs = [], []
    for name in names:
        host_root = root / name
        _write_sagemaker_config(host_root, name, names, config)
        logs.append(host_root / "process.log")
        host_env = _env(host_root, {**(env or {}), "CLOUDTRAIN_HOSTS": overrides}, [], 0)
        procs.append(_start(["train"], host_env, code_dir, logs[-1]))
    return _finish(procs, logs, root, root / names[0] / "opt/ml/output/data", timeout)


def _write_sagemaker_config(host_root: Path, name: str, names: list[str], config: Mapping[str, Any]) -> None:
    folder = host_root / "opt/ml/input/config"
    folder.mkdir(parents=True)
    (folder / "resourceconfig.json").write_text(json.dumps({"current_host": name, "hosts": names}))
    (folder / "hyperparameters.json").write_text(json.dumps({"cloudtrain_config": json.dumps(config)}))


def _finish(
    procs: list[subprocess.Popen[bytes]], logs: list[Path], root: Path, results: Path, timeout: float
) -> Run:
    returncodes = _wait_all(procs, timeout)
    return Run(returncodes, [log.read_text() for log in logs], root, results)


def _env(root: Path, extra: Mapping[str, str] | None, addresses: list[str], index: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED and not k.startswith("CLOUDTRAIN_")}
    env.update(CLOUDTRAIN_ROOT=str(root), TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1")
    if len(addresses) > 1:
        cluster = {"worker": addresses}
        env["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})
    env.update(extra or {})
    return env


def _start(argv: list[str], env: dict[str, str], code_dir: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "cloudtrain_runtime", *argv],
            cwd=code_dir,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _wait_all(procs: list[subprocess.Popen[bytes]], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while None in (codes := [p.poll() for p in procs]):  # poll every process, every round
        if any(code not in (None, 0) for code in codes):
            # A real peer notices a death only at the next collective or heartbeat, so the
            # survivors get a moment to finish what they were writing (their backups).
            deadline = min(deadline, time.monotonic() + SIBLING_GRACE_S)
        if time.monotonic() > deadline:
            for p in procs:
                if p.poll() is None:
                    p.kill()
        time.sleep(0.2)
    return codes


def exported_weights(export: str) -> dict[str, Any]:
    """The trainable variables of an exported SavedModel, by name, as numpy arrays."""
    import tensorflow as tf

    loaded = tf.saved_model.load(export)
    return {variable.name: variable.numpy() for variable in loaded.trainable_variables}
