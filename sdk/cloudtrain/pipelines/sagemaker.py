"""cloudtrain as a SageMaker Pipelines step: the ``TrainingStep`` whose arguments are cloudtrain's render.

``training_step(spec)`` stages the job (``cloudtrain.stage``: plan, pack and upload the
code bundle once, render the CreateTrainingJob request) and returns the SageMaker Python
SDK's ``TrainingStep`` built the SDK's supported way: an ``Estimator`` under a
``PipelineSession`` whose ``fit`` is captured as the step's arguments
(``sagemaker/workflow/steps.py``, ``TrainingStep.step_args``). Every field of the
request maps onto an ``Estimator`` argument or a ``TrainingInput`` channel; the step's
arguments are then compared with the request field by field, and any difference (a
field the SDK could not express, one it added) raises ``ProviderError`` naming it,
rather than a pipeline that trains something else. ``TrainingJobName`` is left out: a
pipeline names each execution's job itself (``trim_request_dict``). The model artifact
is ``step.properties.ModelArtifacts.S3ModelArtifacts``, a property later steps take
(a ``Model``'s ``model_data``, a ``ModelStep``'s registration).

Why the 2.x SDK (``sagemaker>=2.257,<3``, the ``sagemaker-pipelines`` extra): 3.x is a
rewrite split into sagemaker-core, sagemaker-train and sagemaker-mlops, whose pipeline
step is built from a ``ModelTrainer`` (``sagemaker.train``) and ``sagemaker.mlops``'s
``Pipeline``; this module has not been checked against it. 2.x's ``Estimator`` takes each
CreateTrainingJob field by name (entrypoint and arguments, spot with MaxWait,
checkpoints, TensorBoard, retry strategy, VPC, tags), and the comparison above proves the
result for the pinned version. 2.x warns on use that it is "on path of deprecation"
(``SAGEMAKER_SUPPRESS_V2_WARNING=1`` quiets it), so a move to 3.x is expected. 2.257
brings protobuf 6 and packaging 24 where cloudtrain's TensorFlow environment has protobuf
7: install it in an environment of its own.

Two fields read differently and mean the same job (``SDK_FORMS``): the SDK sends
``EnableManagedSpotTraining`` only when true, and always sends a ``ProfilerConfig``
(disabled here, so no Debugger monitoring is added).

Example:
>>> step = training_step("examples/binary_classifier/job.yaml", name="train")  # doctest: +SKIP
>>> step.properties.ModelArtifacts.S3ModelArtifacts  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import warnings
from typing import TYPE_CHECKING, Any

from cloudtrain import api
from cloudtrain.errors import ProviderError, require

if TYPE_CHECKING:
    from cloudtrain.spec import JobSpec

__all__ = ["arguments_of", "differences", "pipeline_session", "training_step", "tuning_step"]

# The request's name: a pipeline names each execution's job, and drops this field.
UNNAMED = ("TrainingJobName",)
# What the SDK's Estimator sends differently from the render, each the same job (see
# ``sagemaker/session.py`` ``_get_train_request`` and ``sagemaker/estimator.py``
# ``_prepare_profiler_for_training``): field -> (the render's value, the step's value).
SDK_FORMS: dict[str, tuple[object, object]] = {
    # Sent only when true; false is CreateTrainingJob's default.
    "EnableManagedSpotTraining": (False, None),
    # Always sent; disabled is the form that adds no Debugger monitoring the render lacks.
    "ProfilerConfig": (None, {"DisableProfiler": True}),
}


def training_step(
    spec: str | os.PathLike[str] | JobSpec,
    *,
    name: str = "train",
    run_id: str | None = None,
    session: Any = None,
) -> Any:
    """Stage ``spec`` for SageMaker and return a ``TrainingStep`` that sends exactly its request.

    Args:
        spec: the path of a job.yaml, or a ``cloudtrain.JobSpec``.
        name: the step's name in the pipeline.
        run_id: as in ``cloudtrain.stage``: part of the request's tags.
        session: a ``sagemaker.workflow.pipeline_context.PipelineSession``; default: one for
            the spec's region on boto3's usual credentials and endpoints.

    Returns:
        ``sagemaker.workflow.steps.TrainingStep``; its model artifact is
        ``step.properties.ModelArtifacts.S3ModelArtifacts``.

    Raises:
        MissingDependencyError: the sagemaker SDK is not installed; the message has the pip command.
        ProviderError: the step's arguments would differ from cloudtrain's render; names the fields.
    """
    require("sagemaker", "sagemaker-pipelines")
    from sagemaker.workflow.steps import TrainingStep  # type: ignore[import-not-found]

    staged = api.stage(spec, "sagemaker", run_id=run_id)
    session = session or pipeline_session(staged.plan.spec.sagemaker.region)
    estimator = _estimator(staged.request, session)
    with warnings.catch_warnings():
        # The SDK's note that under a PipelineSession ``fit`` builds the step and runs nothing.
        warnings.filterwarnings("ignore", "Running within a PipelineSession", UserWarning)
        step_args = estimator.fit(inputs=_inputs(staged.request), wait=False)
    step = TrainingStep(name=name, step_args=step_args)
    wrong = differences(arguments_of(step), staged.request)
    if wrong:
        raise ProviderError(
            f"The SageMaker SDK's TrainingStep would not send cloudtrain's request: {'; '.join(wrong)}. "
            "Install the SDK version cloudtrain supports: pip install 'cloudtrain[sagemaker-pipelines]'"
        )
    return step


# A tuning job's name, which a pipeline sets per execution; and what the SDK's tuner sends
# differently from the render, the same tuning job (cloudtrain.providers.sagemaker.sweep).
TUNING_UNNAMED = ("HyperParameterTuningJobName",)


def tuning_step(
    spec: str | os.PathLike[str] | JobSpec,
    *,
    name: str = "tune",
    run_id: str | None = None,
    session: Any = None,
) -> Any:
    """Stage a spec with ``tuning:`` for SageMaker and return a ``TuningStep`` sending exactly its request.

    The step is the SDK's ``TuningStep`` built from a ``HyperparameterTuner`` over the
    ``Estimator`` of the trials' definition, under a ``PipelineSession``; its arguments are
    compared with ``cloudtrain render --provider sagemaker`` (the sweep's
    CreateHyperParameterTuningJob) and any difference raises. The best trial's model is
    ``step.get_top_model_s3_uri(top_k=0, s3_bucket=BUCKET, prefix=PREFIX)``.

    Raises:
        MissingDependencyError: the sagemaker SDK is not installed; the message has the pip command.
        ProviderError: the step would differ from cloudtrain's render; names the fields.
    """
    require("sagemaker", "sagemaker-pipelines")
    from sagemaker.workflow.steps import TuningStep

    staged = api.stage(spec, "sagemaker", run_id=run_id)
    session = session or pipeline_session(staged.plan.spec.sagemaker.region)
    request = staged.request
    tuner = _tuner(request, _estimator(_as_training(request["TrainingJobDefinition"], request), session))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Running within a PipelineSession", UserWarning)
        step_args = tuner.fit(inputs=_inputs(request["TrainingJobDefinition"]), include_cls_metadata=False)
    step = TuningStep(name=name, step_args=step_args)
    wrong = differences(
        _same_form(arguments_of(step)), {k: v for k, v in request.items() if k not in TUNING_UNNAMED}
    )
    if wrong:
        raise ProviderError(
            f"The SageMaker SDK's TuningStep would not send cloudtrain's request: {'; '.join(wrong)}. "
            "Install the SDK version cloudtrain supports: pip install 'cloudtrain[sagemaker-pipelines]'"
        )
    return step


def _as_training(definition: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """The trials' definition in the CreateTrainingJob words ``_estimator`` reads."""
    return {**definition, "HyperParameters": definition["StaticHyperParameters"], "Tags": request["Tags"]}


