"""SageMaker: a Plan becomes boto3 ``create_training_job`` keyword arguments, pure data; ``job`` sends them.

``render(plan)`` is pure: the request is built from the Plan alone and checked against
SageMaker's documented limits (botocore's service model) before anything is sent.

How the container is fed (no cloud SDK inside it):

- the code bundle is the input channel ``code``, so it lands at
  ``/opt/ml/input/data/code/<hash>.tar.gz`` and ``CLOUDTRAIN_BUNDLE`` points there;
- the runtime config travels as hyperparameters ``cloudtrain_config_0``, ``_1``, ... of
  at most 256 characters each (Environment values are capped at 512 characters; the
  API documentation caps hyperparameter values at 256, botocore's model at 2,500);
- with ``image: auto`` the Deep Learning Container's own ENTRYPOINT stays the
  ContainerEntrypoint (``catalog/image_startup.csv``), so its start-up runs first as on
  ``docker run IMAGE train`` (telemetry, its CUDA forward-compatibility step), and the
  ContainerArguments are what it execs: a shell that sources the image's CUDA set-up
  (``container.sourcing``), then ``python3 -c LOADER`` with the bootstrap program split
  one line per entry (each entry is capped at 256 characters), re-joined by the loader.

``TrainingJobName`` is the spec's name plus 10 hex digits of the SHA-256 of the rest of
the request, which holds the bundle's content hash: rendering the same spec and code
gives the same name, which is what makes submitting idempotent (see
``cloudtrain.providers.sagemaker.job``).

Example:
>>> from cloudtrain.api import plan
>>> from cloudtrain.spec import JobSpec
>>> spec = JobSpec(
...     name="demo", code={"module": "trainer.task"}, storage={"root": "s3://my-bucket/demo"},
...     sagemaker={"role": "arn:aws:iam::123456789012:role/SageMakerTraining"},
... )
>>> planned = plan(spec, "sagemaker").with_bundle("s3://my-bucket/demo/code/0123456789abcdef.tar.gz").with_run("r1")
>>> request = render(planned)
>>> request["ResourceConfig"], request["Environment"]["CLOUDTRAIN_BUNDLE"]
({'InstanceType': 'ml.m5.2xlarge', 'InstanceCount': 1, 'VolumeSizeInGB': 100}, '/opt/ml/input/data/code/0123456789abcdef.tar.gz')
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from typing import TYPE_CHECKING, Any

from cloudtrain import catalog, container, runs
from cloudtrain.errors import SpecError
from cloudtrain.planning import ExpectedCost, mixed_precision, stored_dollars
from cloudtrain.provider.transfer import bundle_uri
from cloudtrain.providers.sagemaker import schema
from cloudtrain.providers.sagemaker.checks import queue_of
from cloudtrain.providers.sagemaker.settings import SageMakerSettings
from cloudtrain.sweep.objective import metric_regex

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from cloudtrain.planning import Plan

CODE_CHANNEL = "code"
DATA_DIR = "/opt/ml/input/data"
CHECKPOINT_DIR = "/opt/ml/checkpoints"
# TensorBoardOutputConfig.LocalPath's default, where the runtime writes on SageMaker.
TENSORBOARD_DIR = "/opt/ml/output/tensorboard"
JOB_TAG = "cloudtrain:job"
RUN_TAG = "cloudtrain:run"
# The cost expected at submit time, in dollars, and its basis: not part of the job name's hash.
ESTIMATE_TAG = "cloudtrain:estimate-usd"
ESTIMATE_BASIS_TAG = "cloudtrain:estimate"
HOURLY_TAG = "cloudtrain:hourly-usd"
NOT_HASHED = (ESTIMATE_TAG, ESTIMATE_BASIS_TAG, HOURLY_TAG)
# A spot job may wait for capacity as long as it may run, but never past 28 days, the
# documented maximum run time (StoppingCondition.MaxRuntimeInSeconds in botocore 1.44.8 sagemaker
# 2017-07-24 service-2.json: "The maximum value is 28 days"; the model's own range sets no maximum).
MAX_WAIT_CAP_S = 28 * 86400
NAME_HASH_CHARS = 10
# Runs the bootstrap from its lines in argv (see the module docstring).
LOADER = 'import sys; source = "\\n".join(sys.argv[1:]); del sys.argv[1:]; exec(source)'

# The spec field each request member comes from, named when the member breaks SageMaker's
# own constraints (``schema.problems``; a member not here is named by its request path).
SPEC_FIELDS = {
    "TrainingJobName": "name",
    "AlgorithmSpecification.TrainingImage": "image",
    "AlgorithmSpecification.MetricDefinitions": "sagemaker.metrics",
    "AlgorithmSpecification.ContainerEntrypoint": "image",
    "AlgorithmSpecification.ContainerArguments": "image",
    "RoleArn": "sagemaker.role",
    "ResourceConfig.InstanceCount": "resources.hosts",
    "ResourceConfig.TrainingPlanArn": "resources.capacity.arn",
    "ResourceConfig.InstancePreferences": "resources.capacity.shapes",
    "ResourceConfig.KeepAlivePeriodInSeconds": "sagemaker.keep_alive",
    "ResourceConfig.VolumeSizeInGB": "resources.disk_gb",
    "StoppingCondition": "limits.max_runtime",
    "CheckpointConfig": "sagemaker.storage_root",
    "OutputDataConfig": "sagemaker.storage_root",
    "TensorBoardOutputConfig": "sagemaker.storage_root",
    "InputDataConfig": "data",
    "HyperParameters": "code.args, data or training.layout_map",
    "Environment": "env",
    "RetryStrategy": "sagemaker.max_retries",
    "VpcConfig.Subnets": "sagemaker.subnets",
    "VpcConfig.SecurityGroupIds": "sagemaker.security_groups",
    "MlflowConfig": "tracking.uri",
    "Tags": "sagemaker.tags",
}

# AWS Batch service jobs that run SageMaker training jobs (SubmitServiceJob.serviceJobType,
# botocore 1.44.18 batch 2016-08-10).
SERVICE_JOB_TYPE = "SAGEMAKER_TRAINING"
# What a queued job retries: capacity and internal errors, up to Batch's 10 attempts; any other
# ending is final. Batch's status reason for SageMaker's answer is "Received status from
# SageMaker:<error>" (sagemaker-python-sdk, src/sagemaker/aws_batch/constants.py), matched by
# prefix with a trailing * (ServiceJobEvaluateOnExit.onStatusReason, botocore 1.44.18 batch).
QUEUE_RETRIES = {
    "attempts": 10,
    "evaluateOnExit": [
        {"action": "RETRY", "onStatusReason": "Received status from SageMaker:CapacityError*"},
        {"action": "RETRY", "onStatusReason": "Received status from SageMaker:InternalServerError*"},
        {"action": "EXIT", "onStatusReason": "*"},
    ],
}

# A SageMaker managed MLflow resource, a tracking server or an MLflow App: the pattern of
# MlflowConfig.MlflowResourceArn (botocore 1.44.18 sagemaker service model; API_MlflowConfig).
MLFLOW_ARN = re.compile(r"arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:mlflow-[a-zA-Z-]*/.*")

# SageMaker's documented limits (botocore sagemaker service model, CreateTrainingJob).
MAX_ARGUMENT = 256
MAX_CHANNELS = 20
MAX_TAGS = 50


def render(plan: Plan) -> dict[str, Any]:
    """The boto3 ``create_training_job`` keyword arguments for ``plan``; pure and deterministic.

    With ``capacity: queue``, the AWS Batch ``submit_service_job`` keyword arguments that
    queue that same request (``queued``).

    Raises:
        ProviderError: the plan has no s3:// code bundle URI yet (``api.pack_code``).
        SpecError: the request would break a SageMaker limit.
    """
    request = training_request(plan)
    queue = queue_of(plan.spec)
    return request if queue is None else queued(request, queue)


def queued(request: dict[str, Any], queue: str) -> dict[str, Any]:
    """``submit_service_job`` arguments that put the CreateTrainingJob ``request`` in the AWS Batch ``queue``.

    The payload is the request exactly as botocore would send it to CreateTrainingJob
    (``payload``): "the complete request that would normally be sent directly to the target
    service" (https://docs.aws.amazon.com/batch/latest/userguide/service-job-payload.html).
    The queue holds the job instead of failing it, and retries it when SageMaker answers
    with a capacity or an internal error (``QUEUE_RETRIES``).
    """
    return {
        "jobName": request["TrainingJobName"],
        "jobQueue": queue,
        "serviceJobType": SERVICE_JOB_TYPE,
        "serviceRequestPayload": payload(request),
        "retryStrategy": QUEUE_RETRIES,
    }


def payload(request: dict[str, Any]) -> str:
    """The JSON body botocore sends for ``create_training_job(**request)``.

    botocore's JSON protocol serializer writes ``json.dumps(body)`` of the parameters in
    the order given (botocore 1.44.18, botocore/serialize.py, ``JSONSerializer.serialize_to_request``),
    so a queued job's payload is byte for byte the direct request.

    >>> payload({"TrainingJobName": "demo-0123456789", "RoleArn": "arn:aws:iam::123456789012:role/R"})
    '{"TrainingJobName": "demo-0123456789", "RoleArn": "arn:aws:iam::123456789012:role/R"}'
    """
    return json.dumps(request)


def training_of(request: dict[str, Any]) -> dict[str, Any]:
    """The CreateTrainingJob request a rendered request carries: itself, or a queued job's payload."""
    carried = request.get("serviceRequestPayload")
    return request if carried is None else dict(json.loads(carried))


