"""SageMaker on this machine: a rendered CreateTrainingJob becomes the hosts SageMaker would start.

Each host gets an ``/opt/ml`` tree (https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-training-algo-running-container.html;
https://docs.aws.amazon.com/sagemaker/latest/dg/model-checkpoints.html):
``input/config/{resourceconfig,hyperparameters,inputdataconfig,checkpointconfig}.json``,
every input channel copied from the stand-in S3 folder into ``input/data/<channel>``
(the code channel holds the bundle), ``checkpoints/`` restored from and synced back to
``CheckpointConfig.S3Uri``, ``TensorBoardOutputConfig.LocalPath`` synced to its
``S3OutputPath`` (only when the request has that field, as on SageMaker), and every
host's ``model/`` and ``output/data/`` packed into
``<S3OutputPath>/<job>/output/{model,output}.tar.gz`` after success. Restarts follow the
request too (``restarts``). No TF_CONFIG; the
``Environment`` plus ``TRAINING_JOB_NAME``/``TRAINING_JOB_ARN``; the image is run as
``docker run IMAGE train`` would, or with ``ContainerEntrypoint``/``ContainerArguments``.
With ``image: auto`` the ContainerEntrypoint is the Deep Learning Container's own
(``bash -m /usr/local/bin/entrypoint.sh``): its start-up scripts are copied from
``dlc/`` into each host's ``usr/local/bin`` (their own references to ``/usr/local/bin``
put under ``CLOUDTRAIN_ROOT``), so the emulated start runs the image's steps in the
image's order, and the host's ``PATH`` is the image's with this machine's Python first
(the image's ``python3`` is ``/opt/venv/bin/python3``).
``CLOUDTRAIN_HOSTS`` maps the ``algo-N`` names, which do not resolve on one machine, to
loopback ports. ``CLOUDTRAIN_HOSTS`` and the config files are shared by the hosts (the
request's ``cluster`` entry, see ``cloudtrain.providers.local.render``); each host
names only its ``current_host``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudtrain import catalog
from cloudtrain.provider.emulation import (
    CPU_DEVICES_ENV,
    HOSTS_ENV,
    JOB,
    ROOT_ENV,
    RUNTIME_ENTRYPOINT,
    bucket_path,
    deadline,
    host_python,
    restart,
)
from cloudtrain.provider.jobs import JobStatus
from cloudtrain.providers.sagemaker import failures, quotas
from cloudtrain.providers.sagemaker.clients import AwsCallError
from cloudtrain.providers.sagemaker.job import MAX_ATTEMPTS, attempt_name
from cloudtrain.providers.sagemaker.states import instance_shape, waiting_words

if TYPE_CHECKING:
    from cloudtrain.planning import Plan

OPT_ML_CONFIG = "opt/ml/input/config"
RESOURCE_CONFIG = f"{OPT_ML_CONFIG}/resourceconfig.json"
DEFAULT_CHECKPOINT_PATH = "/opt/ml/checkpoints"
DEFAULT_TENSORBOARD_PATH = "/opt/ml/output/tensorboard"  # API_TensorBoardOutputConfig
# Spot restarts emulated; SageMaker's own bound is MaxWaitTimeInSeconds, not a count.
SPOT_RESTARTS = 10
# Folders SageMaker creates empty on every host
# (https://docs.aws.amazon.com/sagemaker/latest/dg/model-train-storage.html).
OPT_ML_DIRS = ["opt/ml/model", "opt/ml/output/data", "opt/ml/code"]
# The TensorFlow DLC's start-up scripts (dlc/README.md), which its Dockerfiles copy to
# /usr/local/bin (aws/deep-learning-containers docker/tensorflow/2.21/Dockerfile.cuda @e0ecede).
IMAGE_BIN = "/usr/local/bin/"
STAND_INS = Path(__file__).parent / "dlc"
# The DLC's PATH after its Python's folder, /opt/venv/bin (Dockerfile.cuda's ENV PATH, over
# NVIDIA's base image's): this machine's Python stands in for the image's.
IMAGE_PATH = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]


def replicas(cloud: dict[str, Any], region: str, *, queue: str | None = None) -> dict[str, Any]:
    """One local host per SageMaker instance of the rendered request ``cloud``, and what to collect.

    ``queue`` is the AWS Batch job queue a queued request waits in (``render.queued``).
    """
    count = instance_shape(cloud["ResourceConfig"])[1]
    names = [f"algo-{i + 1}" for i in range(count)]
    resolver = ",".join(f"{name}=127.0.0.1:<port:{i}>" for i, name in enumerate(names))
    # resourceconfig.json lists hosts "sorted lexicographically"
    # (https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-training-algo-running-container.html)
    # The job's name is taken at submit (``job_names``): SageMaker never reuses one.
    host_env = {"TRAINING_JOB_NAME": JOB, "TRAINING_JOB_ARN": _job_arn(cloud, region)}
    replicas = [_replica(cloud, name, host_env) for name in names]
    # No TF_CONFIG: the runtime makes each host worker:<rank>, its place in resourceconfig.json's
    # sorted hosts (cloudtrain_runtime.providers.sagemaker): what --fault names.
    for replica in replicas:
        replica["task"] = f"worker:{sorted(names).index(replica['name'])}"
    output = f"{cloud['OutputDataConfig']['S3OutputPath'].rstrip('/')}/{JOB}/output"
    image = image_files() if _runs_image_scripts(cloud["AlgorithmSpecification"]) else {}
    path = {"PATH": os.pathsep.join([os.path.dirname(sys.executable), *IMAGE_PATH])} if image else {}
    return {
        "job": cloud["TrainingJobName"],
        "waiting": waiting_words(cloud, queue),
        "restarts": restarts(cloud),
        "deadline": max_runtime(cloud),
        "cluster": {
            "env": {HOSTS_ENV: resolver, **path},
            "files": {**_config(cloud, sorted(names)), **image},
        },
        "replicas": replicas,
        "collect": [
            {
                "sources": [f"{replica['root']}/opt/ml/{folder}" for replica in replicas],
                "target": bucket_path(f"{output}/{tarball}"),
            }
            for folder, tarball in (("model", "model.tar.gz"), ("output/data", "output.tar.gz"))
        ],
    }


def restarts(cloud: dict[str, Any]) -> dict[str, Any]:
    """How SageMaker restarts the job ``cloud``.

    A lost instance surfaces as an internal error, which only ``RetryStrategy`` retries;
    a managed spot interruption restarts the job with its checkpoints restored, as long
    as ``MaxWaitTimeInSeconds`` allows (bounded here by ``SPOT_RESTARTS``). An error
    exit of the job is never retried. Sources: ``RetryStrategy`` in botocore 1.44.8
    (sagemaker 2017-07-24 service-2.json) and
    https://docs.aws.amazon.com/sagemaker/latest/dg/model-managed-spot-training.html.
    """
    retries = cloud.get("RetryStrategy", {}).get("MaximumRetryAttempts", 0)
    host = (
        f"RetryStrategy.MaximumRetryAttempts is {retries}" if retries else "the request has no RetryStrategy"
    )
    if cloud.get("EnableManagedSpotTraining"):
        spot = restart(SPOT_RESTARTS, "managed spot training resumes until MaxWaitTimeInSeconds")
    else:
        spot = restart(0, "the request does not set EnableManagedSpotTraining (resources.spot: false)")
    return {"host": restart(retries, host), "spot": spot}


def max_runtime(cloud: dict[str, Any]) -> dict[str, Any]:
    """How SageMaker stops the job ``cloud`` once it has run ``StoppingCondition.MaxRuntimeInSeconds``.

    "SageMaker sends the algorithm the SIGTERM signal, which delays job termination for 120
    seconds", and the job ends ``Stopped`` with the secondary status ``MaxRuntimeExceeded``,
    "The job stopped because it exceeded the maximum allowed runtime" (botocore 1.44.18,
    sagemaker 2017-07-24 service-2.json: ``StoppingCondition``, ``DescribeTrainingJobResponse``).
    """
    seconds = int(cloud["StoppingCondition"]["MaxRuntimeInSeconds"])
    return deadline(
        seconds, "Stopped/MaxRuntimeExceeded", "MaxRuntimeExceeded", "StoppingCondition.MaxRuntimeInSeconds"
    )


def _replica(cloud: dict[str, Any], name: str, host_env: dict[str, str]) -> dict[str, Any]:
    root = f"<run>/hosts/{name}"
    env = {**cloud.get("Environment", {}), **host_env, ROOT_ENV: root}
    env[CPU_DEVICES_ENV] = str(_devices(instance_shape(cloud["ResourceConfig"])[0]))
    replica: dict[str, Any] = {
        "name": name,
        "argv": _argv(cloud["AlgorithmSpecification"], root),
        "env": env,
        "root": root,
        "cwd": root,
        "dirs": OPT_ML_DIRS,
        "cluster": {"files": {RESOURCE_CONFIG: {"current_host": name}}},
        "copy_in": [
            {
                "source": bucket_path(channel["DataSource"]["S3DataSource"]["S3Uri"]),
                "target": f"opt/ml/input/data/{channel['ChannelName']}",
            }
            for channel in cloud.get("InputDataConfig", [])
        ],
    }
    checkpoint = cloud.get("CheckpointConfig")
    replica["sync_out"] = []
    if checkpoint:
        local = checkpoint.get("LocalPath", DEFAULT_CHECKPOINT_PATH).lstrip("/")
        replica["copy_in"].append({"source": bucket_path(checkpoint["S3Uri"]), "target": local})
        replica["sync_out"].append({"source": local, "target": bucket_path(checkpoint["S3Uri"])})
    tensorboard = cloud.get("TensorBoardOutputConfig")
    if tensorboard:  # without it SageMaker uploads no event files, and neither does this
        local = tensorboard.get("LocalPath", DEFAULT_TENSORBOARD_PATH).lstrip("/")
        replica["sync_out"].append({"source": local, "target": bucket_path(tensorboard["S3OutputPath"])})
    return replica


def _argv(algorithm: dict[str, Any], root: str) -> list[str]:
    """``ContainerEntrypoint`` + ``ContainerArguments``, else the image's ENTRYPOINT with ``train``.

    An entrypoint path of the image that ``dlc/`` stands in for is the copy under ``root``.
    """
    entrypoint = algorithm.get("ContainerEntrypoint")
    if not entrypoint:
        return [sys.executable, *RUNTIME_ENTRYPOINT, "train"]
    stood_in = image_files()
    argv = [f"{root}{arg}" if arg.lstrip("/") in stood_in else arg for arg in host_python(entrypoint)]
    return [*argv, *algorithm.get("ContainerArguments", [])]


def _runs_image_scripts(algorithm: dict[str, Any]) -> bool:
    """Whether the ContainerEntrypoint starts one of the DLC scripts that ``dlc/`` stands in for."""
    stood_in = image_files()
    return any(arg.lstrip("/") in stood_in for arg in algorithm.get("ContainerEntrypoint", []))


def image_files() -> dict[str, str]:
    """The DLC's start-up scripts at their place under a host's root, by path relative to it.

    Each script's references to its siblings in ``/usr/local/bin`` are put under
    ``CLOUDTRAIN_ROOT``, the host's ``/``, as the runtime's own fixed paths are.
    """
    under_root = f'"${{{ROOT_ENV}%/}}"{IMAGE_BIN}'
    return {
        f"{IMAGE_BIN}{script.name}".lstrip("/"): script.read_text().replace(IMAGE_BIN, under_root)
        for script in sorted(STAND_INS.glob("*.sh"))
    }


def _config(cloud: dict[str, Any], hosts: list[str]) -> dict[str, Any]:
    """The ``/opt/ml/input/config`` files SageMaker writes on every host, each filling in ``current_host``."""
    instance_type = instance_shape(cloud["ResourceConfig"])[0]
    resource = {
        "current_host": None,
        "current_instance_type": instance_type,
        "current_group_name": "homogeneousCluster",
        "hosts": hosts,
        "instance_groups": [
            {"instance_group_name": "homogeneousCluster", "instance_type": instance_type, "hosts": hosts}
        ],
        "network_interface_name": "eth0",
    }
    files: dict[str, Any] = {
        RESOURCE_CONFIG: resource,
        f"{OPT_ML_CONFIG}/hyperparameters.json": json.dumps(cloud.get("HyperParameters", {})),
        f"{OPT_ML_CONFIG}/inputdataconfig.json": json.dumps(_input_data_config(cloud)),
    }
    if cloud.get("CheckpointConfig"):
        files[f"{OPT_ML_CONFIG}/checkpointconfig.json"] = json.dumps(
            {"LocalPath": DEFAULT_CHECKPOINT_PATH, **cloud["CheckpointConfig"]}
        )
    return files


def _input_data_config(cloud: dict[str, Any]) -> dict[str, dict[str, str]]:
    """``inputdataconfig.json``: each channel's content type, input mode and distribution."""
    mode = cloud["AlgorithmSpecification"]["TrainingInputMode"]
    return {
        channel["ChannelName"]: {
            "ContentType": channel.get("ContentType", ""),
            "TrainingInputMode": channel.get("InputMode", mode),
            "S3DistributionType": channel["DataSource"]["S3DataSource"].get(
                "S3DataDistributionType", "FullyReplicated"
            ),
            "RecordWrapperType": channel.get("RecordWrapperType", "None"),
        }
        for channel in cloud.get("InputDataConfig", [])
    }


