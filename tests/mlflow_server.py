"""A real ``mlflow server`` on loopback, for the tests of tracking.

The server needs the full ``mlflow`` package, whose pins the main environment does not
share, so it runs from its own environment, ``.venv/mlflow-server``, made by the
Makefile's ``$(STAMP)`` rule. Its store is a SQLite file under the test's folder.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cloudtrain_runtime.harness import free_ports

ROOT = Path(__file__).resolve().parents[1]
SERVER_BIN = ROOT / ".venv" / "mlflow-server" / "bin" / "mlflow"
START_TIMEOUT_S = 120
STOP_GRACE_S = 1
# Since MLflow 3.5 a server with a database store also starts a job runner (Huey) process
# for its background jobs (mlflow/environment_variables.py: MLFLOW_SERVER_ENABLE_JOB_EXECUTION,
# default true; mlflow/server/jobs/utils.py: _launch_job_runner). Tracking needs none of it.
SERVER_ENV = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}


def start_server(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``mlflow server`` with a SQLite store in ``folder``; return it and its URL once /health answers."""
    if not SERVER_BIN.exists():
        pytest.skip(
            f"{SERVER_BIN} is missing: run `make .venv/.installed` (CI does) to make the MLflow server's environment"
        )
    folder.mkdir(parents=True, exist_ok=True)
    port = free_ports(1)[0]
    url = f"http://127.0.0.1:{port}"
    argv = [
        str(SERVER_BIN),
        "server",
        "--backend-store-uri",
        f"sqlite:///{folder / 'mlflow.db'}",
        "--artifacts-destination",
        str(folder / "artifacts"),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
    ]
    with (folder / "server.log").open("wb") as log:  # the server keeps its own copy of the descriptor
        server = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **SERVER_ENV},
            start_new_session=True,
        )
    deadline = time.monotonic() + START_TIMEOUT_S
    while not _healthy(url):
        if server.poll() is not None or time.monotonic() > deadline:
            stop_server(server)
            raise RuntimeError(f"mlflow server did not start: {(folder / 'server.log').read_text()[-2000:]}")
        time.sleep(0.5)
    return server, url


def stop_server(server: subprocess.Popen[bytes]) -> None:
    """End the server and the workers it started (its own process group).

    On SIGTERM the server waits for its clients' keep-alive connections to close, and the
    tests' MLflow clients keep theirs open: after a short grace the group is killed, which
    loses nothing (the store is the test's own, read before the fixture ends).
    """
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a real ``mlflow server`` on loopback, one per parallel worker.

    Each test keeps to an experiment or run id of its own, so the tests a worker runs can
    share its server.
    """
    server, url = start_server(tmp_path_factory.mktemp("mlflow-server"))
    yield url
    stop_server(server)