def training_request(plan: Plan) -> dict[str, Any]:
    """The CreateTrainingJob request for ``plan``, checked against SageMaker's own constraints (``schema``)."""
    bundle = _bundle_uri(plan)
    request: dict[str, Any] = {
        "AlgorithmSpecification": _algorithm(plan),
        "RoleArn": SageMakerSettings.of(plan.spec).role,
        "ResourceConfig": _resources(plan),
        "EnableManagedSpotTraining": plan.spot,
        "StoppingCondition": stopping_condition(plan.max_runtime_s, spot=plan.spot),
        **delivery(plan),
        "InputDataConfig": _channels(plan, bundle),
        "HyperParameters": _hyperparameters(plan),
        "Environment": _environment(plan, bundle),
        **_retry_strategy(plan),
        **_vpc(plan),
        **mlflow_config(plan),
        "Tags": _tags(plan),
    }
    rendered = {"TrainingJobName": job_name(plan.name, _identity(request)), **request}
    problems = schema.problems(rendered, fields=SPEC_FIELDS)
    if problems:
        raise SpecError(problems)
    return rendered


def delivery(plan: Plan) -> dict[str, Any]:
    """The fields that make SageMaker deliver every artifact (``outputs`` reads them back).

    All under the run's own prefix: backups sync from ``/opt/ml/checkpoints`` to the run's
    backup URI (restored into every job of the run: a spot restart, an ``-r2`` retry), the
    model and the results are uploaded under ``<run>/output/<job>/``, and TensorBoard files
    only reach S3 because ``TensorBoardOutputConfig`` asks for them: without it they are lost.
    """
    return {
        "CheckpointConfig": {"S3Uri": f"{plan.storage.backup}/", "LocalPath": CHECKPOINT_DIR},
        "OutputDataConfig": {"S3OutputPath": f"{plan.storage.run}/output"},
        "TensorBoardOutputConfig": {"S3OutputPath": plan.storage.tensorboard, "LocalPath": TENSORBOARD_DIR},
    }


