"""Profiles of real runs, where TensorBoard's profile plugin looks: ``<logs>/plugins/profile/<run>/*.xplane.pb``.

The example trains through the local provider with ``training.profile``, once plainly and
once as emulated Vertex AI (the trace lands in the stand-in bucket's ``logs``, the
``AIP_TENSORBOARD_LOG_DIR`` Vertex AI TensorBoard reads), and ``bench --profile-steps``
traces its extra epoch and names the trace in its input verdict. Runs without the switch
are checked for no trace in tests/cloudtrain/providers/test_compare_runs.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from cloudtrain import api
from cloudtrain.providers import local
from tests.conftest import Result

pytestmark = [pytest.mark.multiprocess, pytest.mark.timeout(600)]

PROFILE = ("resources.hosts=1", "training.epochs=2", 'training.profile={epoch: 2, steps: "3-5"}')


def traces(logs: Path) -> list[Path]:
    return sorted(logs.glob("plugins/profile/*/*.xplane.pb"))


def test_a_local_run_and_an_emulated_vertex_run_write_the_trace_tensorboard_reads(project: Path) -> None:
    spec = api.as_spec(project / "job.yaml", PROFILE)
    runs = [api.submit(spec, "local"), api.submit(spec, local.Local(emulate="vertex"))]
    for run in runs:
        assert run.wait(poll_s=1.0).state == "succeeded", "\n".join(list(run.logs())[-30:])

    plain, vertex = (Path(run.outputs.tensorboard) for run in runs)
    assert (
        plain.name == "logs" and plain.parent.parent == project / "outputs" / "runs"
    )  # ROOT/runs/<run>/logs
    # the stand-in bucket's gs://my-bucket/binary-classifier/runs/<run>/logs: AIP_TENSORBOARD_LOG_DIR
    assert vertex.parts[-6:-2] == ("gcs", "my-bucket", "binary-classifier", "runs") and vertex.name == "logs"
    for run, logs in zip(runs, (plain, vertex), strict=True):
        (trace,) = traces(logs)
        assert trace.stat().st_size > 0
        said = [line for line in run.logs() if "profile of epoch 2, steps 3-5: " in line]
        assert len(said) == 1 and said[0].endswith(str(trace.parent).split("/gcs/", 1)[-1]), said


def test_bench_profile_steps_trace_and_the_input_verdict_names_it(
    project: Path, run_cli: Callable[..., Result]
) -> None:
    job = project / "job.yaml"
    code, out, err = run_cli(
        "bench", str(job), "--steps", "20", "--profile-steps", "2-4", "--json", "--set", "resources.hosts=1"
    )

    assert code == 0, err
    found = json.loads(out)
    profile = found["runs"][0]["profile"]
    assert profile["steps"] == "2-4"
    logs = Path(profile["logs"])
    assert logs.name == "logs" and logs.is_relative_to(
        project / "outputs" / "bench" / "1"
    )  # the root's bench/
    assert [Path(profile["trace"])] == traces(Path(profile["logs"]))
    assert (
        f"Profile of steps 2-4: {profile['trace']} (tensorboard --logdir {profile['logs']}"
        in found["input"]["detail"]
    )
