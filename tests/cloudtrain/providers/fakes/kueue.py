"""Kueue, as the fake API server plays it: the Workload it makes for a queued JobSet.

Kueue's JobSet integration makes one Workload per JobSet, named ``jobset-<name>-<hash>``,
owned by the JobSet and labelled with its uid, with one pod set per replicated job and
the ``QuotaReserved`` condition False until the ClusterQueue has room (kubernetes-sigs/kueue
v0.19.2: pkg/controller/jobframework/workload_names.go, pkg/controller/constants/constants.go,
apis/kueue/v1beta2/workload_types.go). The messages are Kueue's own forms ("couldn't
assign flavors to pod set", "LocalQueue ... doesn't exist").
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

GROUP = "kueue.x-k8s.io"
VERSION = "v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
NO_QUOTA = (
    "couldn't assign flavors to pod set host: insufficient unused quota for nvidia.com/gpu in flavor "
    "default-flavor, 2 more needed"
)


def workload_for(jobset: dict[str, Any], queue: str, *, known: bool) -> dict[str, Any]:
    """The pending Workload Kueue makes for ``jobset`` in LocalQueue ``queue`` (``known``: it exists)."""
    metadata = jobset["metadata"]
    digest = hashlib.sha256(metadata["uid"].encode()).hexdigest()[:5]
    message = NO_QUOTA if known else f"LocalQueue {queue} doesn't exist"
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    pending = {"type": "QuotaReserved", "status": "False", "reason": "Pending" if known else "Inadmissible"}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Workload",
        "metadata": {
            "name": f"jobset-{metadata['name']}-{digest}",
            "namespace": metadata["namespace"],
            "labels": {JOB_UID_LABEL: metadata["uid"]},
            "ownerReferences": [
                {
                    "apiVersion": jobset["apiVersion"],
                    "kind": "JobSet",
                    "name": metadata["name"],
                    "uid": metadata["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "queueName": queue,
            "podSets": [
                {
                    "name": replicated["name"],
                    "count": replicated["template"]["spec"].get("parallelism", 1)
                    * replicated.get("replicas", 1),
                    "template": replicated["template"]["spec"]["template"],
                }
                for replicated in jobset["spec"]["replicatedJobs"]
            ],
        },
        "status": {"conditions": [{**pending, "message": message, "lastTransitionTime": now}]},
    }


def owned_by(workload: dict[str, Any], jobset: dict[str, Any]) -> bool:
    return workload["metadata"]["labels"].get(JOB_UID_LABEL) == jobset["metadata"]["uid"]
