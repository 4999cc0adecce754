"""Kubernetes: a Plan becomes a JobSet (``jobset.x-k8s.io/v1alpha2``), pure data; ``job`` sends it.

The JobSet has one replicatedJob, ``host``, of one Indexed Job with ``hosts`` pods. The
sources for each choice (kubernetes-sigs/jobset v0.12.0, commit f22e565; the Kubernetes
``batch/v1`` API as the ``kubernetes`` client 37 documents it):

- **Hostnames.** ``network.enableDNSHostnames`` makes the controller create a headless
  Service named after the JobSet and set every pod's ``subdomain`` to it
  (pkg/controllers/jobset_controller.go:788-833 and :952-956, ``GetSubdomain`` :1090).
  The Job is ``<jobset>-host-0`` (pkg/util/placement/placement.go:14-16) and an Indexed
  Job names pod i's host ``<job>-<i>`` (``V1JobSpec.completion_mode``), so pod i answers
  at ``<jobset>-host-0-<i>.<jobset>`` (api/jobset/v1alpha2/jobset_types.go:379-383).
- **Who is who.** Each pod learns its place through the downward API from what JobSet
  writes on it (``labelAndAnnotateObject``, jobset_controller.go:1014-1070:
  ``jobset.sigs.k8s.io/jobset-name``, ``replicatedjob-name``, ``job-index``,
  ``replicatedjob-replicas``) and from ``JOB_COMPLETION_INDEX``, which the Job controller
  adds to every container of an Indexed Job (kubernetes pkg/controller/job/
  indexed_job_utils.go, ``addCompletionIndexEnvVariable``). Pod 0 is the chief
  (``cloudtrain_runtime.providers.jobset``).
- **Restarts.** ``backoffLimit: 0`` and ``restartPolicy: Never`` fail the Job at the first
  failed pod, as JobSet's own failure-policy example does (site/static/examples/simple/
  failure-policy.yaml); the JobSet then recreates every Job, the whole gang, up to
  ``failurePolicy.maxRestarts`` times: "If no matching rule is found, the RestartJobSet
  action is applied" (jobset_types.go:490-494). MultiWorkerMirroredStrategy is not
  elastic, so a lone restarted pod could never rejoin its peers; JobSet's webhook would
  otherwise default the pod restart policy to OnFailure (pkg/webhooks/jobset_webhook.go:124-127).
  Two failures are final, matched by Job failure reason (site/content/en/docs/tasks/
  failure_policy.md:60): exit status 2 (a configuration or cluster error of the runtime,
  ``cloudtrain_runtime.errors``) through the Job's ``podFailurePolicy``, and
  ``activeDeadlineSeconds`` (``limits.max_runtime``) running out.
- **Storage.** Every bucket the job reads or writes is mounted at ``/gcs/BUCKET`` by the
  Cloud Storage FUSE CSI driver of GKE, as a CSI ephemeral volume, with the pod
  annotation ``gke-gcsfuse/volumes: "true"`` (GoogleCloudPlatform/gcs-fuse-csi-driver
  v1.24.4, examples/batch-job/job.yaml; https://cloud.google.com/kubernetes-engine/docs/
  how-to/cloud-storage-fuse-csi-driver-ephemeral). The runtime opens ``gs://B/p`` at
  ``/gcs/B/p`` as on Vertex AI, so the code bundle, data and backups need no cloud SDK in
  the image. ``s3://`` is not offered: Mountpoint for Amazon S3 cannot rename files on
  general purpose buckets (awslabs/mountpoint-s3 doc/SEMANTICS.md), and TensorFlow writes
  every checkpoint and SavedModel by renaming a temporary file.
- **Placement.** GPUs as the extended resource ``gpu_resource`` (``nvidia.com/gpu``), TPU
  chips as ``google.com/tpu`` with GKE's TPU node labels, the node type and spot capacity
  by the node labels in ``nodes.csv``; Kueue by the JobSet label
  ``kueue.x-k8s.io/queue-name`` (kubernetes-sigs/kueue site/content/en/docs/tasks/run/
  jobsets.md, "Queue selection").

``render`` names the JobSet ``<name>-<hash>``: the hash covers the whole request, the run
id included, so submitting the same run again meets ``409 AlreadyExists`` and attaches.

Example:
>>> from cloudtrain.spec import JobSpec
>>> from cloudtrain.api import plan
>>> spec = JobSpec(name="demo", code={"module": "trainer.task"}, storage={"root": "gs://bucket/demo"},
...                resources={"hosts": 2}, image="tensorflow/tensorflow:2.21.0")
>>> local = plan(spec, "local").with_bundle("gs://bucket/demo/code/0123456789abcdef.tar.gz")
>>> body = render(local, KubernetesSettings())
>>> job = body["spec"]["replicatedJobs"][0]["template"]["spec"]
>>> body["kind"], job["parallelism"], job["completionMode"], body["spec"]["failurePolicy"]["maxRestarts"]
('JobSet', 2, 'Indexed', 3)
"""