def metric_definitions(names: list[str]) -> list[dict[str, str]]:
    r"""One definition per metric, matching the runtime's ``epoch N/M name=value ...`` lines.

    SageMaker scans the job's logs with each regex and charts the first group
    (AlgorithmSpecification.MetricDefinitions). ``(?<![\w.])`` keeps ``loss`` from
    matching inside ``val_loss``.

    Example:
    >>> import re
    >>> [definition] = metric_definitions(["loss"])
    >>> re.search(definition["Regex"], "epoch 2/3 loss=0.2500 val_loss=0.3000").group(1)
    '0.2500'
    """
    return [{"Name": name, "Regex": metric_regex(name)} for name in names]


def job_name(name: str, request: dict[str, Any]) -> str:
    """``<name>-<hash of the request>``, at most 63 characters.

    Example:
    >>> job_name("churn", {"RoleArn": "arn:aws:iam::123456789012:role/R"})
    'churn-297b63d7bb'
    """
    content = json.dumps(request, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(content.encode()).hexdigest()[:NAME_HASH_CHARS]
    return f"{name[: 63 - NAME_HASH_CHARS - 1]}-{digest}"


def _identity(request: dict[str, Any]) -> dict[str, Any]:
    """The request without the estimate's tags: a new price or a measured throughput is no new job."""
    return {**request, "Tags": [tag for tag in request["Tags"] if tag["Key"] not in NOT_HASHED]}


def estimate_tags(estimate: ExpectedCost) -> dict[str, str]:
    """The estimate as tags: dollars to the cent, its basis and, where known, the hourly price.

    >>> estimate_tags(ExpectedCost(1.264, "worst-case", 0.632))
    {'cloudtrain:estimate-usd': '1.26', 'cloudtrain:estimate': 'worst-case', 'cloudtrain:hourly-usd': '0.63'}
    """
    hourly = {} if estimate.usd_per_hour is None else {HOURLY_TAG: f"{estimate.usd_per_hour:.2f}"}
    return {ESTIMATE_TAG: f"{estimate.usd:.2f}", ESTIMATE_BASIS_TAG: estimate.basis, **hourly}


def estimate_from_tags(tags: Iterable[dict[str, str]]) -> ExpectedCost | None:
    """The estimate a job's tags carry; None when it has none, or they were edited into nonsense.

    >>> estimate_from_tags([{"Key": "cloudtrain:estimate-usd", "Value": "1.26"},
    ...                     {"Key": "cloudtrain:estimate", "Value": "worst-case"}])
    ExpectedCost(usd=1.26, basis='worst-case', usd_per_hour=None)
    """
    values = {tag.get("Key"): tag.get("Value", "") for tag in tags}
    basis, usd = values.get(ESTIMATE_BASIS_TAG, ""), stored_dollars(values.get(ESTIMATE_TAG))
    return (
        ExpectedCost(usd, basis, stored_dollars(values.get(HOURLY_TAG)))
        if basis and usd is not None
        else None
    )


def stopping_condition(max_runtime_s: int, *, spot: bool) -> dict[str, int]:
    """MaxRuntime from limits.max_runtime; with spot, MaxWait = 2 × MaxRuntime (capped, never less).

    Example:
    >>> stopping_condition(3600, spot=True)
    {'MaxRuntimeInSeconds': 3600, 'MaxWaitTimeInSeconds': 7200}
    """
    condition = {"MaxRuntimeInSeconds": max_runtime_s}
    if spot:
        condition["MaxWaitTimeInSeconds"] = max(max_runtime_s, min(2 * max_runtime_s, MAX_WAIT_CAP_S))
    return condition


def _bundle_uri(plan: Plan) -> str:
    if plan.provider != "sagemaker":
        raise SpecError(
            f"sagemaker.render got a plan for {plan.provider!r}. Plan it with provider 'sagemaker'."
        )
    return bundle_uri(plan, scheme="s3://")


def _bundle_path(bundle: str) -> str:
    """Where the code channel puts the bundle inside the container."""
    return f"{DATA_DIR}/{CODE_CHANNEL}/{posixpath.basename(bundle)}"


def _algorithm(plan: Plan) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "TrainingImage": plan.image,
        "TrainingInputMode": SageMakerSettings.of(plan.spec).input_mode,
        "MetricDefinitions": metric_definitions(SageMakerSettings.of(plan.spec).metrics),
    }
    command = container.command(plan)
    if command is None:
        return spec
    startup = catalog.image_startup(plan.provider, image_kind(plan))
    if startup is None:
        return {**spec, **container_command(command)}
    return {**spec, **container_command(container.sourcing(startup.setup, command), startup.entrypoint)}


