"""What Kueue says of a queued JobSet: its Workload's conditions, in words.

Kueue admits a JobSet labelled ``kueue.x-k8s.io/queue-name`` through a Workload it makes
for it (labelled ``kueue.x-k8s.io/job-uid`` with the JobSet's uid): the Workload's
``QuotaReserved`` condition says whether the ClusterQueue reserved its quota and, if not,
why (reason WaitingForQuota, ExceedsMaxQuota, Misconfigured...); ``Admitted`` whether its
admission checks (a ProvisioningRequest) passed. Sources: kubernetes-sigs/kueue v0.19.2,
apis/kueue/v1beta2/workload_types.go (the condition types and reasons) and
pkg/controller/constants/constants.go (the labels); the CRDs the tests validate against
are vendored beside the fake API server.

Example:
>>> pending = {"type": "QuotaReserved", "status": "False", "reason": "Pending",
...            "message": "couldn't assign flavors to pod set host: insufficient quota for nvidia.com/gpu"}
>>> queued_reason("team-a", [{"status": {"conditions": [pending]}}])
"suspended in Kueue queue team-a: couldn't assign flavors to pod set host: insufficient quota for nvidia.com/gpu"
"""

from __future__ import annotations

from typing import Any

GROUP = "kueue.x-k8s.io"
VERSION = "v1beta2"
WORKLOADS = "workloads"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
# The conditions that say why a Workload is not admitted yet, the first that is False wins.
WAITING_CONDITIONS = ("QuotaReserved", "Admitted")


def queued_reason(queue: str, workloads: list[dict[str, Any]] | None) -> str:
    """Why a JobSet suspended in Kueue queue ``queue`` waits, from its Workloads (None: Kueue unreadable)."""
    where = suspended_in(queue)
    if workloads is None:
        return f"{where} (Kueue's Workloads cannot be read here: is Kueue installed?)"
    if not workloads:
        return f"{where}; Kueue has made no Workload for it yet (does LocalQueue {queue} exist?)"
    conditions = {c.get("type"): c for c in workloads[0].get("status", {}).get("conditions", [])}
    for kind in WAITING_CONDITIONS:
        condition = conditions.get(kind)
        if condition is not None and condition.get("status") == "False" and condition.get("message"):
            return f"{where}: {' '.join(str(condition['message']).split())}"
    return where


def suspended_in(queue: str) -> str:
    """Where a queued JobSet waits, in words: ``suspended in Kueue queue team-a``."""
    return f"suspended in Kueue queue {queue}"