from __future__ import annotations

import csv
import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudtrain import catalog, container
from cloudtrain.errors import ProviderError, SpecError
from cloudtrain.providers.emulation import container_path
from cloudtrain.providers.kubernetes.settings import KubernetesSettings
from cloudtrain.providers.transfer import bundle_uri

if TYPE_CHECKING:
    from cloudtrain.planning import Plan

GROUP = "jobset.x-k8s.io"
VERSION = "v1alpha2"
API_VERSION = f"{GROUP}/{VERSION}"
PLURAL = "jobsets"
KIND = "JobSet"
REPLICATED_JOB = "host"
CONTAINER = "trainer"
# The port every host's TensorFlow server listens on, in the TF_CONFIG the runtime writes.
PORT = 2222

# What JobSet writes on every pod (api/jobset/v1alpha2/jobset_types.go:24-36).
JOBSET_NAME_KEY = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_NAME_KEY = "jobset.sigs.k8s.io/replicatedjob-name"
REPLICATED_JOB_REPLICAS_KEY = "jobset.sigs.k8s.io/replicatedjob-replicas"
JOB_INDEX_KEY = "jobset.sigs.k8s.io/job-index"
# The variables a pod reads them from, through the downward API; the same names as
# cloudtrain_runtime.providers.jobset (JOBSET_NAME is the name JobSet's own examples use:
# site/static/examples/in-place-restart/jobset-main-container-mode.yaml).
DOWNWARD_ENV = {
    "JOBSET_NAME": JOBSET_NAME_KEY,
    "JOBSET_REPLICATED_JOB": REPLICATED_JOB_NAME_KEY,
    "JOBSET_REPLICATED_JOB_REPLICAS": REPLICATED_JOB_REPLICAS_KEY,
    "JOBSET_JOB_INDEX": JOB_INDEX_KEY,
}
# Pods per Job: JobSet writes no label for it, so the render states it.
HOSTS_ENV = "CLOUDTRAIN_JOBSET_HOSTS"

JOB_LABEL = "cloudtrain/job"
REQUEST_LABEL = "cloudtrain/request"
RUN_ANNOTATION = "cloudtrain/run"
ESTIMATE_ANNOTATION = "cloudtrain/estimate-usd"
ESTIMATE_BASIS_ANNOTATION = "cloudtrain/estimate"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
GCSFUSE_ANNOTATION = "gke-gcsfuse/volumes"
GCSFUSE_DRIVER = "gcsfuse.csi.storage.gke.io"
# implicit-dirs: folders that exist only as object prefixes (data written by other tools)
# are listed (https://cloud.google.com/storage/docs/cloud-storage-fuse/config-file, implicit-dirs).
GCSFUSE_MOUNT_OPTIONS = "implicit-dirs"
# The runtime's exit status for a configuration or cluster error (cloudtrain_runtime.errors):
# a restart would fail the same way.
PERMANENT_EXIT_CODES = (2,)
PERMANENT_JOB_FAILURES = ("PodFailurePolicy", "DeadlineExceeded")

# The JobSet's name is a DNS-1035 label, and so must be its pods' names
# "<jobset>-host-0-<index>-<5 random>" for up to 1024 hosts (pkg/webhooks/jobset_webhook.go:243-256):
# 63 - len("-host-0-1023-abcde") = 45.
NAME_MAX = 63 - len(f"-{REPLICATED_JOB}-0-1023-abcde")
NAME_HASH_CHARS = 10

