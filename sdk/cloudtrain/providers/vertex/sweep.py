"""A sweep on Vertex AI: the HyperparameterTuningJob request, pure data, and where its trials write.

``render(plan)`` is the JSON body of ``POST .../hyperparameterTuningJobs``
(aiplatform_v1 ``HyperparameterTuningJob``, REST camelCase). Its ``trialJobSpec`` is the
CustomJobSpec the job's own render makes (worker pools, scheduling, base output
directory), so a trial runs exactly as the job would. The study:

- ``metrics``: the objective, MAXIMIZE or MINIMIZE;
- ``parameters``: float -> ``doubleValueSpec``, int -> ``integerValueSpec``, categorical ->
  ``categoricalValueSpec``, discrete -> ``discreteValueSpec``; ranges scaled
  ``UNIT_LINEAR_SCALE`` or ``UNIT_LOG_SCALE`` (``StudySpec.ParameterSpec.ScaleType``),
  categorical unscaled ("Leave unset for CATEGORICAL parameters");
- ``algorithm``: auto and bayesian leave it unset (``ALGORITHM_UNSPECIFIED``, "The default
  algorithm used by Vertex AI for hyperparameter tuning"), random ``RANDOM_SEARCH``, grid
  ``GRID_SEARCH`` ("all parameters must be INTEGER, CATEGORICAL, or DISCRETE");
- ``measurementSelectionType``: ``LAST_MEASUREMENT``, the objective a trial reported last,
  as the local search and SageMaker take it;
- early stopping: ``medianAutomatedStoppingSpec``.

The trial gets its values as ``--name=value`` arguments and reports through the
``cloudml-hypertune`` file (``cloudtrain_runtime.hparams``). Each trial's AIP_*_DIR are
``<baseOutputDirectory>/<trial id>/model`` and so on: "For CustomJob backing a Trial of
HyperparameterTuningJob: AIP_MODEL_DIR = <base_output_directory>/<trial_id>/model/"
(aiplatform_v1 ``CustomJobSpec.base_output_directory``, google-cloud-aiplatform 2.7.0),
so ``outputs`` says ``ROOT/{trial}/model`` until the best trial is known.

Example:
>>> from cloudtrain.spec import JobSpec
>>> from cloudtrain.api import plan
>>> spec = JobSpec(name="demo", code={"module": "t"}, storage={"root": "gs://my-bucket/demo"},
...                vertex={"project": "my-project"},
...                tuning={"objective": {"metric": "val_loss", "goal": "minimize"},
...                        "parameters": {"lr": {"type": "float", "min": 0.001, "max": 0.1, "scale": "log"}}})
>>> body = render(plan(spec, "vertex").with_bundle("gs://my-bucket/demo/code/0123.tar.gz").with_run("r1"))
>>> body["studySpec"]["parameters"]
[{'parameterId': 'lr', 'doubleValueSpec': {'minValue': 0.001, 'maxValue': 0.1}, 'scaleType': 'UNIT_LOG_SCALE'}]
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from cloudtrain.errors import SpecError
from cloudtrain.outputs import Outputs, standard
from cloudtrain.provider.sweeps import TRIAL
from cloudtrain.providers.vertex import outputs as job_outputs
from cloudtrain.providers.vertex.render import REQUEST_LABEL, request_hash
from cloudtrain.providers.vertex.render import render as render_job
from cloudtrain.providers.vertex.settings import VertexSettings

if TYPE_CHECKING:
    from cloudtrain.planning import Plan
    from cloudtrain.spec import Parameter, Tuning

SCALES = {"linear": "UNIT_LINEAR_SCALE", "log": "UNIT_LOG_SCALE"}
ALGORITHMS = {"random": "RANDOM_SEARCH", "grid": "GRID_SEARCH"}  # auto, bayesian: the default
MIN_DISCRETE_GAP = 1e-10


def render(plan: Plan) -> dict[str, Any]:
    """The HyperparameterTuningJob for ``plan``'s sweep: the trials' CustomJobSpec and the study."""
    tuning = plan.spec.tuning
    assert tuning is not None  # only a spec with tuning: is a sweep
    job = render_job(plan)
    labels = {key: value for key, value in job["labels"].items() if key != REQUEST_LABEL}
    body: dict[str, Any] = {
        "displayName": job["displayName"],
        "labels": labels,
        "studySpec": study_spec(tuning),
        "maxTrialCount": tuning.max_trials,
        "parallelTrialCount": tuning.parallel_trials,
        "maxFailedTrialCount": tuning.max_failed_trials,
        "trialJobSpec": job["jobSpec"],
    }
    labels[REQUEST_LABEL] = request_hash(body)
    return body


def study_spec(tuning: Tuning) -> dict[str, Any]:
    """The StudySpec: objective, parameters, algorithm, measurement selection, early stopping."""
    study: dict[str, Any] = {
        "metrics": [{"metricId": tuning.objective.metric, "goal": tuning.objective.goal.upper()}],
        "parameters": [parameter_spec(name, parameter) for name, parameter in tuning.parameters.items()],
        "measurementSelectionType": "LAST_MEASUREMENT",
    }
    if tuning.algorithm in ALGORITHMS:
        study["algorithm"] = ALGORITHMS[tuning.algorithm]
    if tuning.early_stopping:
        study["medianAutomatedStoppingSpec"] = {}
    return study


def _discrete_values(name: str, parameter: Parameter) -> list[float]:
    """The values of a DISCRETE parameter, which Vertex AI needs "at least 1e-10 apart" (and at
    most 1,000, as the spec allows): aiplatform_v1 ``StudySpec.ParameterSpec.DiscreteValueSpec``.

    Raises:
        SpecError: two values closer than that.
    """
    values = [float(v) for v in parameter.values or []]
    close = [(a, b) for a, b in itertools.pairwise(values) if b - a < MIN_DISCRETE_GAP]
    if close:
        raise SpecError(
            f"tuning.parameters.{name}: the values {close[0][0]!r} and {close[0][1]!r} are less than "
            f"{MIN_DISCRETE_GAP:g} apart; Vertex AI takes discrete values at least that far apart. "
            "Drop one of them."
        )
    return values


def parameter_spec(name: str, parameter: Parameter) -> dict[str, Any]:
    """One ``StudySpec.ParameterSpec``."""
    spec: dict[str, Any] = {"parameterId": name}
    if parameter.type == "categorical":
        return {**spec, "categoricalValueSpec": {"values": [str(v) for v in parameter.values or []]}}
    if parameter.type == "discrete":
        spec["discreteValueSpec"] = {"values": _discrete_values(name, parameter)}
    elif parameter.type == "int":
        # int64 travels as a JSON string in proto3's JSON mapping; ParseDict takes either.
        spec["integerValueSpec"] = {
            "minValue": str(int(parameter.min or 0)),
            "maxValue": str(int(parameter.max or 0)),
        }
    else:
        spec["doubleValueSpec"] = {
            "minValue": float(parameter.min or 0),
            "maxValue": float(parameter.max or 0),
        }
    return {**spec, "scaleType": SCALES[parameter.scale]}


def outputs(plan: Plan, request: dict[str, Any] | None = None) -> Outputs:
    """Where the sweep's best trial will write, ``{trial}`` standing for its id (see the module docstring)."""
    request = request or {"trialJobSpec": {"baseOutputDirectory": {"outputUriPrefix": plan.storage.run}}}
    return outputs_of(request, project=VertexSettings.of(plan.spec).project or "", trial=TRIAL)


def outputs_of(request: dict[str, Any], *, project: str, trial: str) -> Outputs:
    """Trial ``trial``'s artifacts: ``<baseOutputDirectory>/<trial id>/model`` and so on.

    The logs are those of the trial's own CustomJob (``{job}``: its number).
    """
    base = request["trialJobSpec"]["baseOutputDirectory"]["outputUriPrefix"].rstrip("/")
    return standard(f"{base}/{trial}", logs=job_outputs.logs_url(project, "{job}"))
