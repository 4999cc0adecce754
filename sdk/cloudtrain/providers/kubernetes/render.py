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
- **Storage.** Each pod opens the storage root, the bundle and the data at ``/gcs/BUCKET``
  (GKE's Cloud Storage FUSE CSI driver) or ``/s3/BUCKET`` (copied in and synced out by
  the AWS CLI), where the runtime opens ``gs://`` and ``s3://`` URIs (``storage``).
- **Placement.** GPUs as the extended resource ``gpu_resource`` (``nvidia.com/gpu``), TPU
  chips as ``google.com/tpu`` with GKE's TPU node labels, the node type and spot capacity
  by the node labels in ``nodes.csv``; Kueue (``capacity: queue``, ``kubernetes.queue``) by
  the JobSet label ``kueue.x-k8s.io/queue-name`` (kubernetes-sigs/kueue
  site/content/en/docs/tasks/run/jobsets.md, "Queue selection"), created suspended.

``render`` names the JobSet ``<name>-<hash>``: the hash covers the whole request, the run
id included, so submitting the same run again meets ``409 AlreadyExists`` and attaches.
The node type, region and spot choice travel as annotations, so ``list`` and ``status``
price a run from the catalog after it ended (``job.summary``).

Example:
>>> from cloudtrain.spec import JobSpec
>>> from cloudtrain.api import plan
>>> spec = JobSpec(name="demo", code={"module": "trainer.task"}, storage={"root": "gs://bucket/demo"},
...                resources={"hosts": 2}, kubernetes={"namespace": "training"})
>>> planned = plan(spec, "kubernetes").with_bundle("gs://bucket/demo/code/0123456789abcdef.tar.gz")
>>> body = render(planned.with_run("r1"))
>>> job = body["spec"]["replicatedJobs"][0]["template"]["spec"]
>>> body["kind"], job["parallelism"], job["completionMode"], body["spec"]["failurePolicy"]["maxRestarts"]
('JobSet', 2, 'Indexed', 3)
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from cloudtrain import catalog, container, runs
from cloudtrain.errors import ProviderError
from cloudtrain.provider.transfer import bundle_uri
from cloudtrain.providers.kubernetes import nodes, storage
from cloudtrain.providers.kubernetes.settings import KubernetesSettings

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
# Where the run's artifacts are, so a JobSet found again (status, list) says where its outputs are.
RUN_PREFIX_ANNOTATION = "cloudtrain/run-prefix"
ESTIMATE_ANNOTATION = "cloudtrain/estimate-usd"
ESTIMATE_BASIS_ANNOTATION = "cloudtrain/estimate"
HOURLY_ANNOTATION = "cloudtrain/hourly-usd"
NODE_TYPE_ANNOTATION = "cloudtrain/node-type"
ACCELERATOR_ANNOTATION = "cloudtrain/accelerator"
REGION_ANNOTATION = "cloudtrain/region"
SPOT_ANNOTATION = "cloudtrain/spot"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
# The runtime's exit status for a configuration or cluster error (cloudtrain_runtime.errors):
# a restart would fail the same way.
PERMANENT_EXIT_CODES = (2,)
PERMANENT_JOB_FAILURES = ("PodFailurePolicy", "DeadlineExceeded")

# The JobSet's name is a DNS-1035 label, and so must be its pods' names
# "<jobset>-host-0-<index>-<5 random>" for up to 1024 hosts (pkg/webhooks/jobset_webhook.go:243-256):
# 63 - len("-host-0-1023-abcde") = 45.
NAME_MAX = 63 - len(f"-{REPLICATED_JOB}-0-1023-abcde")
NAME_HASH_CHARS = 10
# Kubernetes' default terminationGracePeriodSeconds for a pod.
DEFAULT_GRACE_S = 30


def render(plan: Plan) -> dict[str, Any]:
    """The JobSet for ``plan``, as the JSON body of ``POST .../namespaces/NS/jobsets``.

    Args:
        plan: a plan whose code bundle and run are set (``Plan.with_bundle``, ``Plan.with_run``).

    Returns:
        A plain dict, deterministic for a given plan, free of credentials.

    Raises:
        ProviderError: the plan has no code bundle URI, or no run id.
    """
    settings = KubernetesSettings.of(plan.spec)
    bundle_uri(plan)
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
        if key not in (ESTIMATE_ANNOTATION, ESTIMATE_BASIS_ANNOTATION, HOURLY_ANNOTATION)
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


def queue_of(plan: Plan) -> str | None:
    """The Kueue LocalQueue the JobSet goes to: ``capacity: queue``'s name, else ``kubernetes.queue``; None: no Kueue."""
    capacity = plan.capacity
    named = capacity.name if capacity.mode == "queue" else None
    return named or KubernetesSettings.of(plan.spec).queue


def _metadata(plan: Plan, settings: KubernetesSettings) -> dict[str, Any]:
    labels = {**settings.labels, JOB_LABEL: plan.name}
    queue = queue_of(plan)
    if queue:
        labels[QUEUE_LABEL] = queue
    # The run is part of the request, so of its hash: a new run is a new JobSet.
    notes = {
        RUN_ANNOTATION: runs.of_plan(plan),
        RUN_PREFIX_ANNOTATION: plan.storage.run,
        SPOT_ANNOTATION: str(plan.spot).lower(),
        ACCELERATOR_ANNOTATION: plan.spec.resources.accelerator,
    }
    if settings.node_type:
        notes[NODE_TYPE_ANNOTATION] = settings.node_type
    if settings.region:
        notes[REGION_ANNOTATION] = settings.region
    if plan.estimate is not None:
        notes[ESTIMATE_ANNOTATION] = f"{plan.estimate.usd:.2f}"
        notes[ESTIMATE_BASIS_ANNOTATION] = plan.estimate.basis
    if plan.estimate is not None and plan.estimate.usd_per_hour is not None:
        notes[HOURLY_ANNOTATION] = f"{plan.estimate.usd_per_hour:.2f}"
    metadata: dict[str, Any] = {"labels": labels, "annotations": notes}
    if settings.namespace:
        metadata["namespace"] = settings.namespace
    return metadata


