"""The names of Vertex AI's jobs and states, as every module of the backend reads them.

A custom job's ID is its resource name, ``projects/P/locations/R/customJobs/N``: the
project and region of every call on it come from there. Its ``JobState`` maps onto
cloudtrain's neutral states.
"""

from __future__ import annotations

import re
from typing import Any

from cloudtrain.providers.vertex.clients import ApiCall

# \Z, not $, which also matches before a trailing newline; [0-9], not \d, which matches
# any Unicode digit.
PARENT = re.compile(r"\Aprojects/(?P<project>[^/\s]+)/locations/(?P<region>[^/\s]+)")
JOB_ID = re.compile(rf"{PARENT.pattern}/customJobs/(?P<id>[0-9]+)\Z")

# JobState name -> neutral state (aiplatform_v1 job_state.proto; google-cloud-aiplatform 2.7.0,
# google/cloud/aiplatform_v1/types/job_state.py).
STATES = {
    "JOB_STATE_UNSPECIFIED": "queued",
    "JOB_STATE_QUEUED": "queued",
    "JOB_STATE_PENDING": "queued",
    "JOB_STATE_PAUSED": "queued",
    "JOB_STATE_RUNNING": "running",
    "JOB_STATE_UPDATING": "running",
    "JOB_STATE_SUCCEEDED": "succeeded",
    "JOB_STATE_PARTIALLY_SUCCEEDED": "succeeded",
    "JOB_STATE_FAILED": "failed",
    "JOB_STATE_EXPIRED": "failed",
    "JOB_STATE_CANCELLING": "cancelling",
    "JOB_STATE_CANCELLED": "cancelled",
}
# Why a job that has not started waits: by its JobState, then (pending) by its Scheduling.strategy.
# JOB_STATE_QUEUED holds a job whose quota is in use until the quota is free
# (https://cloud.google.com/vertex-ai/docs/training/understanding-training-service); a pending
# FLEX_START job waits for Dynamic Workload Scheduler to free every machine at once
# (https://cloud.google.com/vertex-ai/docs/training/schedule-jobs-dws).
WAITING_REASONS = {
    ("JOB_STATE_QUEUED", ""): "queued for quota: Vertex AI holds the job until its quota is free",
    ("JOB_STATE_PENDING", "FLEX_START"): "waiting for flex-start capacity (Dynamic Workload Scheduler)",
    ("JOB_STATE_PENDING", "SPOT"): "waiting for spot capacity",
    ("JOB_STATE_PENDING", ""): "provisioning its machines",
    ("JOB_STATE_PAUSED", ""): "paused",
}
# An earlier job in these states is the answer to a repeated submit; others are retried.
REUSABLE_STATES = ("queued", "running", "succeeded")


def api_call(method: str, action: str, name: str) -> ApiCall:
    """``method`` on ``name``, a parent or a job, whose project and region it names."""
    match = PARENT.match(name)
    where = match.groupdict() if match else {}
    return ApiCall(
        action, method, project=where.get("project", ""), region=where.get("region", ""), resource=name
    )


def waiting_reason(state: str, strategy: str) -> str:
    """Why a job in JobState ``state`` with Scheduling.strategy ``strategy`` has not started.

    Example:
    >>> waiting_reason("JOB_STATE_PENDING", "FLEX_START")
    'waiting for flex-start capacity (Dynamic Workload Scheduler)'
    >>> waiting_reason("JOB_STATE_QUEUED", "SPOT")
    'queued for quota: Vertex AI holds the job until its quota is free'
    """
    return WAITING_REASONS.get((state, strategy)) or WAITING_REASONS.get((state, ""), "waiting to start")


def waiting_words(request: dict[str, Any]) -> dict[str, str]:
    """The state a rendered CustomJob ``request`` waits in before it starts, and why, as ``status`` says it.

    A flex-start or spot job waits PENDING for its capacity, any other QUEUED for its quota.
    """
    strategy = request["jobSpec"].get("scheduling", {}).get("strategy", "")
    state = "JOB_STATE_PENDING" if strategy in ("FLEX_START", "SPOT") else "JOB_STATE_QUEUED"
    return {"state": STATES[state], "provider_state": state, "reason": waiting_reason(state, strategy)}
