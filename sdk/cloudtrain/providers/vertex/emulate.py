"""Vertex AI on this machine: a rendered CustomJob becomes the local replicas Vertex would start.

Each replica gets what Vertex gives one (https://cloud.google.com/vertex-ai/docs/training/distributed-training,
https://cloud.google.com/vertex-ai/docs/training/code-requirements): ``TF_CONFIG`` with
``chief``/``worker`` (none for a single replica), ``CLUSTER_SPEC`` with the pool names,
``AIP_MODEL_DIR`` / ``AIP_CHECKPOINT_DIR`` / ``AIP_TENSORBOARD_LOG_DIR`` from
``baseOutputDirectory``, the container's ``env``, and ``/gcs`` linked to the stand-in
Cloud Storage folder. The container's ``command`` runs with this machine's Python;
without one, the image's ENTRYPOINT equivalent ``python -m cloudtrain_runtime`` runs
with the ``args``. Restarts follow the request's ``scheduling`` (``restarts``).
``TF_CONFIG`` and ``CLUSTER_SPEC`` are shared by the replicas
(the request's ``cluster`` entry, see ``cloudtrain.providers.local.render``), each
replica naming only its own task.
"""

from __future__ import annotations

import itertools
import secrets
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from cloudtrain.provider.emulation import (
    CPU_DEVICES_ENV,
    JOB,
    ROOT_ENV,
    RUNTIME_ENTRYPOINT,
    deadline,
    host_python,
    restart,
)
from cloudtrain.provider.jobs import JobStatus
from cloudtrain.providers.vertex import failures, quotas
from cloudtrain.providers.vertex.clients import GoogleCallError
from cloudtrain.providers.vertex.names import waiting_words

if TYPE_CHECKING:
    from cloudtrain.planning import Plan

# Vertex maps worker pool i to a TF_CONFIG task type (https://cloud.google.com/vertex-ai/docs/training/distributed-training).
POOL_TASK_TYPES = ("chief", "worker", "ps", "evaluator")
# Restarts per worker after a lost VM, and job retries after a Spot preemption
# (https://cloud.google.com/vertex-ai/docs/training/understanding-training-service,
# https://cloud.google.com/vertex-ai/docs/training/use-spot-vms).
WORKER_RESTARTS = 5
SPOT_RETRIES = 6
# Vertex gives every replica the job's numeric ID (CLOUD_ML_JOB_ID) and the project's number
# (CLOUD_ML_PROJECT_ID; https://cloud.google.com/vertex-ai/docs/training/code-requirements; the
# aiplatform SDK reads the ID in google/cloud/aiplatform/training_utils/environment_variables.py,
# google-cloud-aiplatform 2.7.0). A job's restarts keep its ID; a resubmit is a new job, a new
# ID. No project has a number here, so a stand-in one of the same form.
STAND_IN_PROJECT_NUMBER = "123456789012"
JOB_ID_DIGITS = 19  # custom job IDs as the console shows them, e.g. 1234567890123456789


def replicas(cloud: dict[str, Any]) -> dict[str, Any]:
    """One local replica per Vertex replica of the rendered CustomJob ``cloud``."""
    job = cloud["jobSpec"]
    tasks = [
        (pool, i) for pool, spec in enumerate(job["workerPoolSpecs"]) for i in range(spec["replicaCount"])
    ]
    addresses = {task: f"127.0.0.1:<port:{n}>" for n, task in enumerate(tasks)}
    clusters = _clusters(tasks, addresses)
    shared = {"CLUSTER_SPEC": clusters["cluster_spec"]}
    if len(tasks) > 1:  # "Vertex does not set TF_CONFIG for single-replica training jobs"
        shared["TF_CONFIG"] = clusters["tf_config"]
    cluster = {
        variable: {"cluster": value, "environment": "cloud", "job": job, "task": None}
        for variable, value in shared.items()
    }
    return {
        "waiting": waiting_words(cloud),
        "restarts": restarts(job, replicas=len(tasks)),
        "deadline": timeout(job),
        "cluster": {"env": cluster},
        "replicas": [_replica(job, task, shared) for task in tasks],
    }


def restarts(job: dict[str, Any], *, replicas: int) -> dict[str, Any]:
    """How Vertex restarts the job ``job``.

    A lost VM's worker restarts (up to 5 times per worker); the other workers of a
    MultiWorkerMirroredStrategy job cannot take it back, so only a job with
    ``restartJobOnWorkerRestart`` (or a single replica) recovers, by restarting whole.
    A Spot VM preemption retries the job, up to 6 times. ``disableRetries`` turns
    both off. Sources: https://cloud.google.com/vertex-ai/docs/training/understanding-training-service
    and https://cloud.google.com/vertex-ai/docs/training/use-spot-vms.
    """
    scheduling = job.get("scheduling", {})
    if scheduling.get("disableRetries"):
        off = restart(0, "scheduling.disableRetries is set")
        return {"host": off, "spot": off}
    if replicas == 1 or scheduling.get("restartJobOnWorkerRestart"):
        host = restart(WORKER_RESTARTS, "Vertex restarts a lost worker, and with it the whole job")
    else:
        host = restart(
            0, "scheduling.restartJobOnWorkerRestart is not set, so only the lost worker would restart"
        )
    if scheduling.get("strategy") == "SPOT":
        spot = restart(SPOT_RETRIES, "Vertex retries a preempted Spot job")
    else:
        spot = restart(0, "scheduling.strategy is not SPOT (resources.spot: false)")
    return {"host": host, "spot": spot}


