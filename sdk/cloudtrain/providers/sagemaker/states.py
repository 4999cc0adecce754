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
from dataclasses import replace
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
# Why a job that has not started (or lost its spot instances) waits, by secondary status
# (DescribeTrainingJob SecondaryStatus, botocore 1.44.18 sagemaker 2017-07-24: "Pending - The
# training job is waiting for compute capacity or compute resource provision").
WAITING_REASONS = {
    "Pending": "waiting for compute capacity",
    "Starting": "starting",
    "LaunchingMLInstances": "launching its instances",
    "PreparingTrainingStack": "preparing the training stack",
    "Downloading": "downloading its input data",
    "DownloadingTrainingImage": "downloading the training image",
    "Interrupted": "spot capacity was reclaimed; waiting for spot capacity to resume",
    "Restarting": "restarting from its last checkpoint",
}
# A job waiting Pending for capacity of its own kind: a training plan's jobs queue while the plan
# is Scheduled, not yet Active (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateTrainingPlan.html).
PENDING_FOR = {
    "TrainingPlanArn": "waiting for its training plan's capacity (a plan not yet active holds its jobs until it starts)",
    "EnableManagedSpotTraining": "waiting for spot capacity",
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
    status = JobStatus(state, f"{primary}/{secondary}".rstrip("/"), detail, failure)
    return with_waiting(status, described) if status.waiting else status


def with_waiting(status: JobStatus, described: dict[str, Any]) -> JobStatus:
    """``status`` of a job that waits, with since when and why.

    Since its creation, or, for a job that trained already (a spot interruption), since
    its latest transition.
    """
    secondary = described.get("SecondaryStatus", "")
    reason = WAITING_REASONS.get(secondary, "waiting to start")
    if secondary == "Pending":
        resources = described.get("ResourceConfig", {})
        found = [why for field, why in PENDING_FOR.items() if resources.get(field) or described.get(field)]
        reason = found[0] if found else reason
    transitions = described.get("SecondaryStatusTransitions") or []
    trained = described.get("TrainingStartTime") is not None and transitions
    since = transitions[-1]["StartTime"] if trained else described.get("CreationTime")
    return replace(status, pending_since=since, pending_reason=reason)


def _detail(described: dict[str, Any]) -> str:
    transitions = described.get("SecondaryStatusTransitions") or [{}]
    parts = [transitions[-1].get("StatusMessage", ""), described.get("FailureReason", "")]
    return " ".join(" ".join(part.split()) for part in parts if part)


def instance_shape(resources: dict[str, Any]) -> tuple[str, int]:
    """The instance type and count of a ResourceConfig: the one SageMaker selected, the one asked
    for, or (before SageMaker selected one of ``InstancePreferences``) the first preference.

    >>> instance_shape({"InstancePreferences": [{"InstanceType": "ml.g5.12xlarge", "InstanceCount": 2}]})
    ('ml.g5.12xlarge', 2)
    >>> instance_shape({"SelectedInstanceType": "ml.g6.12xlarge", "SelectedInstanceCount": 2,
    ...                 "InstancePreferences": [{"InstanceType": "ml.g5.12xlarge", "InstanceCount": 2}]})
    ('ml.g6.12xlarge', 2)
    """
    for kind, count in (("SelectedInstanceType", "SelectedInstanceCount"), ("InstanceType", "InstanceCount")):
        if resources.get(kind):
            return str(resources[kind]), int(resources.get(count, 0))
    first = (resources.get("InstancePreferences") or [{}])[0]
    return str(first.get("InstanceType", "")), int(first.get("InstanceCount", 0))


def waiting_words(training: dict[str, Any], queue: str | None = None) -> dict[str, str]:
    """The state a rendered job waits in before it starts, and why, as ``status`` says it.

    A queued job waits RUNNABLE in its AWS Batch queue (``batch``); any other Pending for
    its kind of capacity (``with_waiting``).
    """
    if queue is not None:
        return {"state": "queued", "provider_state": "RUNNABLE", "reason": queue_reason(queue)}
    status = with_waiting(
        JobStatus("pending", "InProgress/Pending"), {**training, "SecondaryStatus": "Pending"}
    )
    return {"state": status.state, "provider_state": status.provider_state, "reason": status.pending_reason}


def queue_reason(queue: str, said: str = "") -> str:
    """Why a job waits in AWS Batch job queue ``queue``; ``said``: Batch's own statusReason.

    >>> queue_reason("arn:aws:batch:us-east-1:123456789012:job-queue/ml-training")
    'waiting in AWS Batch job queue ml-training'
    """
    name = queue.rsplit("/", 1)[-1]
    return f"waiting in AWS Batch job queue {name}" + (f": {said}" if said else "")