def _jobset_spec(plan: Plan, settings: KubernetesSettings) -> dict[str, Any]:
    """The JobSet: hostnames, the failure policy, one replicated job; suspended when a Kueue queue admits it.

    A queued JobSet is created suspended, and Kueue unsuspends it once its LocalQueue's
    ClusterQueue admits it (quota reserved, admission checks such as a ProvisioningRequest
    passed): kubernetes-sigs/kueue v0.19.2, site/content/en/docs/concepts/workload.md and
    tasks/run/jobsets.md. Suspended, its Jobs and pods are not created.
    """
    suspended = {"suspend": True} if queue_of(plan) else {}
    return {
        **suspended,
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
    spec: dict[str, Any] = {"restartPolicy": "Never"}
    sidecars = storage.init_containers(plan)
    if sidecars:
        spec["initContainers"] = sidecars
    spec["terminationGracePeriodSeconds"] = grace_s(plan)
    spec["containers"] = [_container(plan, settings)]
    spec["volumes"] = [*storage.volumes(plan), *_shared_memory(plan)]
    optional = {
        "serviceAccountName": settings.service_account,
        "imagePullSecrets": [{"name": name} for name in settings.image_pull_secrets],
        "nodeSelector": _node_selector(plan, settings),
        "affinity": _spot_affinity() if plan.spot else None,
        "tolerations": [toleration.to_manifest() for toleration in settings.tolerations],
    }
    spec.update({key: value for key, value in optional.items() if value})
    if not spec["volumes"]:
        del spec["volumes"]
    template: dict[str, Any] = {"spec": spec}
    if storage.pod_annotations(plan):
        template["metadata"] = {"annotations": storage.pod_annotations(plan)}
    return template


def _shared_memory(plan: Plan) -> list[dict[str, Any]]:
    """A memory-backed ``/dev/shm`` for GPU jobs: NCCL keeps its buffers there, and a container's is 64 MiB.

    NCCL troubleshooting, "Docker" and "Shared memory"
    (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html).
    """
    if catalog.accelerators()[plan.spec.resources.accelerator].kind != "gpu":
        return []
    return [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]


def _container(plan: Plan, settings: KubernetesSettings) -> dict[str, Any]:
    mounts = storage.mounts(plan)
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
    if mounts:
        spec["volumeMounts"] = mounts
    return spec


def _env(plan: Plan) -> list[dict[str, Any]]:
    """The runtime contract, the user's variables, and where this pod stands in the JobSet."""
    own = {**container.environment(plan, storage.mounted_path(bundle_uri(plan))), **plan.env}
    own[HOSTS_ENV] = str(plan.hosts)
    own[container.GRACE_ENV] = str(grace_s(plan))
    env: list[dict[str, Any]] = [
        {"name": name, "value": escape_env_value(value)} for name, value in own.items()
    ]
    env += [
        {"name": name, "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{key}']"}}}
        for name, key in DOWNWARD_ENV.items()
    ]
    return env


def grace_s(plan: Plan) -> int:
    """The pod's ``terminationGracePeriodSeconds``: the runtime saves its step within it after SIGTERM.

    Kubernetes' default, 30 s (https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/
    #pod-termination); where a sidecar copies the prefix out to S3 its last copy must fit
    too (``storage.TERMINATION_GRACE_S``). The runtime gets the same as ``CLOUDTRAIN_GRACE_S``
    (``cloudtrain_runtime.notice``).
    """
    return storage.TERMINATION_GRACE_S if storage.init_containers(plan) else DEFAULT_GRACE_S


def _resources(plan: Plan, settings: KubernetesSettings) -> dict[str, str]:
    """The accelerators of one host as extended resources: GPUs by ``gpu_resource``, TPU chips."""
    res = plan.spec.resources
    kind = catalog.accelerators()[res.accelerator].kind
    if kind == "gpu":
        return {settings.gpu_resource: str(plan.devices_per_host)}
    if kind == "tpu":
        return {nodes.TPU_RESOURCE: str(plan.devices_per_host)}
    return {}


def _node_selector(plan: Plan, settings: KubernetesSettings) -> dict[str, str]:
    res = plan.spec.resources
    selector = dict(settings.node_selector)
    if settings.node_type:
        (row,) = nodes.labels("node_type")
        selector[row.label] = settings.node_type
    for row in nodes.labels("tpu", res.accelerator):
        selector[row.label] = row.value
    for row in nodes.labels("tpu_topology", res.accelerator):
        if row.match == f"{res.accelerator}/{res.per_host}":
            selector[row.label] = row.value
    return selector


def _spot_affinity() -> dict[str, Any]:
    """Spot nodes of any platform in ``nodes.csv``: node selector terms are ORed (core/v1 NodeSelector)."""
    terms = [
        {"matchExpressions": [{"key": row.label, "operator": "In", "values": [row.value]}]}
        for row in nodes.labels("spot")
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
