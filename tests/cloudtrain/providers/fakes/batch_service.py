"""A loopback AWS Batch for SageMaker service jobs: the REST-JSON protocol on 127.0.0.1, for the real boto3 client.

moto 5.2.6 has no service jobs (moto/batch/responses.py has no submit_service_job), so
this speaks the four operations cloudtrain uses as AWS Batch does
(https://docs.aws.amazon.com/batch/latest/APIReference/API_SubmitServiceJob.html):

- every request is validated against botocore's ``batch`` model (``sagemaker_model.problems``);
- SubmitServiceJob queues the job RUNNABLE in a known queue (``queues``); ``hold`` keeps it
  there, as a queue does while its share is used up;
- the next DescribeServiceJob of a released job schedules it: the fake SageMaker creates the
  training job from ``serviceRequestPayload`` exactly as CreateTrainingJob would (validated
  by SageMaker's model, ``sagemaker_service``), and ``latestAttempt`` names it; from then on
  the status follows the training job's (InProgress: RUNNING; Completed: SUCCEEDED; Failed,
  Stopped: FAILED with "Received status from SageMaker:<FailureReason>");
- TerminateServiceJob ends the job (``isTerminated``) and stops its training job;
- ListServiceJobs filters by queue, ``jobStatus`` and the ``JOB_NAME`` filter, newest first.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from . import sagemaker_model
from .sagemaker_service import ACCOUNT, ApiError, FakeSageMaker, LoopbackService

OPERATIONS = {
    "/v1/submitservicejob": "SubmitServiceJob",
    "/v1/describeservicejob": "DescribeServiceJob",
    "/v1/terminateservicejob": "TerminateServiceJob",
    "/v1/listservicejobs": "ListServiceJobs",
}
TRAINING_STATES = {"InProgress": "RUNNING", "Stopping": "RUNNING", "Completed": "SUCCEEDED"}


@dataclass
class ServiceJob:
    arn: str
    request: dict[str, Any]
    created_ms: int
    status: str = "RUNNABLE"
    status_reason: str = "Waiting for capacity in the share"
    training_job: str = ""
    terminated: bool = False
    attempts: list[dict[str, Any]] = field(default_factory=list)


class FakeBatch(LoopbackService):
    """The queues, their jobs and the calls made; ``serve()`` puts it on a loopback port."""

    def __init__(self, sagemaker: FakeSageMaker, region: str = "us-east-1") -> None:
        self.sagemaker = sagemaker
        self.region = region
        self._lock = threading.Lock()
        self._server = None
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.queues = {"ml-training"}
            self.jobs: dict[str, ServiceJob] = {}
            self.calls: list[tuple[str, dict[str, Any]]] = []
            self.hold = False

    def release(self) -> None:
        """Let held jobs go: the next describe of each schedules it on SageMaker."""
        self.hold = False

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return _handler(self)

    def handle(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.calls.append((operation, params))
            problems = sagemaker_model.problems(operation, params, service="batch")
            if problems:
                raise ApiError("ClientException", "; ".join(problems))
            return getattr(self, f"_{operation}")(params)

    def _SubmitServiceJob(self, params: dict[str, Any]) -> dict[str, Any]:
        queue = params["jobQueue"].rsplit("/", 1)[-1]
        if queue not in self.queues:
            raise ApiError("ClientException", f"Job queue {params['jobQueue']} does not exist.")
        job_id = str(uuid.uuid4())
        arn = f"arn:aws:batch:{self.region}:{ACCOUNT}:service-job/{job_id}"
        self.jobs[arn] = ServiceJob(arn, params, int(time.time() * 1000))
        return {"jobArn": arn, "jobName": params["jobName"], "jobId": job_id}

    def _DescribeServiceJob(self, params: dict[str, Any]) -> dict[str, Any]:
        job = self._job(params["jobId"])
        if job.status == "RUNNABLE" and not self.hold and not job.terminated:
            self._schedule(job)
        elif job.training_job and not job.terminated:
            self._follow(job)
        return self._described(job)

    def _TerminateServiceJob(self, params: dict[str, Any]) -> dict[str, Any]:
        job = self._job(params["jobId"])
        if job.training_job and self.sagemaker.jobs[job.training_job].step[0] == "InProgress":
            self.sagemaker.handle("StopTrainingJob", {"TrainingJobName": job.training_job})
        job.terminated, job.status, job.status_reason = True, "FAILED", f"Terminated: {params['reason']}"
        return {}

    def _ListServiceJobs(self, params: dict[str, Any]) -> dict[str, Any]:
        names = [f["values"][0].lower() for f in params.get("filters", []) if f["name"] == "JOB_NAME"]
        queue = params.get("jobQueue", "").rsplit("/", 1)[-1]
        found = [
            job
            for job in self.jobs.values()
            if job.request["jobQueue"].rsplit("/", 1)[-1] == queue
            and (not names or job.request["jobName"].lower() == names[0])
            and (names or params.get("jobStatus") in (None, job.status))
        ]
        found.sort(key=lambda job: job.created_ms, reverse=True)
        return {"jobSummaryList": [self._summary(job) for job in found]}

    def _schedule(self, job: ServiceJob) -> None:
        """SageMaker takes the job: CreateTrainingJob with the payload as it is."""
        training = json.loads(job.request["serviceRequestPayload"])
        created = self.sagemaker.handle("CreateTrainingJob", training)
        job.training_job = training["TrainingJobName"]
        job.status, job.status_reason = "SCHEDULED", ""
        job.attempts.append(
            {"serviceResourceId": {"name": "TrainingJobArn", "value": created["TrainingJobArn"]}}
        )

    def _follow(self, job: ServiceJob) -> None:
        status = self.sagemaker.jobs[job.training_job].step[0]
        job.status = TRAINING_STATES.get(status, "FAILED")
        if job.status == "FAILED":
            reason = self.sagemaker.jobs[job.training_job].failure_reason or status
            job.status_reason = f"Received status from SageMaker:{reason}"

    def _described(self, job: ServiceJob) -> dict[str, Any]:
        described = {
            **self._summary(job),
            "jobQueue": job.request["jobQueue"],
            "serviceRequestPayload": job.request["serviceRequestPayload"],
            "retryStrategy": job.request.get("retryStrategy", {"attempts": 1}),
            "startedAt": job.created_ms,
            "attempts": job.attempts,
        }
        if job.attempts:
            described["latestAttempt"] = job.attempts[-1]
        return described

    def _summary(self, job: ServiceJob) -> dict[str, Any]:
        summary = {
            "jobArn": job.arn,
            "jobId": job.arn.rsplit("/", 1)[-1],
            "jobName": job.request["jobName"],
            "serviceJobType": job.request["serviceJobType"],
            "status": job.status,
            "createdAt": job.created_ms,
            "isTerminated": job.terminated,
        }
        return summary | ({"statusReason": job.status_reason} if job.status_reason else {})

    def _job(self, job_id: str) -> ServiceJob:
        found = self.jobs.get(job_id) or next(
            (j for j in self.jobs.values() if j.arn.endswith(f"/{job_id}")), None
        )
        if found is None:
            raise ApiError("ClientException", f"Service job {job_id} not found.")
        return found


def _handler(service: FakeBatch) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            try:
                operation = OPERATIONS.get(self.path)
                if operation is None:
                    raise ApiError("ClientException", f"Unknown path {self.path!r}", 404)
                self._send(200, service.handle(operation, body), "")
            except ApiError as exc:
                self._send(exc.status, {"message": exc.message}, exc.code)

        def _send(self, status: int, payload: dict[str, Any], error: str) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if error:  # REST-JSON errors name their type in this header
                self.send_header("x-amzn-ErrorType", error)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: tests read ``service.calls`` instead."""

    return Handler