def job_names(first: str) -> Iterator[str]:
    """What SageMaker would call this request's successive jobs: ``first``, then ``-r2``, ``-r3``...

    A training job's name is unique in the account and region forever (CreateTrainingJob:
    ``TrainingJobName`` "must be unique within an AWS Region in an AWS account";
    https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateTrainingJob.html), so a resubmit after a failure is a new job under the next
    attempt name (``job.attempt_name``), exactly as ``job.submit`` names it on the service.
    """
    return (attempt_name(first, attempt) for attempt in range(1, MAX_ATTEMPTS + 1))


def _job_arn(cloud: dict[str, Any], region: str) -> str:
    """The ARN the job will have, in the account and partition of its role (names are lowercase)."""
    parts = cloud["RoleArn"].split(":")
    return f"arn:{parts[1]}:sagemaker:{region}:{parts[4]}:training-job/{JOB}"


def _devices(instance_type: str) -> int:
    """Accelerators per host of a SageMaker instance type, from the catalog (1 for CPU-only)."""
    for machine in catalog.machines("sagemaker"):
        if machine.machine_type == instance_type:
            return machine.devices
    return 1


def quota_refusal(plan: Plan) -> AwsCallError:
    """What ``CreateTrainingJob`` raises over an account limit: ``ResourceLimitExceeded``, as AWS words it.

    The message's form is SageMaker's ("The account-level service limit '<quota name>' is N
    Instances, with current utilization of N Instances and a request delta of N Instances. Please
    use AWS Service Quotas to request an increase for this quota."), here for a quota of 0.
    """
    [need] = quotas.plan_needs(plan)
    said = (
        f"The account-level service limit '{need.name}' is 0 Instances, with current utilization of 0 "
        f"Instances and a request delta of {need.amount} Instances. Please use AWS Service Quotas to "
        "request an increase for this quota"
    )
    return AwsCallError(
        f"AWS create_training_job failed: ResourceLimitExceeded: {said}.", "ResourceLimitExceeded", said=said
    )


def stockout(plan: Plan) -> JobStatus:
    """How a job SageMaker found no capacity for ends: Failed, with a ``CapacityError`` FailureReason.

    The reason as SageMaker words it; the SageMaker Python SDK raises ``CapacityError`` for it
    (sagemaker-python-sdk v2, ``sagemaker/session.py`` ``_check_job_status``).
    """
    reason = (
        "CapacityError: Unable to provision requested ML compute capacity. "
        "Please retry using a different ML instance type."
    )
    return JobStatus("failed", "Failed/Failed", reason, failures.job_failure(reason))