def image_kind(plan: Plan) -> str:
    """The hardware kind ``image: auto`` picked its image for (``planning.resolve_image``)."""
    return catalog.accelerators()[plan.machine.accelerator].kind if plan.machine else "cpu"


def container_command(command: list[str], entrypoint: Sequence[str] = ()) -> dict[str, list[str]]:
    """ContainerEntrypoint/ContainerArguments for ``command``, each entry within 256 characters.

    ``[..., python, -c, PROGRAM]`` with a long program becomes ``[..., python, -c, LOADER]``
    plus the program's lines; the loader joins them and runs the result. With the image's
    ``entrypoint`` kept, that entrypoint is the ContainerEntrypoint and all of it the
    ContainerArguments, which SageMaker passes to the entrypoint as ``docker run`` would.

    Example:
    >>> container_command(["python3", "-c", "print(1)"])
    {'ContainerEntrypoint': ['python3', '-c', 'print(1)']}
    >>> container_command(["python3", "-c", "print(1)"], ["bash", "/entrypoint.sh"])
    {'ContainerEntrypoint': ['bash', '/entrypoint.sh'], 'ContainerArguments': ['python3', '-c', 'print(1)']}
    """
    *head, program = command
    start, lines = list(command), []
    if head[-1:] == ["-c"] and len(program) > MAX_ARGUMENT:
        start, lines = [*head, LOADER], program.splitlines()
    if entrypoint:
        rendered = {"ContainerEntrypoint": list(entrypoint), "ContainerArguments": [*start, *lines]}
    else:
        rendered = {"ContainerEntrypoint": start, **({"ContainerArguments": lines} if lines else {})}
    too_long = [arg for args in rendered.values() for arg in args if len(arg) > MAX_ARGUMENT]
    if too_long:
        raise SpecError(
            f"image: the container command has an entry of {len(too_long[0])} characters; SageMaker "
            f"allows {MAX_ARGUMENT} per ContainerEntrypoint/ContainerArguments entry. Use your own image."
        )
    return rendered


