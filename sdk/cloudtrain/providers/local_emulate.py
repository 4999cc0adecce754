"""Emulate Vertex AI or SageMaker on this machine: their rendered request, their environment.

The request comes from the real backend's ``render``, so what runs here is exactly what
would be sent. Each replica the request asks for becomes one local process that gets
what that provider gives a replica, and nothing that says it is emulated except the
documented root (``CLOUDTRAIN_ROOT``) and, on SageMaker, the name resolver override
(``CLOUDTRAIN_HOSTS``: ``algo-N`` names do not resolve on one machine):

- **Vertex** (reference/vertex.md §2-3): ``TF_CONFIG`` with ``chief``/``worker`` (none for
  a single replica), ``CLUSTER_SPEC`` with the pool names, ``AIP_MODEL_DIR`` /
  ``AIP_CHECKPOINT_DIR`` / ``AIP_TENSORBOARD_LOG_DIR`` from ``baseOutputDirectory``, the
  container's ``env``, and ``/gcs`` linked to the stand-in Cloud Storage folder. The
  container's ``command`` runs with this machine's Python; without one, the image's
  ENTRYPOINT equivalent ``python -m cloudtrain_runtime`` runs with the ``args``.
- **SageMaker** (reference/sagemaker.md §3-4): an ``/opt/ml`` tree per host:
  ``input/config/{resourceconfig,hyperparameters,inputdataconfig,checkpointconfig}.json``,
  every input channel copied from the stand-in S3 folder into ``input/data/<channel>``
  (the code channel holds the bundle), ``checkpoints/`` restored from and synced back
  to ``CheckpointConfig.S3Uri``, and every host's ``model/`` and ``output/data/`` packed
  into ``<S3OutputPath>/<job>/output/{model,output}.tar.gz`` after success. No TF_CONFIG; the
  ``Environment`` plus ``TRAINING_JOB_NAME``/``TRAINING_JOB_ARN``; the image is run as
  ``docker run IMAGE train`` would, or with ``ContainerEntrypoint``/``ContainerArguments``.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from cloudtrain import catalog
from cloudtrain.errors import SpecError
from cloudtrain.providers import backend

if TYPE_CHECKING:
    from cloudtrain.planning import Plan

EMULATED = ("vertex", "sagemaker")
RUNTIME_ENTRYPOINT = ["-m", "cloudtrain_runtime"]
# Vertex maps worker pool i to a TF_CONFIG task type (reference/vertex.md §2.2).
POOL_TASK_TYPES = ("chief", "worker", "ps", "evaluator")
OPT_ML_CONFIG = "opt/ml/input/config"
DEFAULT_CHECKPOINT_PATH = "/opt/ml/checkpoints"
# Folders SageMaker creates empty on every host (reference/sagemaker.md §3).
OPT_ML_DIRS = ["opt/ml/model", "opt/ml/output/data", "opt/ml/code"]


def render(plan: Plan, *, max_restarts: int) -> dict[str, Any]:
    """The local request that runs ``plan``'s cloud request as that provider would."""
    assert plan.bundle is not None  # local.render checked it
    _check_emulable(plan)
    cloud = backend(plan.provider).render(plan)
    replicas = _vertex(cloud) if plan.provider == "vertex" else _sagemaker(cloud, plan.spec.sagemaker.region)
    return {
        "name": plan.name,
        "emulates": plan.provider,
        "max_restarts": max_restarts,
        "upload": {"bundle": plan.bundle, "target": bucket_path(plan.bundle)},
        **replicas,
    }


def cpu_cannot_share_devices(plan: Plan) -> bool:
    """Whether one process per host cannot emulate the plan's devices on the CPU.

    TensorFlow's MultiWorkerMirroredStrategy drives a single CPU device per worker (its
    local devices are the GPUs, else the one CPU), so several devices on each of several
    hosts cannot live in one process per host. Keras on JAX and one-host jobs can.
    """
    return plan.hosts > 1 and plan.devices_per_host > 1 and plan.spec.training.keras_backend == "tensorflow"


def _check_emulable(plan: Plan) -> None:
    """Refuse what one CPU cannot emulate faithfully: the request runs one container per host."""
    if cpu_cannot_share_devices(plan):
        raise SpecError(
            f"--emulate {plan.provider}: {plan.hosts} hosts × {plan.devices_per_host} devices cannot be "
            "emulated with TensorFlow on CPUs (MultiWorkerMirroredStrategy uses one CPU device per "
            "worker). Emulate with --set resources.per_host=1, or run the plain local provider, "
            "which starts one worker per device."
        )


