"""A local job whose one replica is a small script: real runs through the CLI, without TensorFlow."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cloudtrain.providers.local import Local
from tests.cloudtrain.providers.test_local_launcher import stop_runs

Scripted = Callable[[str], Path]


@pytest.fixture
def scripted_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Scripted]:
    """``scripted_job(source)``: a one-host local job.yaml whose replica runs ``source`` with Python.

    Everything else is real: the plan, the bundle, the detached launcher, the run folder
    under ``tmp_path/home`` and its log. Runs still going at the end are cancelled.
    """
    home = tmp_path / "home"
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(home))
    source = tmp_path / "project"
    (source / "trainer").mkdir(parents=True)
    (source / "trainer" / "task.py").write_text(
        "def build_model(config): ...\ndef make_dataset(context): ...\n"
    )
    (source / "job.yaml").write_text(
        "name: scripted\ncode: {module: trainer.task}\nstorage: {root: ./outputs}\n"
    )
    render = Local.render

    def replica_script(self: Local, plan: Any) -> dict[str, Any]:
        request = render(self, plan)
        for replica in request["replicas"]:
            replica["argv"] = [sys.executable, str(source / "replica.py")]
        return request

    monkeypatch.setattr(Local, "render", replica_script)

    def make(script: str) -> Path:
        (source / "replica.py").write_text(script)
        return source / "job.yaml"

    yield make
    stop_runs(home)
