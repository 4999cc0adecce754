"""A submitted SageMaker training job: status, logs, stop and wait, through boto3.

Status words. ``DescribeTrainingJob`` gives a primary status (InProgress, Completed,
Failed, Stopping, Stopped) and a secondary one (Starting, Downloading, Training,
Interrupted, ...). Both map to the neutral states of ``cloudtrain.providers`` through the
tables below; ``provider_state`` keeps SageMaker's words (``InProgress/Training``) and the
detail carries the latest status message and the FailureReason. A spot interruption
(Interrupted, Restarting) is ``pending``: the job waits for capacity and resumes from its
checkpoints. ``Stopped`` is a success for some tools (reference/sagemaker.md §7); here it
is ``cancelled`` only when the stop was asked for through cloudtrain (``cancel`` tags the
job first, so any later process can tell), and ``failed`` otherwise, e.g. after
MaxRuntimeExceeded.

Logs. SageMaker writes each host's output to CloudWatch Logs, group
``/aws/sagemaker/TrainingJobs``, stream ``<job>/algo-<N>-<epoch>`` (a restarted host gets
a new stream). Lines are prefixed with SageMaker's host name, ``[algo-1]``, the name the
console and resourceconfig.json use; the runtime makes the first host the chief.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from cloudtrain.providers import JobStatus, poll_until_done
from cloudtrain.providers.sagemaker.clients import AwsCallError, AwsClients

LOG_GROUP = "/aws/sagemaker/TrainingJobs"
STOP_TAG = "cloudtrain:stop-requested"

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
_STREAM_HOST = re.compile(r"/(?P<host>.+?)(-\d+)?$")


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
    if primary == "Stopped" and (secondary in STOPPED_REASONS or not stop_requested()):
        reason = STOPPED_REASONS.get(secondary, "it was stopped outside cloudtrain")
        state, detail = "failed", f"Stopped because {reason}. {detail}".strip()
    return JobStatus(state=state, provider_state=f"{primary}/{secondary}".rstrip("/"), detail=detail)


def _detail(described: dict[str, Any]) -> str:
    transitions = described.get("SecondaryStatusTransitions") or [{}]
    parts = [transitions[-1].get("StatusMessage", ""), described.get("FailureReason", "")]
    return " ".join(" ".join(part.split()) for part in parts if part)


class SageMakerJob:
    """A SageMaker training job, by ARN. Every call goes through ``AwsClients.call``."""

    provider = "sagemaker"

    def __init__(self, arn: str, aws: AwsClients, *, request: dict[str, Any] | None = None) -> None:
        self.id = arn
        self.name = arn.rsplit("/", 1)[-1]
        self.request = request
        self._aws = aws

    def describe(self) -> dict[str, Any]:
        """The raw DescribeTrainingJob response."""
        return dict(self._aws.call("sagemaker", "describe_training_job", TrainingJobName=self.name))

    def status(self) -> JobStatus:
        return job_status(self.describe(), self._stop_requested)

    def cancel(self) -> None:
        """Stop the job (SIGTERM, then 120 s to save a checkpoint), marking the stop as ours.

        The tag comes first so no reader sees Stopped without it. Whoever could submit can
        tag: creating a job with Tags already needs sagemaker:AddTags.
        """
        tag = {"Key": STOP_TAG, "Value": "true"}
        self._aws.call("sagemaker", "add_tags", ResourceArn=self.id, Tags=[tag])
        self._aws.call("sagemaker", "stop_training_job", TrainingJobName=self.name)

    def wait(self, poll_s: float = 30.0, on_status: Callable[[JobStatus], None] | None = None) -> JobStatus:
        """Poll until the job ends; ``on_status`` sees every change of status."""
        return poll_until_done(self.status, self._aws.sleep, poll_s, on_status)

    def logs(self, follow: bool = False) -> Iterator[str]:
        """The job's log lines so far, ``[algo-N] message``; with ``follow``, until it ends."""
        reader = _LogReader(self._aws, self.name)
        while True:
            done = not follow or self.status().done
            yield from reader.read_new()
            if done:
                return
            self._aws.sleep(self._aws.log_poll_s)

    def _stop_requested(self) -> bool:
        tags = self._aws.call("sagemaker", "list_tags", ResourceArn=self.id).get("Tags", [])
        return any(tag["Key"] == STOP_TAG for tag in tags)

    def __repr__(self) -> str:
        return f"SageMakerJob(id={self.id!r})"


class _LogReader:
    """Reads each of the job's log streams from where the last read stopped."""

    def __init__(self, aws: AwsClients, job_name: str) -> None:
        self._aws = aws
        self._prefix = f"{job_name}/"
        self._tokens: dict[str, str | None] = {}

    def read_new(self) -> list[str]:
        """New lines of every stream, merged by timestamp (stable within a stream)."""
        events = [event for stream in self._streams() for event in self._read(stream)]
        events.sort(key=lambda event: event[0])
        return [line for _, line in events]

    def _streams(self) -> list[str]:
        names: list[str] = []
        kwargs: dict[str, Any] = {"logGroupName": LOG_GROUP, "logStreamNamePrefix": self._prefix}
        while True:
            try:
                page = self._aws.call("logs", "describe_log_streams", **kwargs)
            except AwsCallError as exc:
                if exc.code == "ResourceNotFoundException":  # no job has logged in this region yet
                    return names
                raise
            names += [stream["logStreamName"] for stream in page.get("logStreams", [])]
            if not page.get("nextToken"):
                return names
            kwargs["nextToken"] = page["nextToken"]

    def _read(self, stream: str) -> list[tuple[int, str]]:
        host = stream_host(stream)
        events: list[tuple[int, str]] = []
        while True:
            token = self._tokens.get(stream)
            kwargs = {"nextToken": token} if token else {}
            page = self._aws.call(
                "logs",
                "get_log_events",
                logGroupName=LOG_GROUP,
                logStreamName=stream,
                startFromHead=True,
                **kwargs,
            )
            events += [(event["timestamp"], f"[{host}] {event['message']}") for event in page["events"]]
            self._tokens[stream] = page.get("nextForwardToken")
            # The forward token stays the same once the end of the stream is reached.
            if not page["events"] or page.get("nextForwardToken") == token:
                return events


def stream_host(stream: str) -> str:
    """``job/algo-2-1712345678`` -> ``algo-2``."""
    match = _STREAM_HOST.search(stream)
    return match["host"] if match else stream
