"""The names of Vertex AI's jobs and states, as every module of the backend reads them.

A custom job's ID is its resource name, ``projects/P/locations/R/customJobs/N``: the
project and region of every call on it come from there. Its ``JobState`` maps onto
cloudtrain's neutral states.
"""

from __future__ import annotations

import re

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
# An earlier job in these states is the answer to a repeated submit; others are retried.
REUSABLE_STATES = ("queued", "running", "succeeded")


def api_call(method: str, action: str, name: str) -> ApiCall:
    """``method`` on ``name``, a parent or a job, whose project and region it names."""
    match = PARENT.match(name)
    where = match.groupdict() if match else {}
    return ApiCall(
        action, method, project=where.get("project", ""), region=where.get("region", ""), resource=name
    )
