"""``training.profile`` and ``bench --profile-steps``: checked in the spec, carried only when asked for.

What the runtime does with the variable is in tests/cloudtrain_runtime/test_profiling.py;
the traces of real runs in tests/cloudtrain/providers/test_profile_runs.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cloudtrain import api, bench
from cloudtrain.errors import SpecError
from cloudtrain.provider import registry
from cloudtrain.specfile import load_spec
from tests.cloudtrain.test_bench import runtime_result
from tests.conftest import Result

PROFILE = 'training.profile={epoch: 2, steps: "10-20"}'


def variables(request: dict[str, Any]) -> list[dict[str, str]]:
    """Every container's environment in a rendered Vertex, SageMaker or local request."""
    if "jobSpec" in request:
        pools = request["jobSpec"]["workerPoolSpecs"]
        return [{v["name"]: v["value"] for v in pool["containerSpec"]["env"]} for pool in pools]
    if "Environment" in request:
        return [request["Environment"]]
    return [replica["env"] for replica in request["replicas"]]


@pytest.mark.parametrize("provider", ["vertex", "sagemaker", "local"])
def test_every_container_gets_the_window_when_asked_and_nothing_otherwise(
    example_job: Path, provider: str
) -> None:
    profiled = api.render(api.as_spec(example_job, (PROFILE,)), provider)
    plain = api.render(api.as_spec(example_job), provider)
    assert [env.get("CLOUDTRAIN_TRACE_STEPS") for env in variables(profiled)] == ["2:10-20"] * len(
        variables(profiled)
    )
    assert all("CLOUDTRAIN_TRACE_STEPS" not in env for env in variables(plain))


@pytest.mark.parametrize(
    ("override", "error"),
    [
        ('training.profile={epoch: 4, steps: "1-2"}', "profile.epoch=4 is after the last epoch (3)"),
        ('training.profile={epoch: 1, steps: "9-3"}', "steps 9-3 end before they start (FIRST <= LAST)"),
        ("training.profile={epoch: 1, steps: 10}", "training.profile.steps must be a string"),
        ('training.profile={epoch: 1, steps: "ten"}', 'must be FIRST-LAST, e.g. "10-20" (write FIRST-LAST)'),
        ('training.profile={steps: "1-2"}', "training.profile.epoch is required"),
    ],
)
def test_a_bad_profile_is_one_error_line_naming_the_field(
    run_cli: Callable[..., Result], example_job: Path, override: str, error: str
) -> None:
    result = run_cli("validate", str(example_job), "--set", override)
    assert result.code == 2
    assert len(result.errors) == 1 and error in result.errors[0], result.err


def test_bench_profile_steps_reach_every_run_which_then_writes_under_the_storage_root(
    example_job: Path, tmp_path: Path
) -> None:
    spec = load_spec(example_job, ())
    runs = bench.bench_plans(spec, registry.get("local"), 40, tmp_path, profile_steps="2-4")
    assert [run.env["CLOUDTRAIN_TRACE_STEPS"] for run in runs] == ["1:2-4", "1:2-4"]
    assert [run.storage.root for run in runs] == [
        f"{spec.storage.root}/bench/1",
        f"{spec.storage.root}/bench/2",
    ]
    unprofiled = bench.bench_plans(spec, registry.get("local"), 40, tmp_path)
    assert all("CLOUDTRAIN_TRACE_STEPS" not in run.env for run in unprofiled)
    assert all(Path(run.storage.root).is_relative_to(tmp_path) for run in unprofiled)


@pytest.mark.parametrize("steps", ["4-2", "0-3", "2", "two-four"])
def test_bad_profile_steps_are_refused_before_any_run(example_job: Path, tmp_path: Path, steps: str) -> None:
    with pytest.raises(SpecError, match=r'--profile-steps must be FIRST-LAST, e\.g\. "10-20"'):
        bench.bench_plans(
            load_spec(example_job, ()), registry.get("local"), 40, tmp_path, profile_steps=steps
        )


def test_the_input_verdict_names_the_profile_and_how_to_open_it() -> None:
    profile = bench.delivered(
        {
            "steps": "2-4",
            "logdir": "/root/gcs/b/run/logs",
            "trace": "/root/gcs/b/run/logs/plugins/profile/2026_01_01/host.xplane.pb",
        },
        "gs://b/run/logs",
    )
    run = bench.Measurement.from_runtime(
        {**runtime_result(pipeline=900.0, ceiling=1000.0), "profile": profile}
    )
    detail = bench.input_verdict(run).detail
    assert detail.endswith(
        "Profile of steps 2-4: gs://b/run/logs/plugins/profile/2026_01_01/host.xplane.pb "
        "(tensorboard --logdir gs://b/run/logs, Profile tab: where each step's time goes)."
    )
    assert (
        "Profile"
        not in bench.input_verdict(
            bench.Measurement.from_runtime(runtime_result(pipeline=900.0, ceiling=1000.0))
        ).detail
    )


def test_a_profile_the_request_does_not_deliver_says_so() -> None:
    profile = bench.delivered({"steps": "2-4", "logdir": "/opt/ml/output/tensorboard", "trace": None}, "")
    run = bench.Measurement.from_runtime(
        {**runtime_result(pipeline=900.0, ceiling=1000.0), "profile": profile}
    )
    assert "No profile of steps 2-4 reached the job's outputs" in bench.input_verdict(run).detail
