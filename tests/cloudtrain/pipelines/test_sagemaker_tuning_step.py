"""SageMaker Pipelines: ``tuning_step`` builds the SDK's TuningStep from cloudtrain's sweep render.

Runs in the ``pipelines-sagemaker`` lane (the 2.x SDK), against loopback S3 for the code bundle.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cloudtrain import api
from cloudtrain.errors import ProviderError
from tests.cloudtrain.providers.fakes.sagemaker_aws import LoopbackAws
from tests.conftest import REPO

pytest.importorskip("sagemaker.tuner")  # the SDK, not tests/.../providers/sagemaker

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*is part of the SageMaker Python SDK v2"),
    pytest.mark.filterwarnings("ignore:Popping out 'HyperParameterTuningJobName'"),
]

EXAMPLE = REPO / "examples" / "tuning" / "job.yaml"
IMAGE = "image=123456789012.dkr.ecr.us-east-1.amazonaws.com/cloudtrain-cpu:1"


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackAws]:
    with LoopbackAws() as services:
        services.install(monkeypatch)
        yield services


def step_of(*overrides: str) -> Any:
    from cloudtrain.pipelines.sagemaker import pipeline_session, tuning_step

    spec = api.as_spec(EXAMPLE, (IMAGE, *overrides))
    return tuning_step(spec, session=pipeline_session("us-east-1", telemetry=False))


@pytest.mark.parametrize(
    "overrides", [(), ("resources.spot=true", "tuning.early_stopping=true", "tuning.algorithm=random")]
)
def test_the_tuning_steps_arguments_are_the_sweep_render(
    aws: LoopbackAws, overrides: tuple[str, ...]
) -> None:
    from cloudtrain.pipelines.sagemaker import _same_form, arguments_of

    step = step_of(*overrides)
    rendered = api.render(api.as_spec(EXAMPLE, (IMAGE, *overrides)), "sagemaker")
    rendered.pop("HyperParameterTuningJobName")  # the pipeline names each execution's tuning job
    assert _same_form(arguments_of(step)) == rendered
    best = step.get_top_model_s3_uri(top_k=0, s3_bucket="my-bucket", prefix="tuning-example/output").expr
    assert best["Std:Join"]["Values"][-2:] == [
        {"Get": "Steps.tune.TrainingJobSummaries[0].TrainingJobName"},
        "output/model.tar.gz",
    ]


def test_a_difference_the_sdk_would_make_fails_loudly(
    aws: LoopbackAws, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cloudtrain.pipelines import sagemaker as adapter

    monkeypatch.setattr(adapter, "_same_form", lambda arguments: arguments)  # no equivalent forms allowed
    with pytest.raises(
        ProviderError, match="TuningStep would not send cloudtrain's request: HyperParameterTuningJobConfig"
    ):
        step_of()
