"""Vertex AI: a Plan becomes the CustomJob request, pure data; ``job`` sends it.

``render(plan)`` returns the JSON body of ``POST
https://{region}-aiplatform.googleapis.com/v1/projects/{project}/locations/{region}/customJobs``
in REST camelCase, exactly what ``google.protobuf.json_format.ParseDict`` accepts for
``aiplatform_v1.CustomJob``. It is built from plain dicts, so ``render`` and ``submit
--dry-run`` import no Google library. Worker pool 0 is the chief (replica count 1),
pool 1 the other ``hosts - 1`` workers, as Vertex requires (https://cloud.google.com/vertex-ai/docs/training/distributed-training).

``render`` stamps the request with the label ``cloudtrain_request``: a hash of
everything else in the body, the code bundle's content hash included. ``job.submit``
looks for a job with that label before creating one, which makes submitting
idempotent (see ``cloudtrain.providers.vertex.job``).

The container reads the code bundle through the Cloud Storage FUSE mount at
``/gcs/BUCKET/...``, so it needs no cloud SDK.

Example:
>>> from cloudtrain.spec import JobSpec
>>> from cloudtrain.api import plan
>>> spec = JobSpec(
...     name="demo", code={"module": "trainer.task"}, storage={"root": "gs://bucket/demo"},
...     resources={"accelerator": "a100-40gb", "per_host": 8, "hosts": 2},
...     vertex={"project": "my-project"},
... )
>>> planned = plan(spec, "vertex").with_bundle("gs://bucket/demo/code/0123.tar.gz").with_run("2026-12-03")
>>> body = render(planned)
>>> [pool["replicaCount"] for pool in body["jobSpec"]["workerPoolSpecs"]]
[1, 1]
>>> body["jobSpec"]["baseOutputDirectory"]
{'outputUriPrefix': 'gs://bucket/demo/runs/2026-12-03'}
>>> body["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]
{'machineType': 'a2-highgpu-8g', 'acceleratorType': 'NVIDIA_TESLA_A100', 'acceleratorCount': 8}
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import TYPE_CHECKING, Any

from cloudtrain import container, runs
from cloudtrain.errors import ProviderError, SpecError
from cloudtrain.planning import ExpectedCost
from cloudtrain.provider.transfer import bundle_uri
from cloudtrain.providers.vertex.checks import ANY_RESERVATION
from cloudtrain.providers.vertex.settings import VertexSettings

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cloudtrain.capacity import Capacity
    from cloudtrain.catalog import Machine
    from cloudtrain.planning import Plan

JOB_LABEL = "cloudtrain_job"
REQUEST_LABEL = "cloudtrain_request"
RUN_LABEL = "cloudtrain_run"
# The cost expected at submit time: whole cents (label values take no '.'), and its basis.
ESTIMATE_LABEL = "cloudtrain_estimate_cents"
ESTIMATE_BASIS_LABEL = "cloudtrain_estimate"
HOURLY_LABEL = "cloudtrain_hourly_cents"
# Labels that describe the job without being part of what it is: left out of the request hash.
NOT_HASHED = (REQUEST_LABEL, ESTIMATE_LABEL, ESTIMATE_BASIS_LABEL, HOURLY_LABEL)

# ContainerSpec.env: "Maximum limit is 100" (aiplatform_v1 custom_job.proto; google-cloud-aiplatform 2.7.0, google/cloud/aiplatform_v1/types/custom_job.py).
MAX_ENV_VARS = 100
# Labels: keys and values up to 63 characters of lowercase letters, digits, "_" and "-";
# keys start with a letter; at most 64 labels (cloud.google.com/vertex-ai/docs/general/labels).
MAX_LABEL_CHARS = 63
MAX_LABELS = 64
_LABEL_INVALID = re.compile(r"[^a-z0-9_-]")
_CENTS = re.compile(r"[0-9]{1,15}")

# Scheduling.strategy by capacity mode (aiplatform_v1 Scheduling.Strategy, google-cloud-aiplatform 2.7.0);
# on-demand leaves it unset, which Vertex reads as STANDARD.
STRATEGIES = {"spot": "SPOT", "flex": "FLEX_START"}
RESERVATION_KEY = "compute.googleapis.com/reservation-name"

DEFAULT_BOOT_DISK = "pd-ssd"
# Machines that boot only from Hyperdisk: hyperdisk-balanced is their default boot disk
# (DiskSpec in google-cloud-aiplatform 2.7.0, google/cloud/aiplatform_v1/types/machine_resources.py;
# https://cloud.google.com/vertex-ai/docs/training/configure-compute).
BOOT_DISK_BY_MACHINE = {
    "a3-ultragpu-8g": "hyperdisk-balanced",
    "a4-highgpu-8g": "hyperdisk-balanced",
}


def render(plan: Plan) -> dict[str, Any]:
    """The CustomJob for ``plan`` as the REST JSON body of ``POST .../customJobs``.

    Args:
        plan: a Vertex plan whose code bundle URI is set (``api.pack_code`` or
            ``Plan.with_bundle``); the container reads the bundle through ``/gcs``.

    Returns:
        A plain dict, deterministic for a given plan, free of credentials.

    Raises:
        ProviderError: if the plan has no bundle URI or is not a Vertex plan.
        SpecError: if the job would exceed Vertex's limits on env variables or labels.
    """
    _check_plan(plan)
    labels = _user_labels(plan)
    body: dict[str, Any] = {"displayName": plan.name, "labels": labels, "jobSpec": _job_spec(plan)}
    labels[REQUEST_LABEL] = request_hash(body)
    return body


def request_hash(body: dict[str, Any]) -> str:
    """A 16-hex-digit hash of the request body, without its own ``cloudtrain_request`` label.

    The label that carries it is how ``submit`` finds a job it already created. The
    estimate's labels are left out too: a new price or a measured throughput is no new job.
    """
    labels = {k: v for k, v in body.get("labels", {}).items() if k not in NOT_HASHED}
    canonical = json.dumps({**body, "labels": labels}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def fuse_path(uri: str) -> str:
    """The path at which a replica reads ``gs://BUCKET/path``: ``/gcs/BUCKET/path``.

    Example:
    >>> fuse_path("gs://my-bucket/code/abc.tar.gz")
    '/gcs/my-bucket/code/abc.tar.gz'
    """
    if not uri.startswith("gs://"):
        raise ProviderError(f"Vertex AI reads code from Cloud Storage, but the bundle is at {uri!r}.")
    return "/gcs/" + uri.removeprefix("gs://")


def _check_plan(plan: Plan) -> None:
    if plan.provider != "vertex" or plan.machine is None:
        raise ProviderError(
            f"vertex.render needs a Vertex plan; got provider {plan.provider!r}. Use plan(spec, 'vertex')."
        )
    bundle_uri(plan)
    runs.of_plan(plan)


def _job_spec(plan: Plan) -> dict[str, Any]:
    vertex = VertexSettings.of(plan.spec)
    spec: dict[str, Any] = {
        "workerPoolSpecs": _worker_pools(plan),
        "scheduling": _scheduling(plan),
        # Vertex derives AIP_MODEL_DIR, AIP_CHECKPOINT_DIR and AIP_TENSORBOARD_LOG_DIR from it
        # (CustomJobSpec.base_output_directory in google-cloud-aiplatform 2.7.0): the run's own prefix,
        # so no run overwrites another's model.
        "baseOutputDirectory": {"outputUriPrefix": plan.storage.run},
    }
    optional = {
        "serviceAccount": vertex.service_account,
        "network": vertex.network,
        "tensorboard": vertex.tensorboard,
    }
    spec.update({key: value for key, value in optional.items() if value})
    return spec | _experiment(plan)


def _experiment(plan: Plan) -> dict[str, str]:
    """``experiment`` and ``experimentRun`` for a spec naming a Vertex AI experiment; else nothing.

    Their formats are CustomJobSpec's (google-cloud-aiplatform 2.7.0, aiplatform_v1
    custom_job.proto): contexts of the project's ``default`` metadata store, the run's named
    ``{experiment}-{run}``; the run is the cloudtrain run id, shared by every attempt.
    """
    experiment = VertexSettings.of(plan.spec).experiment
    if not experiment:
        return {}
    contexts = f"projects/{VertexSettings.of(plan.spec).project}/locations/{plan.region}/metadataStores/default/contexts"
    return {
        "experiment": f"{contexts}/{experiment}",
        "experimentRun": f"{contexts}/{experiment}-{runs.of_plan(plan)}",
    }


def _worker_pools(plan: Plan) -> list[dict[str, Any]]:
    """Pool 0 is the chief with exactly one replica; pool 1 holds the other hosts.

    Vertex sets TF_CONFIG from these pools: pool 0 becomes ``chief``, pool 1 ``worker``
    (https://cloud.google.com/vertex-ai/docs/training/distributed-training).
    """
    chief = _pool(plan, replicas=1)
    if plan.hosts == 1:
        return [chief]
    return [chief, _pool(plan, replicas=plan.hosts - 1)]


def _pool(plan: Plan, *, replicas: int) -> dict[str, Any]:
    assert plan.machine is not None  # _check_plan guarantees it
    return {
        "machineSpec": _machine_spec(plan.machine, plan.capacity),
        "replicaCount": replicas,
        "diskSpec": {
            "bootDiskType": BOOT_DISK_BY_MACHINE.get(plan.machine.machine_type, DEFAULT_BOOT_DISK),
            "bootDiskSizeGb": plan.spec.resources.disk_gb,
        },
        "containerSpec": _container_spec(plan),
    }


def _machine_spec(machine: Machine, capacity: Capacity) -> dict[str, Any]:
    """GPUs by accelerator enum and count; TPU v5e by machine type and topology only; the reservation.

    v5e takes no acceleratorType (https://cloud.google.com/vertex-ai/docs/training/configure-compute, TPUs).
    """
    spec: dict[str, Any] = {"machineType": machine.machine_type}
    if machine.tpu_topology:
        spec["tpuTopology"] = machine.tpu_topology
    elif machine.accelerator_count:
        spec["acceleratorType"] = machine.provider_accelerator
        spec["acceleratorCount"] = machine.accelerator_count
    if capacity.mode == "reservation":
        spec["reservationAffinity"] = reservation_affinity(str(capacity.name))
    return spec


def reservation_affinity(name: str) -> dict[str, Any]:
    """``MachineSpec.reservationAffinity``: any reservation, or the one ``name`` names (its full resource name).

    SPECIFIC_RESERVATION takes the key ``compute.googleapis.com/reservation-name`` and the
    reservation as its value (aiplatform_v1 ReservationAffinity, google-cloud-aiplatform 2.7.0,
    google/cloud/aiplatform_v1/types/reservation_affinity.py).

    Example:
    >>> reservation_affinity("any")
    {'reservationAffinityType': 'ANY_RESERVATION'}
    >>> reservation_affinity("projects/p/zones/us-central1-a/reservations/r")["key"]
    'compute.googleapis.com/reservation-name'
    """
    if name == ANY_RESERVATION:
        return {"reservationAffinityType": "ANY_RESERVATION"}
    return {
        "reservationAffinityType": "SPECIFIC_RESERVATION",
        "key": RESERVATION_KEY,
        "values": [name],
    }


def _container_spec(plan: Plan) -> dict[str, Any]:
    spec: dict[str, Any] = {"imageUri": plan.image}
    command = container.command(plan)
    if command:
        spec["command"] = command
    spec["env"] = _env(plan)
    return spec


def _env(plan: Plan) -> list[dict[str, str]]:
    env = {**container.environment(plan, fuse_path(bundle_uri(plan))), **plan.env}
    if len(env) > MAX_ENV_VARS:
        own = len(env) - len(plan.spec.env)
        raise SpecError(
            f"env: Vertex AI accepts at most {MAX_ENV_VARS} environment variables per container, "
            f"and this job needs {len(env)} ({len(plan.spec.env)} from env, {own} set by cloudtrain). "
            f"Remove {len(env) - MAX_ENV_VARS} from env."
        )
    return [{"name": name, "value": escape_env_value(value)} for name, value in env.items()]


def escape_env_value(value: str) -> str:
    """Keep ``$(NAME)`` literal: Vertex expands it to another variable unless written ``$$(NAME)``.

    Example:
    >>> escape_env_value("echo $(HOME)")
    'echo $$(HOME)'
    """
    return value.replace("$(", "$$(")


def _scheduling(plan: Plan) -> dict[str, Any]:
    """Timeout always; whole-job restart for multi-worker, since MWMS is not elastic; the capacity's strategy.

    A worker restarting alone would wait forever for peers that moved on
    (https://cloud.google.com/vertex-ai/docs/training/understanding-training-service).
    FLEX_START waits up to ``maxWaitDuration`` for every machine at once, 0 meaning for
    ever and the default 24 h (https://cloud.google.com/vertex-ai/docs/training/schedule-jobs-dws,
    "Configure the duration to wait for resource availability").
    """
    scheduling: dict[str, Any] = {"timeout": f"{plan.max_runtime_s}s"}
    if plan.hosts > 1:
        scheduling["restartJobOnWorkerRestart"] = True
    strategy = STRATEGIES.get(plan.capacity.mode)
    if strategy:
        scheduling["strategy"] = strategy
    if plan.capacity.max_wait is not None:
        scheduling["maxWaitDuration"] = f"{plan.capacity.max_wait}s"
    return scheduling


def _user_labels(plan: Plan) -> dict[str, str]:
    """The spec's labels made valid for Vertex, plus the job name for filtering in the console."""
    labels: dict[str, str] = {}
    for key, value in VertexSettings.of(plan.spec).labels.items():
        clean = sanitise_label_key(key)
        if clean in labels or clean in (JOB_LABEL, RUN_LABEL, *NOT_HASHED):
            raise SpecError(
                f"vertex.labels: {key!r} becomes the label key {clean!r}, which is already used. "
                "Rename one of the labels."
            )
        labels[clean] = sanitise_label_value(value)
    labels[JOB_LABEL] = sanitise_label_value(plan.name)
    labels[RUN_LABEL] = runs.of_plan(plan)  # part of the request, so of its hash: a new run is a new job
    if plan.estimate is not None:
        labels |= estimate_labels(plan.estimate)
    if len(labels) + 1 > MAX_LABELS:
        raise SpecError(
            f"vertex.labels: Vertex AI allows {MAX_LABELS} labels per job and cloudtrain adds "
            f"{len(labels) + 1 - len(VertexSettings.of(plan.spec).labels)}; "
            f"remove {len(labels) + 1 - MAX_LABELS} of the {len(VertexSettings.of(plan.spec).labels)} labels."
        )
    return labels


def estimate_labels(estimate: ExpectedCost) -> dict[str, str]:
    """The estimate as labels: whole cents, its basis and, where known, the hourly price in cents.

    >>> estimate_labels(ExpectedCost(1.264, "worst-case", 0.632))
    {'cloudtrain_estimate_cents': '126', 'cloudtrain_estimate': 'worst-case', 'cloudtrain_hourly_cents': '63'}
    """
    hourly = {} if estimate.usd_per_hour is None else {HOURLY_LABEL: str(round(estimate.usd_per_hour * 100))}
    return {ESTIMATE_LABEL: str(round(estimate.usd * 100)), ESTIMATE_BASIS_LABEL: estimate.basis, **hourly}


def estimate_from_labels(labels: Mapping[str, str]) -> ExpectedCost | None:
    """The estimate a job's labels carry; None when it has none, or they were edited into nonsense.

    >>> estimate_from_labels({"cloudtrain_estimate_cents": "126", "cloudtrain_estimate": "worst-case"})
    ExpectedCost(usd=1.26, basis='worst-case', usd_per_hour=None)
    """
    cents, basis = labels.get(ESTIMATE_LABEL, ""), labels.get(ESTIMATE_BASIS_LABEL, "")
    # ASCII digits only: label values may hold any Unicode letter or digit, and int("²") raises.
    if not (_CENTS.fullmatch(cents) and basis):
        return None
    hourly = labels.get(HOURLY_LABEL, "")
    return ExpectedCost(int(cents) / 100, basis, int(hourly) / 100 if _CENTS.fullmatch(hourly) else None)


def sanitise_label_key(key: str) -> str:
    """Lowercase, other characters to ``-``, at most 63 characters, starting with a letter.

    Example:
    >>> sanitise_label_key("Team Name")
    'team-name'
    >>> sanitise_label_key("2024")
    'k2024'
    """
    clean = sanitise_label_value(key)
    if not clean[:1].isalpha():
        clean = f"k{clean}"[:MAX_LABEL_CHARS]
    return clean


def sanitise_label_value(value: str) -> str:
    """Lowercase, other characters to ``-``, at most 63 characters (empty is allowed).

    Example:
    >>> sanitise_label_value("Q3/Churn.v2")
    'q3-churn-v2'
    """
    return _LABEL_INVALID.sub("-", value.lower())[:MAX_LABEL_CHARS]