def _resources(plan: Plan) -> dict[str, Any]:
    """The machines: one instance type, or ``InstancePreferences`` with fallback shapes; the plan; the warm pool."""
    assert plan.machine is not None, "plan() resolves a machine for every SageMaker accelerator"
    capacity, settings = plan.capacity, SageMakerSettings.of(plan.spec)
    shapes = {"InstanceType": plan.machine.machine_type, "InstanceCount": plan.hosts}
    if capacity.shapes:
        shapes = {"InstancePreferences": instance_preferences(plan)}
    resources: dict[str, Any] = {**shapes, "VolumeSizeInGB": plan.spec.resources.disk_gb}
    if capacity.mode == "plan":
        resources["TrainingPlanArn"] = capacity.arn
    if settings.keep_alive is not None:
        resources["KeepAlivePeriodInSeconds"] = settings.keep_alive
    return resources


def instance_preferences(plan: Plan) -> list[dict[str, Any]]:
    """``ResourceConfig.InstancePreferences``: the planned instance type, then the fallback shapes, in order.

    SageMaker launches the job on the first type with capacity; the list replaces
    ``InstanceType``, each entry with its own ``InstanceCount`` (ResourceConfig and
    InstancePreference in botocore 1.44.18 sagemaker 2017-07-24;
    https://docs.aws.amazon.com/sagemaker/latest/dg/train-instance-preferences.html). The
    runtime's configuration is rendered once, so every shape must give the same replicas,
    precision and image: the same devices per host, of the same kind, with the same
    mixed precision.

    Raises:
        SpecError: a shape SageMaker's catalog does not have, or one that would train differently.
    """
    assert plan.machine is not None
    planned = plan.machine
    types = [planned.machine_type, *plan.capacity.shapes]
    problems = [_shape_problem(plan, shape) for shape in plan.capacity.shapes]
    if len(set(types)) != len(types):
        problems.append(
            f"resources.capacity.shapes: each instance type once, the planned {planned.machine_type} "
            "included (it comes first)."
        )
    if any(problems):
        raise SpecError([problem for problem in problems if problem])
    return [{"InstanceType": shape, "InstanceCount": plan.hosts} for shape in types]


