"""The SageMaker sweep render equals what the SageMaker Python SDK's HyperparameterTuner sends.

Runs in the ``pipelines-sagemaker`` lane (the 2.x SDK; the main environment has none): the
same sweep is built with ``Estimator`` + ``HyperparameterTuner`` and its
CreateHyperParameterTuningJob arguments captured at the session's client, before any network.
Three differences mean the same request: the SDK sends an empty ``IntegerParameterRanges``,
leaves out ``EnableManagedSpotTraining: false`` (the API's default), and puts the one
instance type in ``HyperParameterTuningResourceConfig`` where cloudtrain, as for a
training job, uses ``ResourceConfig`` (both are fields of HyperParameterTrainingJobDefinition).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cloudtrain import api

pytest.importorskip("sagemaker.tuner")  # the SDK, not tests/.../providers/sagemaker

pytestmark = [pytest.mark.filterwarnings("ignore:.*is part of the SageMaker Python SDK v2")]

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "tuning" / "job.yaml"
IMAGE = "image=123456789012.dkr.ecr.us-east-1.amazonaws.com/cloudtrain-cpu:1"


class CapturingClient:
    """The session's SageMaker client: it keeps the tuning job's arguments and sends nothing."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def create_hyper_parameter_tuning_job(self, **arguments: Any) -> dict[str, str]:
        self.sent.append(arguments)
        return {
            "HyperParameterTuningJobArn": "arn:aws:sagemaker:us-east-1:123456789012:hyper-parameter-tuning-job/x"
        }


def sdk_request(body: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    import boto3
    import sagemaker
    from sagemaker.estimator import Estimator
    from sagemaker.inputs import TrainingInput
    from sagemaker.tuner import (
        CategoricalParameter,
        ContinuousParameter,
        HyperparameterTuner,
        IntegerParameter,
    )

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDLOOPBACK")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "loopback-secret")
    client = CapturingClient()
    opt_out = {"SchemaVersion": "1.0", "SageMaker": {"PythonSDK": {"Modules": {"TelemetryOptOut": True}}}}
    session = sagemaker.Session(
        boto_session=boto3.Session(region_name="us-east-1"), sagemaker_client=client, sagemaker_config=opt_out
    )
    definition = body["TrainingJobDefinition"]
    algorithm, resources = definition["AlgorithmSpecification"], definition["ResourceConfig"]
    stopping, checkpoints = definition["StoppingCondition"], definition["CheckpointConfig"]
    estimator = Estimator(
        image_uri=algorithm["TrainingImage"],
        role=definition["RoleArn"],
        instance_count=resources["InstanceCount"],
        instance_type=resources["InstanceType"],
        volume_size=resources["VolumeSizeInGB"],
        input_mode=algorithm["TrainingInputMode"],
        max_run=stopping["MaxRuntimeInSeconds"],
        use_spot_instances=definition["EnableManagedSpotTraining"],
        max_wait=stopping.get("MaxWaitTimeInSeconds"),
        checkpoint_s3_uri=checkpoints["S3Uri"],
        checkpoint_local_path=checkpoints["LocalPath"],
        output_path=definition["OutputDataConfig"]["S3OutputPath"],
        hyperparameters=definition["StaticHyperParameters"],
        environment=definition["Environment"],
        disable_profiler=True,
        debugger_hook_config=False,
        sagemaker_session=session,
    )
    config = body["HyperParameterTuningJobConfig"]
    kinds = {
        "ContinuousParameterRanges": lambda r: ContinuousParameter(
            float(r["MinValue"]), float(r["MaxValue"]), scaling_type=r["ScalingType"]
        ),
        "IntegerParameterRanges": lambda r: IntegerParameter(
            int(r["MinValue"]), int(r["MaxValue"]), scaling_type=r["ScalingType"]
        ),
        "CategoricalParameterRanges": lambda r: CategoricalParameter(r["Values"]),
    }
    ranges = {
        r["Name"]: make(r) for kind, make in kinds.items() for r in config["ParameterRanges"].get(kind, [])
    }
    objective, limits = config["HyperParameterTuningJobObjective"], config["ResourceLimits"]
    tuner = HyperparameterTuner(
        estimator,
        objective_metric_name=objective["MetricName"],
        hyperparameter_ranges=ranges,
        metric_definitions=algorithm["MetricDefinitions"],
        strategy=config["Strategy"],
        objective_type=objective["Type"],
        max_jobs=limits["MaxNumberOfTrainingJobs"],
        max_parallel_jobs=limits["MaxParallelTrainingJobs"],
        tags=body["Tags"],
        early_stopping_type=config["TrainingJobEarlyStoppingType"],
    )
    inputs = {
        channel["ChannelName"]: TrainingInput(
            channel["DataSource"]["S3DataSource"]["S3Uri"],
            distribution=channel["DataSource"]["S3DataSource"]["S3DataDistributionType"],
            s3_data_type=channel["DataSource"]["S3DataSource"]["S3DataType"],
            input_mode=channel["InputMode"],
        )
        for channel in definition["InputDataConfig"]
    }
    tuner.fit(inputs, job_name=body["HyperParameterTuningJobName"], include_cls_metadata=False, wait=False)
    [sent] = client.sent
    return sent


def same_meaning(request: dict[str, Any]) -> dict[str, Any]:
    """The request with the three differences of form (module docstring) made alike."""
    config = dict(request["HyperParameterTuningJobConfig"])
    config["ParameterRanges"] = {kind: r for kind, r in config["ParameterRanges"].items() if r}
    definition = dict(request["TrainingJobDefinition"])
    if definition.get("EnableManagedSpotTraining") is False:
        del definition["EnableManagedSpotTraining"]
    if "HyperParameterTuningResourceConfig" in definition:
        definition["ResourceConfig"] = definition.pop("HyperParameterTuningResourceConfig")
    return {**request, "HyperParameterTuningJobConfig": config, "TrainingJobDefinition": definition}


@pytest.mark.parametrize(
    "overrides",
    [
        (),  # the example: log-scale learning rate, discrete widths, Bayesian
        ("resources.spot=true", "tuning.algorithm=random", "tuning.early_stopping=true"),
        ("tuning.parameters.units={type: int, min: 8, max: 64}", "resources.hosts=2"),
    ],
)
def test_the_render_equals_what_the_hyperparameter_tuner_sends(
    overrides: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    body = api.render(api.as_spec(EXAMPLE, (IMAGE, *overrides)), "sagemaker")
    assert same_meaning(sdk_request(body, monkeypatch)) == same_meaning(body)
