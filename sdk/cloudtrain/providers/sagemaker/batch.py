"""Queued training jobs: an AWS Batch service job that waits its turn, then runs the training job.

With ``capacity: queue`` the rendered request is AWS Batch's ``SubmitServiceJob`` with the
CreateTrainingJob request as its payload (``render.queued``). The queue holds the job
(SUBMITTED, PENDING, RUNNABLE) until its share and priority let it go, then SageMaker
creates the training job from the payload (SCHEDULED, STARTING, RUNNING) and
``DescribeServiceJob.latestAttempt`` names it; a capacity error sends it back to the queue
(``render.QUEUE_RETRIES``). Sources: botocore 1.44.18 batch 2016-08-10 (SubmitServiceJob,
DescribeServiceJob, TerminateServiceJob, ListServiceJobs);
https://docs.aws.amazon.com/batch/latest/userguide/service-jobs.html.

The job's ID is the service job's ARN. While it waits in the queue its status is
``queued`` with Batch's words; once its training job exists, that job's status, logs and
outputs are the answer. Submitting is idempotent: a service job of the same name in the
queue that has not failed is the job a repeated submit gets back.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cloudtrain.errors import ProviderError
from cloudtrain.provider.jobs import JobStatus, JobSummary, Stored, WaitsByPolling
from cloudtrain.providers.sagemaker import failures, outputs
from cloudtrain.providers.sagemaker.render import training_of
from cloudtrain.providers.sagemaker.states import queue_reason

if TYPE_CHECKING:
    from cloudtrain.bundle import Bundle
    from cloudtrain.outputs import Outputs
    from cloudtrain.planning import Plan
    from cloudtrain.progress import OnProgress
    from cloudtrain.providers.sagemaker.clients import AwsClients
    from cloudtrain.providers.sagemaker.job import SageMakerJob

ARN = re.compile(
    r"^arn:aws[a-z-]*:batch:(?P<region>[a-z0-9-]+):[0-9]{12}:service-job/(?P<id>[A-Za-z0-9_-]{1,128})\Z"
)
# Service job statuses (DescribeServiceJob.status): waiting in the queue, and the rest.
QUEUED = ("SUBMITTED", "PENDING", "RUNNABLE")
STATES = {
    "SUBMITTED": "queued",
    "PENDING": "queued",
    "RUNNABLE": "queued",
    "SCHEDULED": "pending",
    "STARTING": "pending",
    "RUNNING": "running",
    "SUCCEEDED": "succeeded",
    "FAILED": "failed",
}
# Batch's status reason for what SageMaker answered: "Received status from SageMaker:<FailureReason>"
# (sagemaker-python-sdk, src/sagemaker/aws_batch/constants.py).
SAGEMAKER_SAID = "Received status from SageMaker:"
CANCEL_REASON = "Cancelled through cloudtrain"


def owns(job_id: str) -> bool:
    """Whether ``job_id`` is an AWS Batch service job's ARN.

    >>> owns("arn:aws:batch:us-east-1:123456789012:service-job/0f6c7ad1-1111-2222-3333-444455556666")
    True
    """
    return ARN.match(job_id) is not None


def submit(
    plan: Plan, request: dict[str, Any], bundle: Bundle, aws: AwsClients, progress: OnProgress | None = None
) -> BatchJob:
    """Upload the code bundle (once) and put ``request`` (``render.queued``) in its queue, or return
    the service job an earlier submit put there.

    Raises:
        ProviderError: AWS Batch or S3 refused a call.
    """
    from cloudtrain.providers.sagemaker.job import upload_bundle

    upload_bundle(plan, bundle, aws, progress)
    earlier = _earlier(aws, request)
    if earlier is not None:
        job = BatchJob(earlier, aws, request=request)
        job.attached = True
        return job
    submitted = aws.call("batch", "submit_service_job", **request)
    return BatchJob(str(submitted["jobArn"]), aws, request=request)


def _earlier(aws: AwsClients, request: dict[str, Any]) -> str | None:
    """The newest service job of the same name in the queue that has not failed (ListServiceJobs, JOB_NAME filter)."""
    listed = aws.call(
        "batch",
        "list_service_jobs",
        jobQueue=request["jobQueue"],
        filters=[{"name": "JOB_NAME", "values": [request["jobName"]]}],
    )
    same = [
        job
        for job in listed.get("jobSummaryList", [])
        if job.get("jobName") == request["jobName"] and job.get("status") != "FAILED" and job.get("jobArn")
    ]
    return str(same[0]["jobArn"]) if same else None


def attach(job_id: str, clients: AwsClients | None = None) -> BatchJob:
    """The handle of a service job, from its ARN (the region comes from the ARN)."""
    from cloudtrain.providers.sagemaker.clients import AwsClients

    match = ARN.match(job_id)
    if match is None:
        raise ProviderError(
            f"{job_id!r} is not an AWS Batch service job ARN "
            "(arn:aws:batch:REGION:ACCOUNT:service-job/ID). Use the ID submit printed."
        )
    return BatchJob(job_id, clients or AwsClients(region=match["region"]))


def list_queued(aws: AwsClients, queue: str, *, limit: int | None) -> list[JobSummary]:
    """The jobs waiting in ``queue`` (SUBMITTED, PENDING, RUNNABLE), newest first.

    Once SageMaker created its training job, a job is listed as that training job.
    """
    found: list[JobSummary] = []
    for status in QUEUED:
        listed = aws.call("batch", "list_service_jobs", jobQueue=queue, jobStatus=status)
        found += [_queued_summary(job, queue) for job in listed.get("jobSummaryList", [])]
    found.sort(key=lambda job: job.created, reverse=True)
    return found[:limit] if limit is not None else found


def _queued_summary(job: dict[str, Any], queue: str) -> JobSummary:
    return JobSummary(
        id=str(job["jobArn"]),
        name=str(job["jobName"]),
        provider="sagemaker",
        state="queued",
        created=_instant(job.get("createdAt")) or datetime.now(UTC),
        shape=f"queued in {queue.rsplit('/', 1)[-1]}",
    )


class BatchJob(WaitsByPolling):
    """A training job queued in AWS Batch, by its service job's ARN."""

    provider = "sagemaker"
    attached = False  # True when submit found this job made by an earlier submit

    def __init__(self, arn: str, aws: AwsClients, *, request: dict[str, Any] | None = None) -> None:
        self.id = arn
        self.request = request
        self._aws = aws

    def describe(self) -> dict[str, Any]:
        """The raw DescribeServiceJob response."""
        return dict(self._aws.call("batch", "describe_service_job", jobId=self.id))

    def status(self) -> JobStatus:
        """Batch's status while the job waits in the queue; its training job's once SageMaker has it."""
        described = self.describe()
        batch = described.get("status", "SUBMITTED")
        training = self._training(described)
        if training is not None and batch not in QUEUED and not described.get("isTerminated"):
            return training.status()
        return _status(described)

    def training_job(self) -> SageMakerJob | None:
        """The training job SageMaker created for this service job; None while it waits in the queue."""
        return self._training(self.describe())

    def _training(self, described: dict[str, Any]) -> SageMakerJob | None:
        from cloudtrain.providers.sagemaker.job import SageMakerJob

        resource = (described.get("latestAttempt") or {}).get("serviceResourceId") or {}
        if resource.get("name") != "TrainingJobArn" or not resource.get("value"):
            return None
        return SageMakerJob(str(resource["value"]), self._aws)

    def cancel(self) -> None:
        """Stop its training job if it has one (marked as ours, ``SageMakerJob.cancel``), and end the service job.

        Raises:
            ProviderError: the job already ended (the message names its state).
        """
        now = self.status()
        if now.done:
            raise ProviderError(
                f"Could not cancel {self.id}: it already ended, {now.state} ({now.provider_state})."
            )
        training = self.training_job()
        if training is not None and not training.status().done:
            training.cancel()
        self._aws.call("batch", "terminate_service_job", jobId=self.id, reason=CANCEL_REASON)

    @property
    def outputs(self) -> Outputs:
        """Its training job's artifacts, under the training job's real name once it has one."""
        training = self.training_job()
        if training is not None:
            return training.outputs
        request = training_of(
            self.request or {"serviceRequestPayload": self.describe()["serviceRequestPayload"]}
        )
        return outputs.of_request(request, region=self.id.split(":")[3])

    def logs(
        self, follow: bool = False, *, since: datetime | None = None, tail: int | None = None
    ) -> Iterator[str]:
        """Its training job's logs; with ``follow``, once the queue let it go."""
        training = self.training_job()
        if training is None and follow:
            self.wait(poll_s=self._aws.log_poll_s, until=lambda now: not now.waiting)
            training = self.training_job()
        return training.logs(follow, since=since, tail=tail) if training is not None else iter(())

    def summary(self) -> JobSummary:
        """Its training job as ``list`` shows it, under this ID; while queued, what Batch says."""
        described = self.describe()
        training = self._training(described)
        if training is not None:
            return replace(training.summary(), id=self.id)
        return replace(
            _queued_summary(described, str(described.get("jobQueue", ""))), state=_status(described).state
        )

    def kept_backup(self) -> Stored | None:
        """Its training job's checkpoints in S3; None before it has one."""
        training = self.training_job()
        return training.kept_backup() if training is not None else None

    def _sleep(self, seconds: float) -> None:
        self._aws.sleep(seconds)

    def __repr__(self) -> str:
        return f"BatchJob(id={self.id!r})"


def _status(described: dict[str, Any]) -> JobStatus:
    """The neutral status of a DescribeServiceJob response for a job without a training job of its own."""
    batch = str(described.get("status", "SUBMITTED"))
    said = " ".join(str(described.get("statusReason", "")).split())
    if described.get("isTerminated"):
        return JobStatus("cancelled", batch, said)
    state = STATES.get(batch, "queued")
    if state == "queued":
        reason = queue_reason(str(described.get("jobQueue", "")), said)
        return JobStatus(
            state, batch, said, pending_since=_instant(described.get("createdAt")), pending_reason=reason
        )
    failure = failures.job_failure(said.removeprefix(SAGEMAKER_SAID)) if state == "failed" else None
    return JobStatus(state, batch, said, failure)


def _instant(millis: Any) -> datetime | None:
    """Batch's times are Unix milliseconds (DescribeServiceJob.createdAt)."""
    return datetime.fromtimestamp(millis / 1000, UTC) if isinstance(millis, int | float) else None