MOUNTED_SCHEME = "gs://"
NODES_CSV = Path(__file__).with_name("nodes.csv")


@dataclass(frozen=True)
class NodeLabel:
    """A node label a pod may require, and the page that documents it (``nodes.csv``)."""

    purpose: str
    match: str
    label: str
    value: str
    source: str


@functools.cache
def node_labels() -> tuple[NodeLabel, ...]:
    """The rows of ``nodes.csv``: the labels spot nodes, node types and TPU nodes carry."""
    with NODES_CSV.open(newline="") as rows:
        return tuple(NodeLabel(**row) for row in csv.DictReader(rows))


def settings_of(plan: Plan) -> KubernetesSettings:
    """The plan's ``kubernetes:`` section, or the defaults while ``JobSpec`` has none."""
    section = getattr(plan.spec, "kubernetes", None)
    return section if isinstance(section, KubernetesSettings) else KubernetesSettings()


def render(plan: Plan, settings: KubernetesSettings | None = None) -> dict[str, Any]:
    """The JobSet for ``plan``, as the JSON body of ``POST .../namespaces/NS/jobsets``.

    Args:
        plan: a plan whose code bundle URI is set (``Plan.with_bundle``).
        settings: the ``kubernetes:`` section; default ``settings_of(plan)``.

    Returns:
        A plain dict, deterministic for a given plan, free of credentials.

    Raises:
        ProviderError: the plan has no bundle URI.
        SpecError: the job cannot run as a JobSet (storage, image, TPU shape).
    """
    settings = settings or settings_of(plan)
    _check(plan)
    body: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": _metadata(plan, settings),
        "spec": _jobset_spec(plan, settings),
    }
    digest = request_hash(body)
    body["metadata"]["name"] = job_name(plan.name, digest)
    body["metadata"]["labels"][REQUEST_LABEL] = digest
    return body


def request_hash(body: dict[str, Any]) -> str:
    """The first 10 hex digits of the SHA-256 of the request, without its name and estimate.

    A new price or a measured throughput is no new job, so the estimate's annotations
    are left out; everything else, the run id and the code bundle's hash included, is in.
    """
    metadata = body["metadata"]
    annotations = {
        key: value
        for key, value in metadata.get("annotations", {}).items()
        if key not in (ESTIMATE_ANNOTATION, ESTIMATE_BASIS_ANNOTATION)
    }
    labels = {key: value for key, value in metadata.get("labels", {}).items() if key != REQUEST_LABEL}
    identity = {**body, "metadata": {"labels": labels, "annotations": annotations}}
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:NAME_HASH_CHARS]


def job_name(name: str, digest: str) -> str:
    """``<name>-<digest>``, the name shortened so every pod name stays a DNS-1035 label.

    Example:
    >>> job_name("churn-model", "0123456789")
    'churn-model-0123456789'
    >>> len(job_name("a" * 63, "0123456789"))
    45
    """
    return f"{name[: NAME_MAX - NAME_HASH_CHARS - 1].rstrip('-')}-{digest}"


def host_address(jobset: str, index: int, *, job_index: int = 0) -> str:
    """Where pod ``index`` of the JobSet ``jobset`` listens: ``<jobset>-host-0-<index>.<jobset>:2222``."""
    return f"{jobset}-{REPLICATED_JOB}-{job_index}-{index}.{jobset}:{PORT}"


def escape_env_value(value: str) -> str:
    """Keep ``$(NAME)`` literal: Kubernetes expands it to another variable unless written ``$$(NAME)``.

    ``V1EnvVar.value``: "Variable references $(VAR_NAME) are expanded using the previously
    defined environment variables in the container ... Double $$ are reduced to a single $".

    Example:
    >>> escape_env_value("echo $(HOME)")
    'echo $$(HOME)'
    """
    return value.replace("$(", "$$(")


