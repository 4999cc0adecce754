"""A sweep on SageMaker: CreateHyperParameterTuningJob arguments, pure data, from the training render.

``render(plan)`` takes the CreateTrainingJob request the job's own render makes and moves
it into the tuning job's ``TrainingJobDefinition`` (botocore's
``HyperParameterTrainingJobDefinition``): role, channels, VPC, output, resources, stopping
condition, managed spot, checkpoints, retry strategy, environment, and the runtime
configuration as ``StaticHyperParameters``. The tuned values reach each training job as
hyperparameters beside them (``cloudtrain_runtime.hparams`` reads hyperparameters.json),
and the objective is read by SageMaker from the logs with the objective's
``MetricDefinitions`` regex over the runtime's ``epoch N/M name=value`` lines.

What the definition has no field for, and what follows:

- ``ContainerEntrypoint``/``ContainerArguments``: ``HyperParameterAlgorithmSpecification``
  has only TrainingImage, TrainingInputMode, AlgorithmName and MetricDefinitions (botocore
  sagemaker model), so a trial starts as its image does. Your image's ENTRYPOINT is the
  runtime; with ``image: auto`` the Deep Learning Container's is the SageMaker training
  toolkit, which the definition tells where the code is and what to run (``toolkit``: the
  ``sagemaker_program`` and ``sagemaker_submit_directory`` hyperparameters, the runtime
  configuration in the environment).
- ``TensorBoardOutputConfig``: trials' TensorBoard files are not uploaded (``outputs.tensorboard`` is "").
- ``CheckpointConfig``: one S3 prefix for every training job of the tuning job; the
  runtime's backup stamp (the training job's name and the trial's values) keeps a trial
  from resuming another's backup.

Limits from botocore's model: ``HyperParameterTuningJobName`` 1-32 characters,
``IntegerParameterRanges``, ``ContinuousParameterRanges`` and
``CategoricalParameterRanges`` at most 30 each, a categorical parameter at most 30 values,
the definition's ``Environment`` at most 48 entries; ``Strategy`` Bayesian, Random,
Hyperband or Grid, of which auto and bayesian are Bayesian. Grid search takes
categorical parameters only (integer ranges are listed as their values).

Example:
>>> from cloudtrain.spec import JobSpec
>>> from cloudtrain.api import plan
>>> spec = JobSpec(name="demo", code={"module": "t"}, image="123456789012.dkr.ecr.us-east-1.amazonaws.com/ct:1",
...                storage={"root": "s3://my-bucket/demo"},
...                sagemaker={"role": "arn:aws:iam::123456789012:role/SageMakerTraining"},
...                tuning={"objective": {"metric": "val_loss", "goal": "minimize"},
...                        "parameters": {"lr": {"type": "float", "min": 0.001, "max": 0.1, "scale": "log"}}})
>>> body = render(plan(spec, "sagemaker").with_bundle("s3://my-bucket/demo/code/0123456789abcdef.tar.gz").with_run("r1"))
>>> body["HyperParameterTuningJobConfig"]["ParameterRanges"]["ContinuousParameterRanges"]
[{'Name': 'lr', 'MinValue': '0.001', 'MaxValue': '0.1', 'ScalingType': 'Logarithmic'}]
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from cloudtrain import container
from cloudtrain.errors import SpecError
from cloudtrain.outputs import Outputs
from cloudtrain.provider.sweeps import TRIAL
from cloudtrain.providers.sagemaker import outputs as job_outputs
from cloudtrain.providers.sagemaker import toolkit
from cloudtrain.providers.sagemaker.render import (
    NAME_HASH_CHARS,
    NOT_HASHED,
    check_map,
    delivery,
    metric_definitions,
)
from cloudtrain.providers.sagemaker.render import render as render_job
from cloudtrain.providers.sagemaker.settings import SageMakerSettings
from cloudtrain.sweep import space

if TYPE_CHECKING:
    from cloudtrain.planning import Plan
    from cloudtrain.spec import Parameter, Tuning

MAX_NAME = 32
MAX_RANGES = 30
MAX_VALUES = 30
MAX_VALUE_CHARS = 256
MAX_ENVIRONMENT = 48
# A trial is a training job: its static and tuned hyperparameters together, at most 100 (HyperParameters).
MAX_HYPERPARAMETERS = 100
STRATEGIES = {"auto": "Bayesian", "bayesian": "Bayesian", "random": "Random", "grid": "Grid"}
SCALES = {"linear": "Linear", "log": "Logarithmic"}
# The training request's fields a trial definition carries, under the same names.
DEFINITION_FIELDS = (
    "RoleArn",
    "InputDataConfig",
    "VpcConfig",
    "OutputDataConfig",
    "ResourceConfig",
    "StoppingCondition",
    "EnableManagedSpotTraining",
    "CheckpointConfig",
    "RetryStrategy",
    "Environment",
)


def render(plan: Plan) -> dict[str, Any]:
    """The ``create_hyper_parameter_tuning_job`` keyword arguments for ``plan``'s sweep.

    With ``image: auto`` each trial starts through the Deep Learning Container's training
    toolkit (``toolkit``); with your image, through its ENTRYPOINT, the runtime.

    Raises:
        SpecError: a SageMaker limit the sweep would break.
    """
    tuning = plan.spec.tuning
    assert tuning is not None  # only a spec with tuning: is a sweep
    if plan.capacity.mode == "queue":
        raise SpecError(
            "resources.capacity: an AWS Batch queue takes training jobs, not tuning jobs "
            "(SubmitServiceJob.serviceJobType is SAGEMAKER_TRAINING). Use capacity: on_demand, spot or plan "
            "for a sweep."
        )
    job = render_job(plan)
    definition = {field: job[field] for field in DEFINITION_FIELDS if field in job}
    definition["StaticHyperParameters"] = job["HyperParameters"]
    if "ContainerEntrypoint" in job["AlgorithmSpecification"]:  # image: auto, started by its own ENTRYPOINT
        definition |= toolkit.definition(plan, job)
    check_map(
        "env", definition["Environment"], limits=(MAX_ENVIRONMENT, 512, 512), fix="Remove entries from env."
    )
    trial_hyperparameters = {**definition["StaticHyperParameters"], **dict.fromkeys(tuning.parameters, "")}
    check_map(
        "HyperParameters",
        trial_hyperparameters,
        limits=(MAX_HYPERPARAMETERS, 256, container.HYPERPARAMETER_VALUE_MAX),
        fix="Tune fewer parameters, or shorten code.args, data URIs or training.layout_map.",
    )
    metrics = list(dict.fromkeys([*SageMakerSettings.of(plan.spec).metrics, tuning.objective.metric]))
    definition["AlgorithmSpecification"] = {
        "TrainingImage": job["AlgorithmSpecification"]["TrainingImage"],
        "TrainingInputMode": job["AlgorithmSpecification"]["TrainingInputMode"],
        "MetricDefinitions": metric_definitions(metrics),
    }
    request: dict[str, Any] = {
        "HyperParameterTuningJobConfig": tuning_config(tuning),
        "TrainingJobDefinition": dict(sorted(definition.items())),
        "Tags": job["Tags"],
    }
    return {"HyperParameterTuningJobName": tuning_job_name(plan.name, request), **request}


def tuning_config(tuning: Tuning) -> dict[str, Any]:
    """HyperParameterTuningJobConfig: strategy, objective, limits, ranges, early stopping."""
    grid = tuning.algorithm == "grid"
    return {
        "Strategy": STRATEGIES[tuning.algorithm],
        "HyperParameterTuningJobObjective": {
            "Type": tuning.objective.goal.capitalize(),
            "MetricName": tuning.objective.metric,
        },
        "ResourceLimits": {
            "MaxNumberOfTrainingJobs": min(tuning.max_trials, space.grid_size(tuning))
            if grid
            else tuning.max_trials,
            "MaxParallelTrainingJobs": tuning.parallel_trials,
        },
        "ParameterRanges": parameter_ranges(tuning),
        "TrainingJobEarlyStoppingType": "Auto" if tuning.early_stopping else "Off",
    }


def parameter_ranges(tuning: Tuning) -> dict[str, list[dict[str, Any]]]:
    """The three kinds of range; discrete values (and, for a grid, integer ranges) are categorical.

    Raises:
        SpecError: more than 30 ranges of a kind, or more than 30 values of a parameter.
    """
    ranges: dict[str, list[dict[str, Any]]] = {
        "IntegerParameterRanges": [],
        "ContinuousParameterRanges": [],
        "CategoricalParameterRanges": [],
    }
    for name, parameter in tuning.parameters.items():
        kind, entry = _range(name, parameter, tuning.algorithm == "grid")
        ranges[kind].append(entry)
    for kind, entries in ranges.items():
        if len(entries) > MAX_RANGES:
            raise SpecError(
                f"tuning.parameters: {len(entries)} parameters become SageMaker {kind}; it takes at most {MAX_RANGES}."
            )
    return {kind: entries for kind, entries in ranges.items() if entries}


def _range(name: str, parameter: Parameter, grid: bool) -> tuple[str, dict[str, Any]]:
    listed = grid and parameter.type == "int"
    if parameter.values is not None or listed:
        count = parameter.grid_values or 0
        if count > MAX_VALUES:
            raise SpecError(
                f"tuning.parameters.{name}: {count:,} values; a SageMaker categorical range takes at most "
                f"{MAX_VALUES}. Use fewer values, or an int or float range."
            )
        values = space.grid_values(parameter) if listed else parameter.values or []
        return "CategoricalParameterRanges", {
            "Name": name,
            "Values": [_text(name, parameter, v) for v in values],
        }
    kind = "IntegerParameterRanges" if parameter.type == "int" else "ContinuousParameterRanges"
    low, high = (_text(name, parameter, v) for v in (parameter.min or 0, parameter.max or 0))
    return kind, {"Name": name, "MinValue": low, "MaxValue": high, "ScalingType": SCALES[parameter.scale]}


def _text(name: str, parameter: Parameter, value: Any) -> str:
    """A value as SageMaker takes it: a string of at most 256 characters (botocore's ``ParameterValue``);
    whole numbers of an int parameter without '.0'.

    Raises:
        SpecError: a longer value (the value itself is not echoed: it may be long).
    """
    text = str(space.as_kind(parameter, value))
    if len(text) > MAX_VALUE_CHARS:
        raise SpecError(
            f"tuning.parameters.{name}: a value of {len(text):,} characters; SageMaker takes at most "
            f"{MAX_VALUE_CHARS} (CreateHyperParameterTuningJob ParameterValue). Shorten it."
        )
    return text


def tuning_job_name(name: str, request: dict[str, Any]) -> str:
    """``<name>-<hash of the request>`` within SageMaker's 32 characters; the estimate's tags are not hashed.

    Example:
    >>> tuning_job_name("a-rather-long-tuning-example", {"Tags": []})
    'a-rather-long-tuning-8c9706c3ae'
    """
    identity = {**request, "Tags": [tag for tag in request["Tags"] if tag["Key"] not in NOT_HASHED]}
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return f"{name[: MAX_NAME - NAME_HASH_CHARS - 1].rstrip('-')}-{digest[:NAME_HASH_CHARS]}"


def outputs(plan: Plan, request: dict[str, Any] | None = None, *, trial: str = TRIAL) -> Outputs:
    """Training job ``trial``'s artifacts (``{trial}``: the best one's name, once known); no TensorBoard."""
    definition = request["TrainingJobDefinition"] if request else delivery(plan)
    found = job_outputs.of_request({**definition, "TrainingJobName": trial}, region=plan.region)
    return Outputs(**{**found.to_dict(), "tensorboard": ""})