def _tuner(request: dict[str, Any], estimator: Any) -> Any:
    """A ``HyperparameterTuner`` with the render's strategy, objective, limits and ranges."""
    from sagemaker.tuner import (  # type: ignore[import-not-found]
        CategoricalParameter,
        ContinuousParameter,
        HyperparameterTuner,
        IntegerParameter,
    )

    config = request["HyperParameterTuningJobConfig"]
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
    return HyperparameterTuner(
        estimator,
        objective_metric_name=objective["MetricName"],
        hyperparameter_ranges=ranges,
        metric_definitions=request["TrainingJobDefinition"]["AlgorithmSpecification"]["MetricDefinitions"],
        strategy=config["Strategy"],
        objective_type=objective["Type"],
        max_jobs=limits["MaxNumberOfTrainingJobs"],
        max_parallel_jobs=limits["MaxParallelTrainingJobs"],
        tags=request["Tags"],
        early_stopping_type=config["TrainingJobEarlyStoppingType"],
    )


def _same_form(arguments: dict[str, Any]) -> dict[str, Any]:
    """The tuner's arguments in the render's forms: an empty range list, spot false, the instance's field.

    The SDK sends an empty ``IntegerParameterRanges``, leaves out
    ``EnableManagedSpotTraining: false`` (the default) and names the instance in
    ``HyperParameterTuningResourceConfig`` where the render, as for a training job, uses
    ``ResourceConfig``; each is the same tuning job.
    """
    config = dict(arguments.get("HyperParameterTuningJobConfig", {}))
    config["ParameterRanges"] = {k: v for k, v in config.get("ParameterRanges", {}).items() if v}
    definition = dict(arguments.get("TrainingJobDefinition", {}))
    definition.setdefault("EnableManagedSpotTraining", False)
    if "HyperParameterTuningResourceConfig" in definition:
        definition["ResourceConfig"] = definition.pop("HyperParameterTuningResourceConfig")
    return {**arguments, "HyperParameterTuningJobConfig": config, "TrainingJobDefinition": definition}


