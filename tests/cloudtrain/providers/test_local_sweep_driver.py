"""A local sweep's driver reading a sweep folder edited by hand: the sweep ends failed, saying which file.

The folder is written as ``sweep.submit`` writes it, but for the request's ``env``, and the
driver runs as its own process, as the submit starts it (without detaching, to wait for it).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cloudtrain import api
from cloudtrain.providers import local
from cloudtrain.providers.local.records import write_record
from cloudtrain.providers.local.sweep import (
    BUNDLE_FILE,
    DRIVER_PROGRAM,
    ID_PREFIX,
    REQUEST_FILE,
    STATE_FILE,
    packed_record,
)
from cloudtrain.specfile import load_spec


@pytest.mark.parametrize("env", [["CLOUDTRAIN_MLFLOW_PARENT_RUN_ID=4f2a"], {"SEED": 7}])
def test_a_request_whose_env_is_not_an_object_of_strings_fails_the_sweep_before_any_trial(
    tuning_project: Path, env: Any
) -> None:
    submission = api.prepare(load_spec(tuning_project / "job.yaml"), local.Local(), run_id="edited")
    folder = tuning_project.parent / "home" / "sweeps" / f"{submission.plan.name}-edited"
    folder.mkdir(parents=True)
    write_record(folder / REQUEST_FILE, {**submission.request, "env": env})
    write_record(folder / BUNDLE_FILE, packed_record(submission.bundle, submission.plan))
    write_record(
        folder / STATE_FILE, {"state": "queued", "provider_state": "QUEUED", "detail": "", "trials": []}
    )

    driver = subprocess.run(
        [sys.executable, "-c", DRIVER_PROGRAM, str(folder)], capture_output=True, text=True, timeout=120
    )

    assert driver.returncode == 1, driver.stderr
    sweep = local.provider.attach(f"{ID_PREFIX}{folder.name}")
    status = sweep.status()
    assert (status.state, status.provider_state) == ("failed", "DRIVER_ERROR")
    assert f"The sweep's {REQUEST_FILE} is damaged: its env is not an object of strings." in status.detail
    assert sweep.trials() == []