def _check(plan: Plan) -> None:
    """What planning does not rule out: a bundle off the mounted scheme, an unbuilt image, a TPU shape.

    Planning already keeps the storage root and the data channels on ``gs://``, the
    provider's only scheme.
    """
    bundle_uri(plan, scheme=MOUNTED_SCHEME)
    problems = _tpu_problems(plan)
    if plan.image == "local" or plan.spec.image == "auto":
        problems.append(
            "image: auto has no image on Kubernetes yet. Build containers/gpu.Dockerfile (or cpu), push "
            "it to a registry the cluster pulls from, and set image: to its URI."
        )
    if problems:
        raise SpecError(problems)


def _tpu_problems(plan: Plan) -> list[str]:
    res = plan.spec.resources
    if catalog.accelerators()[res.accelerator].kind != "tpu":
        return []
    chips = sorted(int(row.match.split("/")[1]) for row in _labels("tpu_topology", res.accelerator))
    if res.per_host not in chips:
        return [
            f"resources.per_host: {res.per_host} is not a single-host {res.accelerator} slice on GKE "
            f"({', '.join(map(str, chips)) or 'none known'} chips)."
        ]
    return []


def _labels(purpose: str, prefix: str = "") -> list[NodeLabel]:
    return [
        row for row in node_labels() if row.purpose == purpose and row.match.split("/")[0].startswith(prefix)
    ]


def _metadata(plan: Plan, settings: KubernetesSettings) -> dict[str, Any]:
    labels = {**settings.labels, JOB_LABEL: plan.name}
    if settings.queue:
        labels[QUEUE_LABEL] = settings.queue
    annotations: dict[str, str] = {}
    if plan.run_id is not None:  # part of the request, so of its hash: a new run is a new JobSet
        annotations[RUN_ANNOTATION] = plan.run_id
    if plan.estimate is not None:
        annotations[ESTIMATE_ANNOTATION] = f"{plan.estimate.usd:.2f}"
        annotations[ESTIMATE_BASIS_ANNOTATION] = plan.estimate.basis
    metadata: dict[str, Any] = {"labels": labels, "annotations": annotations}
    if settings.namespace:
        metadata["namespace"] = settings.namespace
    return metadata


def _jobset_spec(plan: Plan, settings: KubernetesSettings) -> dict[str, Any]:
    return {
        "network": {"enableDNSHostnames": True},
        "failurePolicy": {
            "maxRestarts": settings.max_restarts,
            "rules": [
                {
                    "name": "permanent",
                    "action": "FailJobSet",
                    "onJobFailureReasons": list(PERMANENT_JOB_FAILURES),
                }
            ],
        },
        "replicatedJobs": [
            {"name": REPLICATED_JOB, "replicas": 1, "template": _job_template(plan, settings)}
        ],
    }


def _job_template(plan: Plan, settings: KubernetesSettings) -> dict[str, Any]:
    return {
        "spec": {
            "parallelism": plan.hosts,
            "completions": plan.hosts,
            "completionMode": "Indexed",
            "backoffLimit": 0,
            "activeDeadlineSeconds": plan.max_runtime_s,
            "podFailurePolicy": {
                "rules": [
                    {
                        "action": "FailJob",
                        "onExitCodes": {
                            "containerName": CONTAINER,
                            "operator": "In",
                            "values": list(PERMANENT_EXIT_CODES),
                        },
                    }
                ]
            },
            "template": _pod_template(plan, settings),
        }
    }


def _pod_template(plan: Plan, settings: KubernetesSettings) -> dict[str, Any]:
    buckets = _buckets(plan)
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [_container(plan, settings, buckets)],
        "volumes": [*_bucket_volumes(buckets), *_shared_memory(plan)],
    }
    optional = {
        "serviceAccountName": settings.service_account,
        "imagePullSecrets": [{"name": name} for name in settings.image_pull_secrets],
        "nodeSelector": _node_selector(plan, settings),
        "affinity": _spot_affinity() if plan.spot else None,
        "tolerations": [toleration.to_manifest() for toleration in settings.tolerations],
    }
    spec.update({key: value for key, value in optional.items() if value})
    return {"metadata": {"annotations": {GCSFUSE_ANNOTATION: "true"}}, "spec": spec}


def _buckets(plan: Plan) -> list[str]:
    """Every bucket a pod opens, in a stable order: the storage root's, the bundle's, the data's."""
    uris = [plan.storage.root, plan.bundle or "", *plan.spec.data.values()]
    names = (uri.removeprefix(MOUNTED_SCHEME).split("/", 1)[0] for uri in uris)
    return list(dict.fromkeys(names))


