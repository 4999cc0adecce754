"""The pods a rendered JobSet becomes, and the environment each one's container sees.

What the JobSet and Job controllers add, from the same sources ``render`` cites:

- the JobSet controller creates ``replicas`` Jobs per replicatedJob, named
  ``<jobset>-<replicatedJob>-<jobIndex>`` (pkg/util/placement/placement.go:14-16), and
  annotates each pod with the JobSet's name, the replicatedJob's name and replica count,
  and the Job's index (pkg/controllers/jobset_controller.go:1014-1070);
- the Job controller gives each pod of an Indexed Job its completion index, as the
  annotation ``batch.kubernetes.io/job-completion-index`` and the variable
  ``JOB_COMPLETION_INDEX`` (kubernetes pkg/controller/job/indexed_job_utils.go), and the
  host name ``<job>-<index>`` (``V1JobSpec.completion_mode``);
- the kubelet resolves the container's ``env``: ``valueFrom.fieldRef`` from the pod's
  annotations (the downward API), ``$$`` in a value to ``$`` (``V1EnvVar.value``).

``replicas`` turns them into the local provider's replicas (``cloudtrain.providers.local.render``):
one process per pod, with that environment, a folder standing in for the pod's ``/``
(``CLOUDTRAIN_ROOT``), ``/gcs`` linked to the stand-in Cloud Storage buckets as GKE's
FUSE driver mounts them, ``/s3`` filled from the stand-in S3 buckets as the pod's
``s3-in`` init container would and copied back, never deleting, as its ``s3-out``
sidecar would (``storage``: the lists of what to copy are read from the containers'
own environment), and ``CLOUDTRAIN_HOSTS`` mapping every pod's host name to a loopback
port, since those names do not resolve on one machine. The whole gang restarts as the
JobSet's ``failurePolicy.maxRestarts`` says.

Example:
>>> request = {"metadata": {"name": "demo-0123456789"}, "spec": {"replicatedJobs": [{"name": "host",
...     "replicas": 1, "template": {"spec": {"completions": 2, "template": {"spec": {"containers": [
...     {"name": "trainer", "env": [{"name": "JOBSET_NAME", "valueFrom": {"fieldRef":
...     {"fieldPath": "metadata.annotations['jobset.sigs.k8s.io/jobset-name']"}}}]}]}}}}}]}}
>>> [(pod.hostname, pod.env["JOB_COMPLETION_INDEX"], pod.env["JOBSET_NAME"]) for pod in pods(request)]
[('demo-0123456789-host-0-0', '0', 'demo-0123456789'), ('demo-0123456789-host-0-1', '1', 'demo-0123456789')]
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from cloudtrain.errors import ProviderError
from cloudtrain.provider.emulation import (
    CPU_DEVICES_ENV,
    HOSTS_ENV,
    ROOT_ENV,
    RUNTIME_ENTRYPOINT,
    bucket_path,
    deadline,
    host_python,
    restart,
)
from cloudtrain.providers.kubernetes import kueue, storage
from cloudtrain.providers.kubernetes.render import (
    CONTAINER,
    JOB_INDEX_KEY,
    JOBSET_NAME_KEY,
    QUEUE_LABEL,
    REPLICATED_JOB_NAME_KEY,
    REPLICATED_JOB_REPLICAS_KEY,
)

COMPLETION_INDEX_KEY = "batch.kubernetes.io/job-completion-index"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
_ANNOTATION_FIELD = re.compile(r"metadata\.annotations\['([^']+)'\]")


@dataclass(frozen=True)
class Pod:
    """One pod of the JobSet: its host name, subdomain and its first container's environment."""

    hostname: str
    subdomain: str
    annotations: Mapping[str, str]
    env: Mapping[str, str]


def pods(request: dict[str, Any]) -> list[Pod]:
    """Every pod the JobSet ``request`` starts, in job then completion-index order."""
    return list(_pods(request))


def _pods(request: dict[str, Any]) -> Iterator[Pod]:
    name = request["metadata"]["name"]
    for replicated in request["spec"]["replicatedJobs"]:
        job_spec = replicated["template"]["spec"]
        replicas = replicated.get("replicas", 1)
        for job_index in range(replicas):
            for index in range(job_spec.get("completions", 1)):
                annotations = {
                    JOBSET_NAME_KEY: name,
                    REPLICATED_JOB_NAME_KEY: replicated["name"],
                    REPLICATED_JOB_REPLICAS_KEY: str(replicas),
                    JOB_INDEX_KEY: str(job_index),
                    COMPLETION_INDEX_KEY: str(index),
                }
                container = job_spec["template"]["spec"]["containers"][0]
                yield Pod(
                    hostname=f"{name}-{replicated['name']}-{job_index}-{index}",
                    subdomain=name,
                    annotations=annotations,
                    env={**container_env(container, annotations), COMPLETION_INDEX_ENV: str(index)},
                )


def container_env(container: dict[str, Any], annotations: Mapping[str, str]) -> dict[str, str]:
    """The container's variables as the kubelet sets them, annotations read through the downward API.

    Raises:
        ProviderError: a ``valueFrom`` this emulation does not resolve (only pod annotations).
    """
    env: dict[str, str] = {}
    for variable in container.get("env", []):
        if "value" in variable:
            env[variable["name"]] = variable["value"].replace("$$", "$")
            continue
        path = variable.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath", "")
        match = _ANNOTATION_FIELD.fullmatch(path)
        if match is None:
            raise ProviderError(f"env {variable['name']}: only pod annotations are emulated, not {path!r}.")
        env[variable["name"]] = annotations.get(match.group(1), "")
    return env