def arguments_of(step: Any) -> dict[str, Any]:
    """The step's CreateTrainingJob arguments as the pipeline definition JSON holds them."""
    arguments: dict[str, Any] = json.loads(json.dumps(step.arguments, default=str))
    return arguments


def differences(arguments: dict[str, Any], request: dict[str, Any]) -> list[str]:
    """One line per top-level field where a step's arguments and a rendered request differ.

    ``TrainingJobName`` and the SDK's equivalent forms (``SDK_FORMS``) are not differences.

    Example:
    >>> differences({"RoleArn": "a", "Tags": []}, {"TrainingJobName": "n", "RoleArn": "b"})
    ["RoleArn: the step has 'a', cloudtrain renders 'b'", 'Tags: the step has [], cloudtrain renders nothing']
    >>> differences({"ProfilerConfig": {"DisableProfiler": True}}, {"EnableManagedSpotTraining": False})
    []
    """
    fields = sorted((arguments.keys() | request.keys()) - set(UNNAMED))
    pairs = [(key, arguments.get(key), request.get(key)) for key in fields]
    return [
        f"{key}: the step has {_shown(got)}, cloudtrain renders {_shown(want)}"
        for key, got, want in pairs
        if got != want and SDK_FORMS.get(key) != (want, got)
    ]


def _shown(value: object) -> str:
    return "nothing" if value is None else repr(value)


def pipeline_session(region: str, *, telemetry: bool = True) -> Any:
    """A ``PipelineSession`` for ``region`` on boto3's usual credentials and endpoints.

    It builds requests and sends none. ``telemetry=False`` sets the SDK's documented
    ``TelemetryOptOut`` (``sagemaker/config/config_schema.py``) in place of the user's
    defaults files, so building a definition contacts nothing but S3 for the code bundle.
    """
    import boto3
    from sagemaker.workflow.pipeline_context import PipelineSession  # type: ignore[import-not-found]

    opt_out = {"SchemaVersion": "1.0", "SageMaker": {"PythonSDK": {"Modules": {"TelemetryOptOut": True}}}}
    # None: the SDK reads the user's own defaults files, as it does for any session.
    config = None if telemetry else opt_out
    return PipelineSession(boto_session=boto3.Session(region_name=region), sagemaker_config=config)


def _estimator(request: dict[str, Any], session: Any) -> Any:
    """An ``Estimator`` whose CreateTrainingJob arguments are ``request``'s, field by field."""
    from sagemaker.estimator import Estimator  # type: ignore[import-not-found]

    algorithm = request["AlgorithmSpecification"]
    resources, stopping = request["ResourceConfig"], request["StoppingCondition"]
    vpc = request.get("VpcConfig", {})
    return Estimator(
        image_uri=algorithm["TrainingImage"],
        role=request["RoleArn"],
        instance_count=resources["InstanceCount"],
        instance_type=resources["InstanceType"],
        volume_size=resources["VolumeSizeInGB"],
        input_mode=algorithm["TrainingInputMode"],
        metric_definitions=algorithm["MetricDefinitions"],
        container_entry_point=algorithm.get("ContainerEntrypoint"),
        container_arguments=algorithm.get("ContainerArguments"),
        max_run=stopping["MaxRuntimeInSeconds"],
        use_spot_instances=request["EnableManagedSpotTraining"],
        max_wait=stopping.get("MaxWaitTimeInSeconds"),
        checkpoint_s3_uri=request["CheckpointConfig"]["S3Uri"],
        checkpoint_local_path=request["CheckpointConfig"]["LocalPath"],
        output_path=request["OutputDataConfig"]["S3OutputPath"],
        tensorboard_output_config=_tensorboard(request.get("TensorBoardOutputConfig")),
        hyperparameters=request["HyperParameters"],
        environment=request["Environment"],
        max_retry_attempts=request.get("RetryStrategy", {}).get("MaximumRetryAttempts"),
        subnets=vpc.get("Subnets"),
        security_group_ids=vpc.get("SecurityGroupIds"),
        tags=request["Tags"],
        disable_profiler=True,
        debugger_hook_config=False,
        sagemaker_session=session,
    )


def _tensorboard(config: dict[str, str] | None) -> Any:
    """The TensorBoard output of a training job; None for a tuning job's trials, whose definition has none."""
    from sagemaker.debugger import TensorBoardOutputConfig  # type: ignore[import-not-found]

    if config is None:
        return None
    return TensorBoardOutputConfig(
        s3_output_path=config["S3OutputPath"], container_local_output_path=config["LocalPath"]
    )


def _inputs(request: dict[str, Any]) -> dict[str, Any]:
    """One ``TrainingInput`` per input channel, the code channel included."""
    from sagemaker.inputs import TrainingInput  # type: ignore[import-not-found]

    inputs = {}
    for channel in request["InputDataConfig"]:
        source = channel["DataSource"]["S3DataSource"]
        inputs[channel["ChannelName"]] = TrainingInput(
            source["S3Uri"],
            distribution=source["S3DataDistributionType"],
            s3_data_type=source["S3DataType"],
            input_mode=channel["InputMode"],
        )
    return inputs