def _bucket_volumes(buckets: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "name": f"gcs-{index}",
            "csi": {
                "driver": GCSFUSE_DRIVER,
                "volumeAttributes": {"bucketName": bucket, "mountOptions": GCSFUSE_MOUNT_OPTIONS},
            },
        }
        for index, bucket in enumerate(buckets)
    ]


def _shared_memory(plan: Plan) -> list[dict[str, Any]]:
    """A memory-backed ``/dev/shm`` for GPU jobs: NCCL keeps its buffers there, and a container's is 64 MiB.

    NCCL troubleshooting, "Docker" and "Shared memory"
    (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html).
    """
    if catalog.accelerators()[plan.spec.resources.accelerator].kind != "gpu":
        return []
    return [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]


def _container(plan: Plan, settings: KubernetesSettings, buckets: list[str]) -> dict[str, Any]:
    mounts = [{"name": f"gcs-{index}", "mountPath": f"/gcs/{bucket}"} for index, bucket in enumerate(buckets)]
    if _shared_memory(plan):
        mounts.append({"name": "dshm", "mountPath": "/dev/shm"})
    spec: dict[str, Any] = {"name": CONTAINER, "image": plan.image}
    command = container.command(plan)
    if command:
        spec["command"] = command
    spec["env"] = _env(plan)
    spec["ports"] = [{"name": "tensorflow", "containerPort": PORT}]
    resources = _resources(plan, settings)
    if resources:
        spec["resources"] = {"requests": resources, "limits": resources}
    spec["volumeMounts"] = mounts
    return spec


def _env(plan: Plan) -> list[dict[str, Any]]:
    """The runtime contract, the user's variables, and where this pod stands in the JobSet."""
    own = {**container.environment(plan, container_path(bundle_uri(plan))), **plan.env}
    own[HOSTS_ENV] = str(plan.hosts)
    env: list[dict[str, Any]] = [
        {"name": name, "value": escape_env_value(value)} for name, value in own.items()
    ]
    env += [
        {"name": name, "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{key}']"}}}
        for name, key in DOWNWARD_ENV.items()
    ]
    return env


def _resources(plan: Plan, settings: KubernetesSettings) -> dict[str, str]:
    """The accelerators of one host as extended resources: GPUs by ``gpu_resource``, TPU chips."""
    res = plan.spec.resources
    kind = catalog.accelerators()[res.accelerator].kind
    if kind == "gpu":
        return {settings.gpu_resource: str(plan.devices_per_host)}
    if kind == "tpu":
        return {"google.com/tpu": str(plan.devices_per_host)}
    return {}


def _node_selector(plan: Plan, settings: KubernetesSettings) -> dict[str, str]:
    res = plan.spec.resources
    selector = dict(settings.node_selector)
    if settings.node_type:
        (row,) = _labels("node_type")
        selector[row.label] = settings.node_type
    for row in _labels("tpu", res.accelerator):
        selector[row.label] = row.value
    for row in _labels("tpu_topology", res.accelerator):
        if row.match == f"{res.accelerator}/{res.per_host}":
            selector[row.label] = row.value
    return selector


def _spot_affinity() -> dict[str, Any]:
    """Spot nodes of any platform in ``nodes.csv``: node selector terms are ORed (core/v1 NodeSelector)."""
    terms = [
        {"matchExpressions": [{"key": row.label, "operator": "In", "values": [row.value]}]}
        for row in _labels("spot")
    ]
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}


def ensure_namespace(body: dict[str, Any], namespace: str) -> dict[str, Any]:
    """``body`` with ``metadata.namespace`` set, refusing one that names another namespace.

    Raises:
        ProviderError: the request was rendered for another namespace.
    """
    rendered = body["metadata"].get("namespace")
    if rendered not in (None, namespace):
        raise ProviderError(
            f"The JobSet was rendered for namespace {rendered!r} but is sent to {namespace!r}. "
            "Render it again with kubernetes.namespace set to where it goes."
        )
    return {**body, "metadata": {**body["metadata"], "namespace": namespace}}
