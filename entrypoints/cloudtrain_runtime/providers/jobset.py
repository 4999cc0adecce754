"""A pod of a Kubernetes JobSet (kubernetes-sigs/jobset), as the replica sees it.

Sources: kubernetes-sigs/jobset v0.12.0 (commit f22e565) and the Kubernetes Job API.

- **Recognised by** ``JOBSET_NAME`` with ``JOB_COMPLETION_INDEX``. JobSet annotates every
  pod with ``jobset.sigs.k8s.io/jobset-name``, ``replicatedjob-name``,
  ``replicatedjob-replicas`` and ``job-index`` (pkg/controllers/jobset_controller.go:
  1014-1070, ``labelAndAnnotateObject``); cloudtrain's JobSet hands them to the container
  as ``JOBSET_NAME``, ``JOBSET_REPLICATED_JOB``, ``JOBSET_REPLICATED_JOB_REPLICAS`` and
  ``JOBSET_JOB_INDEX`` through the downward API, and the number of pods per Job as
  ``CLOUDTRAIN_JOBSET_HOSTS`` (JobSet writes none). The Job controller sets
  ``JOB_COMPLETION_INDEX``, the pod's index in its Indexed Job, in every container
  (kubernetes pkg/controller/job/indexed_job_utils.go, ``addCompletionIndexEnvVariable``).
- **Cluster**: pod ``i`` of Job ``j`` is host ``<jobset>-<replicatedJob>-<j>-<i>`` in the
  subdomain ``<jobset>`` (api/jobset/v1alpha2/jobset_types.go:379-389: "Pods will be
  reachable using the fully qualified pod hostname:
  <jobSet.name>-<spec.replicatedJob.name>-<job-index>-<pod-index>.<subdomain>", and the
  subdomain "Defaults to <jobSet.name> if not set"). Rank is ``j × pods + i``: rank 0 is
  the chief, the others workers, and the runtime writes the TF_CONFIG, every host on
  port 2222.
- **Peers**: a pod's name resolves once the pod exists and has an address (the headless
  Service publishes not-ready addresses, jobset_types.go:391-394), and pods start at
  different times, so the runtime waits for every peer to resolve.
- **Storage and locations**: ``gs://`` buckets are mounted at ``/gcs/BUCKET`` by GKE's
  Cloud Storage FUSE CSI driver, so those URIs open as on Vertex AI; ``s3://`` URIs open
  at ``/s3/BUCKET``, a folder an init container fills from S3 and a sidecar copies back
  to it, never deleting anything there (cloudtrain.providers.kubernetes.storage). So on
  ``s3://`` the run's backup outlives its verified export, as on SageMaker: a file
  deleted here would stay in S3 anyway.
- **Emulation**: ``CLOUDTRAIN_HOSTS`` maps the pods' host names to loopback addresses
  when the local provider runs several pods on one machine.

Example:
>>> env = {"JOBSET_NAME": "demo-0123456789", "JOBSET_REPLICATED_JOB": "host", "JOBSET_JOB_INDEX": "0",
...        "JOBSET_REPLICATED_JOB_REPLICAS": "1", "CLOUDTRAIN_JOBSET_HOSTS": "2", "JOB_COMPLETION_INDEX": "1"}
>>> info = ENVIRONMENT.cluster(env, root="/")
>>> info.task_id, info.rank, info.is_chief, info.hosts[0]
('worker_0', 1, False, 'demo-0123456789-host-0-0.demo-0123456789:2222')
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar

from cloudtrain_runtime.errors import ClusterError
from cloudtrain_runtime.hostmap import HOSTS_ENV as LOOPBACK_ENV
from cloudtrain_runtime.hostmap import addresses, host_overrides
from cloudtrain_runtime.inputs import shown
from cloudtrain_runtime.paths import under_root
from cloudtrain_runtime.replica import ClusterInfo, Environment, Locations

if TYPE_CHECKING:
    from cloudtrain_runtime.config import RuntimeConfig

NAME_ENV = "JOBSET_NAME"
REPLICATED_JOB_ENV = "JOBSET_REPLICATED_JOB"
REPLICAS_ENV = "JOBSET_REPLICATED_JOB_REPLICAS"
JOB_INDEX_ENV = "JOBSET_JOB_INDEX"
HOSTS_ENV = "CLOUDTRAIN_JOBSET_HOSTS"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
PORT = 2222
# JobSet and replicatedJob names are DNS-1035 labels (pkg/webhooks/jobset_webhook.go:227-256).
_LABEL = re.compile(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?")
_COUNT = re.compile(r"0|[1-9][0-9]{0,8}")
# Job indexes and completion indexes stay below 10**5 (Indexed Jobs: parallelism <= 10^5, V1JobSpec).
_MOST = 100_000
KEEP_BACKUPS = (
    "on s3:// a sidecar copies the run's files to S3 and never deletes any there, so the backup stays as "
    "the run's durable copy (cloudtrain status shows its size)"
)


class JobSet(Environment):
    """A JobSet pod: its host names from the JobSet, a TF_CONFIG to write, ``/gcs`` mounted."""

    provider = "jobset"
    label = "Kubernetes JobSet"
    mounts: ClassVar[Mapping[str, str]] = MappingProxyType({"gs://": "/gcs/", "s3://": "/s3/"})
    peer_hint = (
        "On Kubernetes, check that the JobSet has network.enableDNSHostnames and that every pod "
        "was scheduled (kubectl get pods -l jobset.sigs.k8s.io/jobset-name=NAME)."
    )

    def detects(self, env: Mapping[str, str], root: str) -> bool:
        return bool(env.get(NAME_ENV)) and COMPLETION_INDEX_ENV in env

    def cluster(self, env: Mapping[str, str], root: str) -> ClusterInfo:
        name, replicated = _name(env, NAME_ENV), _name(env, REPLICATED_JOB_ENV)
        replicas, pods = _count(env, REPLICAS_ENV, 1), _count(env, HOSTS_ENV, 1)
        job, index = _count(env, JOB_INDEX_ENV, 0), _count(env, COMPLETION_INDEX_ENV, 0)
        if job >= replicas or index >= pods:
            raise ClusterError(
                f"This pod is {JOB_INDEX_ENV}={job}, {COMPLETION_INDEX_ENV}={index}, outside a JobSet of "
                f"{replicas} Job(s) of {pods} pod(s) ({REPLICAS_ENV}, {HOSTS_ENV}). Render the JobSet again."
            )
        names = [f"{name}-{replicated}-{j}-{i}.{name}" for j in range(replicas) for i in range(pods)]
        hosts = addresses(names, host_overrides(env.get(LOOPBACK_ENV, ""), example=names[0]), port=PORT)
        rank = job * pods + index
        # Rank 0 is the chief, the others workers 0.. in rank order, as on Vertex AI.
        task_type, task_index = ("chief", 0) if rank == 0 else ("worker", rank - 1)
        pools = {"chief": [hosts[0]], "worker": list(hosts[1:])}
        tf_config = {
            "cluster": {kind: pool for kind, pool in pools.items() if pool},
            "task": {"type": task_type, "index": task_index},
        }
        mount = self.mount(root)
        return ClusterInfo(
            self.provider, task_type, task_index, rank, rank == 0, hosts, mount, tf_config=tf_config
        )

    def mount(self, root: str) -> Path:
        return under_root(root, "/gcs")

    def locations(
        self, config: RuntimeConfig, env: Mapping[str, str], root: str, mounts: Mapping[str, str]
    ) -> Locations:
        found = Locations.from_uris(config, root, mounts)
        if config.backup_dir.startswith("s3://"):
            return replace(found, keep_backups=KEEP_BACKUPS)
        return found


def _name(env: Mapping[str, str], variable: str) -> str:
    value = env.get(variable, "")
    if not _LABEL.fullmatch(value):
        raise ClusterError(
            f"{variable} must be a JobSet or replicatedJob name (a DNS-1035 label like 'demo-0123456789'). "
            f"Received: {variable}={shown(value)}. The JobSet sets it from the pod's annotations."
        )
    return value


def _count(env: Mapping[str, str], variable: str, least: int) -> int:
    value = env.get(variable, "")
    if not _COUNT.fullmatch(value) or not least <= int(value) < _MOST:
        raise ClusterError(
            f"{variable} must be a whole number from {least} to {_MOST - 1}. Received: {variable}={shown(value)}."
        )
    return int(value)


ENVIRONMENT = JobSet()