def replicas(request: dict[str, Any]) -> dict[str, Any]:
    """One local replica per pod of the rendered JobSet ``request``, and how the gang restarts."""
    found = pods(request)
    resolver = ",".join(f"{pod.hostname}.{pod.subdomain}=127.0.0.1:<port:{n}>" for n, pod in enumerate(found))
    template = request["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    return {
        "job": request["metadata"]["name"],
        "waiting": waiting_words(request),
        "restarts": restarts(request),
        "deadline": active_deadline(request),
        "cluster": {"env": {HOSTS_ENV: resolver}},
        "replicas": [_replica(pod, index, template) for index, pod in enumerate(found)],
    }


def waiting_words(request: dict[str, Any]) -> dict[str, str]:
    """The state the JobSet ``request`` waits in before it runs, and why, as ``status`` says it.

    A queued JobSet waits suspended in its Kueue queue (``job.KubernetesJob._queued``), any
    other for its pods to be scheduled.
    """
    queue = request["metadata"].get("labels", {}).get(QUEUE_LABEL)
    if queue and request["spec"].get("suspend"):
        return {"state": "queued", "provider_state": "Suspended", "reason": kueue.suspended_in(queue)}
    return {"state": "pending", "provider_state": "Pending", "reason": "waiting for its pods to be scheduled"}


def restarts(request: dict[str, Any]) -> dict[str, Any]:
    """JobSet recreates every pod after one fails, ``failurePolicy.maxRestarts`` times, a lost node or spot alike."""
    limit = int(request["spec"].get("failurePolicy", {}).get("maxRestarts", 0))
    rule = f"failurePolicy.maxRestarts is {limit}: JobSet recreates every pod after one fails"
    return {"host": restart(limit, rule), "spot": restart(limit, rule)}


def active_deadline(request: dict[str, Any]) -> dict[str, Any]:
    """How the JobSet ``request`` ends once its Job has run ``activeDeadlineSeconds``.

    "Once a Job reaches activeDeadlineSeconds, all of its running Pods are terminated and
    the Job status will become type: Failed with reason: DeadlineExceeded"
    (https://kubernetes.io/docs/concepts/workloads/controllers/job/#job-termination-and-cleanup);
    the JobSet fails with it (``PERMANENT_JOB_FAILURES``), never restarting.
    """
    seconds = int(request["spec"]["replicatedJobs"][0]["template"]["spec"]["activeDeadlineSeconds"])
    return deadline(seconds, "Failed", "DeadlineExceeded", "the Job's activeDeadlineSeconds")


def job_names(first: str) -> Iterator[str]:
    """A JobSet's name is its request's (``render.job_name``): the same request is the same JobSet."""
    return iter([first])


def _replica(pod: Pod, index: int, template: dict[str, Any]) -> dict[str, Any]:
    name = f"host-{index}"
    root = f"<run>/hosts/{name}"
    main = next(c for c in template["containers"] if c["name"] == CONTAINER)
    command = host_python(main["command"]) if main.get("command") else [sys.executable, *RUNTIME_ENTRYPOINT]
    replica: dict[str, Any] = {
        "name": name,
        # The runtime's task for pod index N: chief:0, then worker:N-1 (cloudtrain_runtime.providers.jobset).
        "task": "chief:0" if index == 0 else f"worker:{index - 1}",
        "argv": [*command, *main.get("args", [])],
        "env": {**pod.env, ROOT_ENV: root, CPU_DEVICES_ENV: str(_devices(main))},
        "root": root,
        "cwd": root,
    }
    if any("csi" in volume for volume in template.get("volumes", [])):
        replica["links"] = {"gcs": "<buckets>/gcs"}
    sidecars = {c["name"]: c for c in template.get("initContainers", [])}
    if sidecars:
        replica["copy_in"] = _copies_in(_env_of(sidecars["s3-in"], storage.COPY_IN_ENV))
        replica["sync_out"] = _syncs_out(sidecars["s3-out"])
    return replica


def _devices(main: dict[str, Any]) -> int:
    """The accelerators the container asks for (one CPU device when none)."""
    limits = main.get("resources", {}).get("limits", {})
    return max([int(count) for count in limits.values() if str(count).isdigit()] or [1])


def _env_of(sidecar: dict[str, Any], name: str) -> list[list[str]]:
    """A copy list from a sidecar's environment: one pair (or triple) of words per line."""
    value = next(item["value"] for item in sidecar["env"] if item["name"] == name)
    return [line.split() for line in value.splitlines() if line.strip()]


def _copies_in(lines: list[list[str]]) -> list[dict[str, str]]:
    """``aws s3 cp`` of an object lands in its folder, ``aws s3 sync`` of a prefix in its own."""
    return [
        {
            "source": bucket_path(source),
            "target": str(PurePosixPath(target).parent if verb == "cp" else PurePosixPath(target)).lstrip(
                "/"
            ),
        }
        for verb, source, target in lines
    ]


def _syncs_out(sidecar: dict[str, Any]) -> list[dict[str, Any]]:
    """The run's prefix back to its bucket, and ``latest.json`` into its folder; never deleting."""
    prefixes = [
        {"source": local.lstrip("/"), "target": bucket_path(remote), "delete": False}
        for local, remote in _env_of(sidecar, storage.SYNC_OUT_ENV)
    ]
    files = [
        {
            "source": local.lstrip("/"),
            "target": bucket_path(remote.rsplit("/", 1)[0]),
            "delete": False,
        }
        for local, remote in _env_of(sidecar, storage.LATEST_ENV)
    ]
    return prefixes + files