def bucket_path(uri: str) -> str:
    """The stand-in bucket path of ``gs://B/p`` or ``s3://B/p``."""
    scheme, _, rest = uri.partition("://")
    return f"<buckets>/{'gcs' if scheme == 'gs' else scheme}/{rest}"


def _python(argv: list[str]) -> list[str]:
    """The container's command with its ``python``/``python3`` replaced by this machine's."""
    if argv and argv[0] in ("python", "python3"):
        return [sys.executable, *argv[1:]]
    return list(argv)


def _vertex(cloud: dict[str, Any]) -> dict[str, Any]:
    job = cloud["jobSpec"]
    tasks = [
        (pool, i) for pool, spec in enumerate(job["workerPoolSpecs"]) for i in range(spec["replicaCount"])
    ]
    addresses = {task: f"127.0.0.1:<port:{n}>" for n, task in enumerate(tasks)}
    clusters = _vertex_clusters(tasks, addresses)
    replicas = [_vertex_replica(job, task, clusters, len(tasks)) for task in tasks]
    return {"replicas": replicas}


def _vertex_clusters(
    tasks: list[tuple[int, int]], addresses: dict[tuple[int, int], str]
) -> dict[str, dict[str, list[str]]]:
    """TF_CONFIG's cluster (never an evaluator) and CLUSTER_SPEC's (every pool by name)."""
    tf_config: dict[str, list[str]] = {}
    cluster_spec: dict[str, list[str]] = {}
    for task in tasks:
        cluster_spec.setdefault(f"workerpool{task[0]}", []).append(addresses[task])
        if POOL_TASK_TYPES[task[0]] != "evaluator":
            tf_config.setdefault(POOL_TASK_TYPES[task[0]], []).append(addresses[task])
    return {"tf_config": tf_config, "cluster_spec": cluster_spec}


def _vertex_replica(
    job: dict[str, Any], task: tuple[int, int], clusters: dict[str, Any], total: int
) -> dict[str, Any]:
    pool, index = task
    spec = job["workerPoolSpecs"][pool]
    name = f"{POOL_TASK_TYPES[pool]}-{index}"
    container = spec["containerSpec"]
    env = {item["name"]: item["value"] for item in container.get("env", [])}
    env.update(_aip_dirs(job))
    cluster_spec = {"cluster": clusters["cluster_spec"], "environment": "cloud", "job": job}
    env["CLUSTER_SPEC"] = json.dumps({**cluster_spec, "task": {"type": f"workerpool{pool}", "index": index}})
    if total > 1:  # "Vertex does not set TF_CONFIG for single-replica training jobs"
        tf_config = {"cluster": clusters["tf_config"], "environment": "cloud", "job": job}
        env["TF_CONFIG"] = json.dumps({**tf_config, "task": {"type": POOL_TASK_TYPES[pool], "index": index}})
    env["CLOUDTRAIN_ROOT"] = f"<run>/hosts/{name}"
    env["CLOUDTRAIN_CPU_DEVICES"] = str(spec["machineSpec"].get("acceleratorCount") or 1)
    command = (
        _python(container["command"]) if container.get("command") else [sys.executable, *RUNTIME_ENTRYPOINT]
    )
    return {
        "name": name,
        "argv": [*command, *container.get("args", [])],
        "env": env,
        "root": f"<run>/hosts/{name}",
        "cwd": f"<run>/hosts/{name}",
        "links": {"gcs": "<buckets>/gcs"},
    }


def _aip_dirs(job: dict[str, Any]) -> dict[str, str]:
    """AIP_*_DIR from ``baseOutputDirectory`` (set only when it is; reference/vertex.md §2.3)."""
    base = job.get("baseOutputDirectory", {}).get("outputUriPrefix")
    if not base:
        return {}
    base = base.rstrip("/")
    return {
        "AIP_MODEL_DIR": f"{base}/model/",
        "AIP_CHECKPOINT_DIR": f"{base}/checkpoints/",
        "AIP_TENSORBOARD_LOG_DIR": f"{base}/logs/",
    }


