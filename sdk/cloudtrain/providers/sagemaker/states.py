"""SageMaker's status words in cloudtrain's neutral states, and the names of its training jobs.

Status words. ``DescribeTrainingJob`` gives a primary status (InProgress, Completed,
Failed, Stopping, Stopped) and a secondary one (Starting, Downloading, Training,
Interrupted, ...). Both map to the neutral states of ``cloudtrain.providers`` through the
tables below; ``provider_state`` keeps SageMaker's words (``InProgress/Training``) and the
detail carries the latest status message and the FailureReason. A spot interruption
(Interrupted, Restarting) is ``pending``: the job waits for capacity and resumes from its
checkpoints. ``Stopped`` is a success for some tools (aws/sagemaker-python-sdk#1937, apache/airflow#42423); here it
is ``cancelled`` only when the stop was asked for through cloudtrain (``cancel`` tags the
job first, so any later process can tell), and ``failed`` otherwise, e.g. after
MaxRuntimeExceeded.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from cloudtrain.provider.base import JobStatus
from cloudtrain.providers.sagemaker import failures

# ``cancel`` tags a job so before stopping it: a Stopped job with it was cancelled, not failed.
STOP_TAG = "cloudtrain:stop-requested"
# A training job's ID: its ARN, which names its region and its name.
ARN = re.compile(
    r"^arn:aws[a-z-]*:sagemaker:(?P<region>[a-z0-9-]+):[0-9]{12}:training-job/(?P<name>[A-Za-z0-9-]{1,63})\Z"
)

PRIMARY_STATES = {
    "Completed": "succeeded",
    "Failed": "failed",
    "Stopping": "cancelling",
    "Stopped": "cancelled",
    "Deleting": "failed",
}
# Only InProgress needs its secondary status to say whether the job is running yet.
IN_PROGRESS_STATES = {
    "Pending": "pending",
    "Starting": "pending",
    "LaunchingMLInstances": "pending",
    "PreparingTrainingStack": "pending",
    "Downloading": "pending",
    "DownloadingTrainingImage": "pending",
    "Interrupted": "pending",
    "Restarting": "pending",
    "Training": "running",
    "Uploading": "running",
    "Updating": "running",
}
# Why a Stopped job that nobody asked to stop ended, by secondary status.
STOPPED_REASONS = {
    "MaxRuntimeExceeded": "it ran past StoppingCondition.MaxRuntimeInSeconds (raise limits.max_runtime)",
    "MaxWaitTimeExceeded": "spot capacity did not come within MaxWaitTimeInSeconds (retry, or set resources.spot: false)",
}


def job_status(described: dict[str, Any], stop_requested: Callable[[], bool]) -> JobStatus:
    """The neutral status of a DescribeTrainingJob response.

    Args:
        described: the response.
        stop_requested: whether the stop was asked for through cloudtrain; called only
            for a Stopped job, because it costs a call.
    """
    primary = described["TrainingJobStatus"]
    secondary = described.get("SecondaryStatus", "")
    detail = _detail(described)
    # A status word newer than these tables reads as running: waiting on is safer than
    # declaring an unknown state finished.
    table = IN_PROGRESS_STATES if primary == "InProgress" else PRIMARY_STATES
    state = table.get(secondary if primary == "InProgress" else primary, "running")
    failure = failures.job_failure(described.get("FailureReason") or detail) if state == "failed" else None
    if primary == "Stopped" and (secondary in STOPPED_REASONS or not stop_requested()):
        reason = STOPPED_REASONS.get(secondary, "it was stopped outside cloudtrain")
        state, detail = "failed", f"Stopped because {reason}. {detail}".strip()
        failure = failures.stopped_failure(secondary, detail)
    return JobStatus(state, f"{primary}/{secondary}".rstrip("/"), detail, failure)


def _detail(described: dict[str, Any]) -> str:
    transitions = described.get("SecondaryStatusTransitions") or [{}]
    parts = [transitions[-1].get("StatusMessage", ""), described.get("FailureReason", "")]
    return " ".join(" ".join(part.split()) for part in parts if part)
