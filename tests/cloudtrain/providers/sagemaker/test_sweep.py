"""A sweep on SageMaker: CreateHyperParameterTuningJob checked by botocore's model, and its life
through the real boto3 client against the loopback SageMaker, objective read off the runtime's lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import cloudtrain
from cloudtrain import api
from cloudtrain.errors import SpecError
from cloudtrain.provider.sweeps import HasTrials
from cloudtrain.providers import sagemaker
from cloudtrain.providers.sagemaker import toolkit
from cloudtrain_runtime.callbacks import Progress
from cloudtrain_runtime.config import join_pieces
from tests.cloudtrain.providers.fakes import sagemaker_model
from tests.cloudtrain.providers.fakes.sagemaker_aws import LoopbackAws

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "tuning" / "job.yaml"
IMAGE = "image=123456789012.dkr.ecr.us-east-1.amazonaws.com/cloudtrain-cpu:1"


RUN = "r1"  # one run id for every render compared, so the run's prefix is the same


def rendered(*overrides: str) -> dict[str, Any]:
    return api.prepare(api.as_spec(EXAMPLE, (IMAGE, *overrides)), "sagemaker", run_id=RUN).request


@pytest.mark.parametrize(
    "overrides",
    [
        (),  # the example: a log-scale float and discrete widths
        ("tuning.algorithm=random", "tuning.early_stopping=true", "resources.spot=true"),
        (
            "tuning.parameters={units: {type: int, min: 2, max: 5}, act: {type: categorical, values: [relu, tanh]}}",
            "tuning.algorithm=grid",
        ),
    ],
)
def test_the_render_passes_botocores_model(overrides: tuple[str, ...]) -> None:
    body = rendered(*overrides)
    assert sagemaker_model.problems("CreateHyperParameterTuningJob", body) == []
    assert len(body["HyperParameterTuningJobName"]) <= 32


def test_the_trials_run_the_jobs_own_training_request() -> None:
    body = rendered("resources.spot=true")
    job = api.prepare(
        api.as_spec(EXAMPLE, (IMAGE, "resources.spot=true", "tuning=null")), "sagemaker", run_id=RUN
    ).request
    definition = body["TrainingJobDefinition"]
    for field in (
        "RoleArn",
        "ResourceConfig",
        "StoppingCondition",
        "EnableManagedSpotTraining",
        "CheckpointConfig",
        "OutputDataConfig",
        "InputDataConfig",
        "Environment",
    ):
        assert definition[field] == job[field], field
    # The runtime configuration travels as the static hyperparameters, with the sweep's own keys.
    config = json.loads(join_pieces(definition["StaticHyperParameters"]))
    assert config["tuned"] == {"learning_rate": "float", "width": "int"} and "hparams" not in config
    assert config == {
        **json.loads(join_pieces(job["HyperParameters"])),
        "tuned": config["tuned"],
        "objective": "val_binary_accuracy",
    }
    config = body["HyperParameterTuningJobConfig"]
    assert config["Strategy"] == "Bayesian"
    assert config["HyperParameterTuningJobObjective"] == {
        "Type": "Maximize",
        "MetricName": "val_binary_accuracy",
    }
    assert config["ParameterRanges"] == {
        "ContinuousParameterRanges": [
            {"Name": "learning_rate", "MinValue": "0.001", "MaxValue": "0.1", "ScalingType": "Logarithmic"}
        ],
        "CategoricalParameterRanges": [{"Name": "width", "Values": ["4", "16", "64"]}],
    }
    names = [d["Name"] for d in definition["AlgorithmSpecification"]["MetricDefinitions"]]
    assert "val_binary_accuracy" in names  # the objective is read off the logs


def test_image_auto_starts_each_trial_through_the_deep_learning_containers_toolkit() -> None:
    """regression: refused, as HyperParameterAlgorithmSpecification has no ContainerEntrypoint."""
    body = rendered("image=auto")
    assert sagemaker_model.problems("CreateHyperParameterTuningJob", body) == []
    definition = body["TrainingJobDefinition"]
    [code] = definition["InputDataConfig"]
    assert definition["StaticHyperParameters"] == {
        "sagemaker_container_log_level": "20",
        "sagemaker_program": ".cloudtrain-runtime/cloudtrain_runtime/providers/sagemaker_trial.sh",
        "sagemaker_region": "us-east-1",
        "sagemaker_submit_directory": code["DataSource"]["S3DataSource"]["S3Uri"],
    }
    assert set(definition["AlgorithmSpecification"]) == {
        "TrainingImage",
        "TrainingInputMode",
        "MetricDefinitions",
    }
    assert (
        "dkr.ecr.us-east-1.amazonaws.com/tensorflow-training:"
        in definition["AlgorithmSpecification"]["TrainingImage"]
    )
    env = definition["Environment"]
    pieces = {key: value for key, value in env.items() if key.startswith("CLOUDTRAIN_CONFIG_")}
    assert all(len(value) <= 512 for value in pieces.values())
    config = json.loads(join_pieces(pieces, prefix="CLOUDTRAIN_CONFIG_"))
    assert config["tuned"] == {"learning_rate": "float", "width": "int"}
    assert env["CLOUDTRAIN_IMAGE_SETUP"] == "/usr/local/bin/start_cuda_compat.sh"  # catalog/image_startup.csv
    # the bundle ships the program the toolkit runs
    bundle = api.prepare(api.as_spec(EXAMPLE, ("image=auto",)), "sagemaker", run_id=RUN).bundle
    assert any(name == toolkit.PROGRAM for name, _ in bundle.contents)


def test_plan_shows_where_the_best_trial_writes() -> None:
    outputs = api.plan(api.as_spec(EXAMPLE, (IMAGE,)), "sagemaker").with_run(RUN).outputs
    assert outputs.model == "s3://my-bucket/tuning-example/runs/r1/output/{trial}/output/model.tar.gz"
    assert outputs.tensorboard == ""  # a trial definition has no TensorBoardOutputConfig


def test_a_grid_lists_integer_ranges_as_values() -> None:
    config = rendered("tuning.parameters={units: {type: int, min: 2, max: 4}}", "tuning.algorithm=grid")[
        "HyperParameterTuningJobConfig"
    ]
    assert config["ParameterRanges"] == {
        "CategoricalParameterRanges": [{"Name": "units", "Values": ["2", "3", "4"]}]
    }
    assert config["ResourceLimits"]["MaxNumberOfTrainingJobs"] == 3


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (  # on the Deep Learning Container the toolkit passes each value to a shell unquoted
            ("image=auto", "tuning.parameters={act: {type: categorical, values: [relu, 'a;b']}}"),
            "tuning.parameters.act: 'a;b' cannot reach a trial on SageMaker with image: auto",
        ),
        (
            (
                "tuning.parameters={x: {type: categorical, values: ["
                + ", ".join(f"v{i}" for i in range(31))
                + "]}}",
            ),
            "31 values; a SageMaker categorical range takes at most 30",
        ),
        (  # an int range listed for a grid is counted first, never built past the limit
            ("tuning.parameters={units: {type: int, min: 1, max: 9000}}", "tuning.algorithm=grid"),
            "tuning.parameters.units: 9,000 values; a SageMaker categorical range takes at most 30",
        ),
        (  # regression: rendered although botocore's ParameterValue is at most 256 characters
            ("tuning.parameters={x: {type: categorical, values: [a, " + "b" * 300 + "]}}",),
            "tuning.parameters.x: a value of 300 characters; SageMaker takes at most 256 "
            "(CreateHyperParameterTuningJob ParameterValue). Shorten it.",
        ),
    ],
)
def test_what_sagemaker_cannot_run_is_refused_with_the_fix(overrides: tuple[str, ...], message: str) -> None:
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        api.render(api.as_spec(EXAMPLE, (IMAGE, *overrides)), "sagemaker")
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        api.validate(api.as_spec(EXAMPLE, (IMAGE, *overrides)), "sagemaker")  # before any code is packed


def play_trial(definition: dict[str, Any], tuned: dict[str, str]) -> list[str]:
    """The trial's container, as far as its log goes: the runtime's epoch lines (chief)."""
    lines: list[str] = []
    progress = Progress(2, lines.append)
    for epoch in range(2):
        progress.on_epoch_end(
            epoch, {"loss": 0.5, "val_binary_accuracy": 0.8 + 0.05 * epoch + float(tuned["learning_rate"])}
        )
    return lines


def test_submit_status_trials_best_stop_and_list(aws: LoopbackAws) -> None:
    aws.sagemaker.on_trial = play_trial
    clients = aws.clients()
    handle = cloudtrain.submit(api.as_spec(EXAMPLE, (IMAGE,)), provider="sagemaker", clients=clients)
    assert isinstance(handle, HasTrials) and sagemaker.provider.owns(handle.id)
    assert handle.wait(poll_s=0).state == "succeeded"
    trials = handle.trials()
    assert [t.state for t in trials] == ["succeeded"] * 3
    # SageMaker's regex over the runtime's own epoch line found the last epoch's value.
    assert [t.objective for t in trials] == pytest.approx([0.851] * 3)
    assert trials[0].values == {"learning_rate": 0.001, "width": 4}
    best = handle.best()
    assert best is not None
    output = handle.request["TrainingJobDefinition"]["OutputDataConfig"]["S3OutputPath"]
    assert output.startswith("s3://my-bucket/tuning-example/runs/")  # the sweep's run prefix
    assert handle.outputs.model == f"{output}/{best.id}/output/model.tar.gz"

    again = cloudtrain.submit(api.as_spec(EXAMPLE, (IMAGE,)), provider="sagemaker", clients=clients)
    assert again.id == handle.id and len(aws.sagemaker.tuning_jobs) == 1

    [listed] = sagemaker.provider.list_jobs(api.as_spec(EXAMPLE), limit=None, clients=clients)
    assert (listed.id, listed.state, listed.name) == (handle.id, "succeeded", "tuning-example")
    assert listed.estimate is not None
    assert listed.usage is not None and listed.usage.machine_type == "ml.g4dn.xlarge"  # what the trials cost


def test_stop_ends_the_sweep_stopped(aws: LoopbackAws) -> None:
    aws.sagemaker.on_trial = play_trial
    handle = cloudtrain.submit(api.as_spec(EXAMPLE, (IMAGE,)), provider="sagemaker", clients=aws.clients())
    handle.status()  # the first trials start
    handle.cancel()
    assert handle.wait(poll_s=0).state == "cancelled"
    assert {t.state for t in handle.trials()} == {"stopped"}