def _sagemaker(cloud: dict[str, Any], region: str) -> dict[str, Any]:
    count = cloud["ResourceConfig"]["InstanceCount"]
    names = [f"algo-{i + 1}" for i in range(count)]
    resolver = ",".join(f"{name}=127.0.0.1:<port:{i}>" for i, name in enumerate(names))
    # resourceconfig.json lists hosts "sorted lexicographically" (reference/sagemaker.md §3)
    host_env = {"TRAINING_JOB_NAME": cloud["TrainingJobName"], "TRAINING_JOB_ARN": _job_arn(cloud, region)}
    host_env["CLOUDTRAIN_HOSTS"] = resolver
    replicas = [_sagemaker_replica(cloud, name, sorted(names), host_env) for name in names]
    output = f"{cloud['OutputDataConfig']['S3OutputPath'].rstrip('/')}/{cloud['TrainingJobName']}/output"
    return {
        "replicas": replicas,
        "collect": [
            {
                "sources": [f"{replica['root']}/opt/ml/{folder}" for replica in replicas],
                "target": bucket_path(f"{output}/{tarball}"),
            }
            for folder, tarball in (("model", "model.tar.gz"), ("output/data", "output.tar.gz"))
        ],
    }


def _sagemaker_replica(
    cloud: dict[str, Any], name: str, hosts: list[str], host_env: dict[str, str]
) -> dict[str, Any]:
    root = f"<run>/hosts/{name}"
    env = {**cloud.get("Environment", {}), **host_env, "CLOUDTRAIN_ROOT": root}
    env["CLOUDTRAIN_CPU_DEVICES"] = str(_devices(cloud["ResourceConfig"]["InstanceType"]))
    replica: dict[str, Any] = {
        "name": name,
        "argv": _sagemaker_argv(cloud["AlgorithmSpecification"]),
        "env": env,
        "root": root,
        "cwd": root,
        "dirs": OPT_ML_DIRS,
        "files": _sagemaker_config(cloud, name, hosts),
        "copy_in": [
            {
                "source": bucket_path(channel["DataSource"]["S3DataSource"]["S3Uri"]),
                "target": f"opt/ml/input/data/{channel['ChannelName']}",
            }
            for channel in cloud.get("InputDataConfig", [])
        ],
    }
    checkpoint = cloud.get("CheckpointConfig")
    if checkpoint:
        local = checkpoint.get("LocalPath", DEFAULT_CHECKPOINT_PATH).lstrip("/")
        replica["copy_in"].append({"source": bucket_path(checkpoint["S3Uri"]), "target": local})
        replica["sync_out"] = [{"source": local, "target": bucket_path(checkpoint["S3Uri"])}]
    return replica


def _sagemaker_argv(algorithm: dict[str, Any]) -> list[str]:
    """``ContainerEntrypoint`` + ``ContainerArguments``, else the image's ENTRYPOINT with ``train``."""
    entrypoint = algorithm.get("ContainerEntrypoint")
    if entrypoint:
        return [*_python(entrypoint), *algorithm.get("ContainerArguments", [])]
    return [sys.executable, *RUNTIME_ENTRYPOINT, "train"]


def _sagemaker_config(cloud: dict[str, Any], name: str, hosts: list[str]) -> dict[str, str]:
    """The ``/opt/ml/input/config`` files SageMaker writes on every host."""
    instance_type = cloud["ResourceConfig"]["InstanceType"]
    resource = {
        "current_host": name,
        "current_instance_type": instance_type,
        "current_group_name": "homogeneousCluster",
        "hosts": hosts,
        "instance_groups": [
            {"instance_group_name": "homogeneousCluster", "instance_type": instance_type, "hosts": hosts}
        ],
        "network_interface_name": "eth0",
    }
    files = {
        f"{OPT_ML_CONFIG}/resourceconfig.json": json.dumps(resource),
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


def _job_arn(cloud: dict[str, Any], region: str) -> str:
    """The ARN the job would have, in the account and partition of its role."""
    parts = cloud["RoleArn"].split(":")
    return f"arn:{parts[1]}:sagemaker:{region}:{parts[4]}:training-job/{cloud['TrainingJobName'].lower()}"


def _devices(instance_type: str) -> int:
    """Accelerators per host of a SageMaker instance type, from the catalog (1 for CPU-only)."""
    for machine in catalog.machines("sagemaker"):
        if machine.machine_type == instance_type:
            return machine.devices
    return 1