def timeout(job: dict[str, Any]) -> dict[str, Any]:
    """How Vertex stops the job ``job`` once it has run ``scheduling.timeout`` ("The maximum job running time").

    Vertex's reference (aiplatform_v1 ``Scheduling.timeout``, google-cloud-aiplatform
    ``types/custom_job.py``) names no end state for it; the job did not complete, so it
    ends JOB_STATE_FAILED here, not cancelled, which on Vertex is a stop someone asked for.
    """
    seconds = int(str(job["scheduling"]["timeout"]).removesuffix("s"))
    return deadline(seconds, "JOB_STATE_FAILED", "scheduling.timeout", "scheduling.timeout")


def _clusters(
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


def _replica(job: dict[str, Any], task: tuple[int, int], shared: dict[str, Any]) -> dict[str, Any]:
    pool, index = task
    spec = job["workerPoolSpecs"][pool]
    name = f"{POOL_TASK_TYPES[pool]}-{index}"
    container = spec["containerSpec"]
    env = {item["name"]: item["value"] for item in container.get("env", [])}
    env.update(_aip_dirs(job))
    env.update({"CLOUD_ML_JOB_ID": JOB, "CLOUD_ML_PROJECT_ID": STAND_IN_PROJECT_NUMBER})
    task_types = {"CLUSTER_SPEC": f"workerpool{pool}", "TF_CONFIG": POOL_TASK_TYPES[pool]}
    own = {variable: {"task": {"type": task_types[variable], "index": index}} for variable in shared}
    env[ROOT_ENV] = f"<run>/hosts/{name}"
    env[CPU_DEVICES_ENV] = str(spec["machineSpec"].get("acceleratorCount") or 1)
    command = (
        host_python(container["command"])
        if container.get("command")
        else [sys.executable, *RUNTIME_ENTRYPOINT]
    )
    return {
        "name": name,
        "task": f"{POOL_TASK_TYPES[pool]}:{index}",  # TF_CONFIG's task: what --fault names
        "argv": [*command, *container.get("args", [])],
        "env": env,
        "root": f"<run>/hosts/{name}",
        "cwd": f"<run>/hosts/{name}",
        "links": {"gcs": "<buckets>/gcs"},
        "cluster": {"env": own},
    }


def _aip_dirs(job: dict[str, Any]) -> dict[str, str]:
    """AIP_*_DIR from ``baseOutputDirectory`` (set only when it is; CustomJobSpec.base_output_directory)."""
    base = job.get("baseOutputDirectory", {}).get("outputUriPrefix")
    if not base:
        return {}
    base = base.rstrip("/")
    return {
        "AIP_MODEL_DIR": f"{base}/model/",
        "AIP_CHECKPOINT_DIR": f"{base}/checkpoints/",
        "AIP_TENSORBOARD_LOG_DIR": f"{base}/logs/",
    }


def job_names(first: str) -> Iterator[str]:
    """The IDs Vertex gives successive custom jobs: new random numbers (``first`` is not used).

    Vertex assigns the ID when it creates the job; a restart keeps it, a resubmit is a new
    CustomJob with a new ID.
    """
    low, high = 10 ** (JOB_ID_DIGITS - 1), 10**JOB_ID_DIGITS
    return (str(low + secrets.randbelow(high - low)) for _ in itertools.count())


def quota_refusal(plan: Plan) -> GoogleCallError:
    """What ``CreateCustomJob`` raises over a training quota: 429 RESOURCE_EXHAUSTED naming the metric.

    Google's words, as users met them (github.com/GoogleCloudPlatform/stable-diffusion-on-gcp/issues/12):
    "The following quota metrics exceed quota limits: aiplatform.googleapis.com/custom_model_training_nvidia_l4_gpus".
    """
    metrics = (
        ", ".join(need.name for need in quotas.plan_needs(plan))
        or f"{quotas.SERVICE}/custom_model_training_cpus"
    )
    said = f"The following quota metrics exceed quota limits: {metrics}"
    parent = f"projects/{plan.spec.vertex.project}/locations/{plan.region}"  # type: ignore[attr-defined]
    return GoogleCallError(
        f"Could not create a custom job in {parent}: {said} (ResourceExhausted). Request more quota, "
        "or use another accelerator or region.",
        code="RESOURCE_EXHAUSTED",
        cause="quota",
        said=said,
    )


def stockout(plan: Plan) -> JobStatus:
    """How a job Vertex found no capacity for ends: failed, once every zone of the region was tried.

    The message as Vertex words it (github.com/openreview/openreview-expertise/issues/401);
    the code, RESOURCE_EXHAUSTED (8), is google.rpc's for an exhausted resource.
    """
    message = f"Resources are insufficient in region: {plan.region}. Please try a different region."
    return JobStatus("failed", "JOB_STATE_FAILED", message, failures.job_failure(8, message))