def _shape_problem(plan: Plan, shape: str) -> str:
    """Why ``shape`` cannot stand in for the planned machine; empty when it can."""
    assert plan.machine is not None
    machine = next((m for m in catalog.machines(plan.provider) if m.machine_type == shape), None)
    if machine is None:
        return f"resources.capacity.shapes: {shape!r} is not a SageMaker instance type in the catalog."
    kind = catalog.accelerators()[machine.accelerator].kind
    precision = mixed_precision(plan.spec.training.mixed_precision, machine.accelerator)
    if (machine.devices, kind, precision) != (plan.devices_per_host, image_kind(plan), plan.mixed_precision):
        return (
            f"resources.capacity.shapes: {shape} has {machine.devices} × {machine.accelerator} ({precision}); "
            f"it must train as the planned {plan.machine.machine_type} does: {plan.devices_per_host} × "
            f"{plan.machine.accelerator} ({plan.mixed_precision}). Pick one like it, or set training.mixed_precision."
        )
    return ""


def _channels(plan: Plan, bundle: str) -> list[dict[str, Any]]:
    """The code channel, then one channel per ``data`` entry in name order."""
    data = sorted(plan.spec.data.items())
    if len(data) + 1 > MAX_CHANNELS:
        raise SpecError(
            f"data: {len(data)} channels plus the code channel exceed SageMaker's {MAX_CHANNELS} "
            "input channels. Merge channels under a common s3:// prefix."
        )
    mode = SageMakerSettings.of(plan.spec).input_mode
    # The code channel is always File mode: the bootstrap needs a real file to open.
    return [_channel(CODE_CHANNEL, bundle, "File")] + [_channel(n, uri, mode) for n, uri in data]


def _channel(name: str, uri: str, mode: str) -> dict[str, Any]:
    source = {"S3DataType": "S3Prefix", "S3Uri": uri, "S3DataDistributionType": "FullyReplicated"}
    return {"ChannelName": name, "DataSource": {"S3DataSource": source}, "InputMode": mode}


def _hyperparameters(plan: Plan) -> dict[str, str]:
    params = container.config_hyperparameters(plan)
    check_map(
        "HyperParameters",
        params,
        limits=(100, 256, container.HYPERPARAMETER_VALUE_MAX),
        fix="Shorten code.args, data URIs or training.layout_map.",
    )
    return params


def _environment(plan: Plan, bundle: str) -> dict[str, str]:
    env = {**container.environment(plan, _bundle_path(bundle), include_config=False), **plan.env}
    check_map("env", env, limits=(100, 512, 512), fix="Pass long values in code.args instead.")
    return env


def check_map(field: str, values: dict[str, str], *, limits: tuple[int, int, int], fix: str) -> None:
    """Enforce SageMaker's (entries, key length, value length) limits on a string map.

    Values are never quoted in the message: they may be private.

    Example:
    >>> check_map("env", {"A": "x" * 600}, limits=(100, 512, 512), fix="Shorten it.")
    Traceback (most recent call last):
    ...
    cloudtrain.errors.SpecError: env.A: the value has 600 characters; SageMaker allows at most 512. Shorten it.
    """
    entries, key_max, value_max = limits
    problems = [
        f"{field}.{key}: the value has {len(value)} characters; SageMaker allows at most {value_max}. {fix}"
        for key, value in values.items()
        if len(value) > value_max
    ]
    problems += [
        f"{field}: the key {key[:40]!r}… has {len(key)} characters; SageMaker allows at most {key_max}."
        for key in values
        if len(key) > key_max
    ]
    if len(values) > entries:
        problems.append(
            f"{field}: {len(values)} entries (with cloudtrain's own); SageMaker allows at most {entries}. {fix}"
        )
    if problems:
        raise SpecError(problems)


def _retry_strategy(plan: Plan) -> dict[str, Any]:
    retries = SageMakerSettings.of(plan.spec).max_retries
    return {"RetryStrategy": {"MaximumRetryAttempts": retries}} if retries > 0 else {}


def _vpc(plan: Plan) -> dict[str, Any]:
    settings = SageMakerSettings.of(plan.spec)
    if bool(settings.subnets) != bool(settings.security_groups):
        raise SpecError(
            "sagemaker.subnets and sagemaker.security_groups go together: a job in a VPC needs both "
            f"(received {len(settings.subnets)} subnets and {len(settings.security_groups)} security "
            "groups). Set both, or neither to run outside a VPC."
        )
    if not settings.subnets:
        return {}
    return {
        "VpcConfig": {"SecurityGroupIds": list(settings.security_groups), "Subnets": list(settings.subnets)}
    }


def mlflow_config(plan: Plan) -> dict[str, Any]:
    """``MlflowConfig`` for a run tracked on SageMaker managed MLflow (a ``tracking.uri`` that is its ARN).

    SageMaker then records the job's MLflow run (``DescribeTrainingJob.MlflowDetails``); the
    run name is the cloudtrain run id, the one the chief logs into (``cloudtrain_runtime.tracking``),
    so the two are one run. Any other tracking URI renders nothing here: the chief logs alone.
    """
    tracking = plan.spec.tracking
    if tracking is None or tracking.uri is None or not MLFLOW_ARN.fullmatch(tracking.uri):
        return {}
    config = {"MlflowResourceArn": tracking.uri, "MlflowExperimentName": tracking.experiment_for(plan.name)}
    return {"MlflowConfig": config | ({"MlflowRunName": plan.run_id} if plan.run_id else {})}


def _tags(plan: Plan) -> list[dict[str, str]]:
    """The spec's tags plus ``cloudtrain:job`` and ``cloudtrain:run``, sorted by key.

    The run id is part of the request, so of the job name's hash: a new run is a new job.
    """
    tags = {**SageMakerSettings.of(plan.spec).tags, JOB_TAG: plan.name, RUN_TAG: runs.of_plan(plan)}
    if plan.estimate is not None:
        tags |= estimate_tags(plan.estimate)
    reserved = sorted(key for key in SageMakerSettings.of(plan.spec).tags if key.lower().startswith("aws:"))
    if reserved:
        raise SpecError(f"sagemaker.tags: {reserved[0]!r} uses the reserved prefix 'aws:'. Rename the tag.")
    if len(tags) > MAX_TAGS:
        raise SpecError(
            f"sagemaker.tags: {len(tags)} tags (with cloudtrain's {JOB_TAG!r} and {RUN_TAG!r}); "
            f"SageMaker allows at most {MAX_TAGS}."
        )
    return [{"Key": key, "Value": value} for key, value in sorted(tags.items())]
