"""A loopback SageMaker: the AWS JSON 1.1 protocol on 127.0.0.1, for the real boto3 client.

moto's SageMaker is not faithful where the backend needs it to be (no StopTrainingJob,
Environment dropped, duplicate names accepted, jobs complete at once), so this speaks
the few operations cloudtrain uses, as SageMaker does:

- every request is validated against botocore's service model (``sagemaker_model``),
  maximum lengths, patterns and enums included, and refused with ValidationException;
- a second job with an existing name is refused with ResourceInUse;
- a job moves one step of its script per DescribeTrainingJob (no clocks in tests), by
  default Starting -> Downloading -> Training -> Completed; ``script`` sets another one,
  e.g. a spot interruption or a failure;
- StopTrainingJob moves a running job to Stopping, then Stopped;
- DescribeTrainingJob (and Search) report the training start, and once ended the end,
  TrainingTimeInSeconds and BillableTimeInSeconds (``FakeJob.training_s``/``billable_s``);
- Search finds training jobs by one ``Tags.<key>`` filter (``Exists``, or ``Equals`` a
  ``Value``, as API_Filter documents), newest first, paged;
- ``fail`` makes the next N calls of an operation fail (throttling, 5xx);
- ``reset`` empties it, so one server can serve a whole test session.

Hyperparameter tuning jobs: CreateHyperParameterTuningJob (validated by the model, names
unique), DescribeHyperParameterTuningJob (one step per call: the running training jobs
end and the next start, ``MaxParallelTrainingJobs`` at a time), ListTrainingJobsFor...,
StopHyperParameterTuningJob and Search. ``on_trial`` plays a training job's containers
and returns the log lines they printed; the fake reads the objective from them with the
objective's MetricDefinitions regex, as SageMaker does, the last match being the final value.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from . import sagemaker_model

ACCOUNT = "123456789012"
TERMINAL = ("Completed", "Failed", "Stopped")
Step = tuple[str, str, str]  # TrainingJobStatus, SecondaryStatus, StatusMessage

DEFAULT_SCRIPT: list[Step] = [
    ("InProgress", "Starting", "Launching requested ML instances"),
    ("InProgress", "Downloading", "Downloading input data"),
    ("InProgress", "Training", "Training image download completed. Training in progress."),
    ("Completed", "Completed", "Training job completed"),
]
SPOT_SCRIPT: list[Step] = [
    ("InProgress", "Starting", "Launching requested ML instances"),
    ("InProgress", "Training", "Training in progress."),
    ("InProgress", "Interrupted", "Training job interrupted: spot capacity reclaimed"),
    ("InProgress", "Restarting", "Restarting training job from the last checkpoint"),
    ("InProgress", "Training", "Training in progress."),
    ("Completed", "Completed", "Training job completed"),
]
STOP_SCRIPT: list[Step] = [
    ("Stopping", "Stopping", "Stopping the training job"),
    ("Stopped", "Stopped", "The training job was stopped"),
]


class ApiError(Exception):
    """An error response: HTTP status, AWS error code and message."""

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


@dataclass
class FakeJob:
    arn: str
    request: dict[str, Any]
    script: list[Step]
    failure_reason: str = ""
    position: int = -1
    created: float = field(default_factory=time.time)
    transitions: list[dict[str, Any]] = field(default_factory=list)
    training_s: int | None = None
    """TrainingTimeInSeconds once ended; None: the seconds from its training start to its end."""
    billable_s: int | None = None
    """BillableTimeInSeconds once ended; None: the training time (no spot saving)."""

    @property
    def step(self) -> Step:
        return self.script[max(self.position, 0)]

    def advance(self) -> None:
        if self.position < len(self.script) - 1:
            self.position += 1
            _, secondary, message = self.step
            self.transitions.append({"Status": secondary, "StartTime": time.time(), "StatusMessage": message})


class LoopbackService:
    """A fake AWS service on a loopback port: ``serve()`` starts it, ``shutdown()`` stops it; ``calls`` recorded."""

    calls: list[tuple[str, dict[str, Any]]]
    _server: ThreadingHTTPServer | None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    def count(self, operation: str) -> int:
        return sum(1 for name, _ in self.calls if name == operation)

    def serve(self) -> str:
        """Start serving on a free loopback port; returns the endpoint URL."""
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def shutdown(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


class FakeSageMaker(LoopbackService):
    """The service state and its operations; ``serve()`` puts it on a loopback port."""

    def __init__(self, region: str = "us-east-1") -> None:
        self.region = region
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self.reset()

    def reset(self) -> None:
        """Forget every job, tag, call, script and planned failure; the server keeps serving."""
        with self._lock:
            self.jobs: dict[str, FakeJob] = {}
            self.tags: dict[str, list[dict[str, str]]] = {}
            self.calls: list[tuple[str, dict[str, Any]]] = []
            self.next_script: list[Step] = list(DEFAULT_SCRIPT)
            self.next_failure_reason = ""
            self._failures: dict[str, list[tuple[str, int, str]]] = {}
            self.on_create: Callable[[dict[str, Any]], None] | None = None
            self.tuning_jobs: dict[str, dict[str, Any]] = {}
            self.on_trial: Callable[[dict[str, Any], dict[str, str]], list[str]] | None = None
            # Training plans on sale: instance type -> dollars per instance-hour of each offering.
            self.plan_rates: dict[str, list[float]] = {"ml.p4d.24xlarge": [19.5, 22.0]}

    # --- test controls -------------------------------------------------------------

    def script(self, steps: list[Step], failure_reason: str = "") -> None:
        """The life cycle of jobs created from now on."""
        self.next_script, self.next_failure_reason = list(steps), failure_reason

    def fail(self, operation: str, code: str, times: int = 1, status: int = 400, message: str = "") -> None:
        """Answer the next ``times`` calls of ``operation`` with error ``code`` (and AWS's ``message``)."""
        self._failures.setdefault(operation, []).extend(
            [(code, status, message or f"Injected {code}")] * times
        )

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return _handler(self)

    def handle(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.calls.append((operation, params))
            pending = self._failures.get(operation)
            if pending:
                code, status, message = pending.pop(0)
                raise ApiError(code, message, status)
            problems = sagemaker_model.problems(operation, params)
            if problems:
                raise ApiError("ValidationException", "; ".join(problems))
            handler = getattr(self, f"_{_snake(operation)}", None)
            if handler is None:
                raise ApiError("UnknownOperationException", f"{operation} is not supported by the fake")
            return handler(params)

    # --- operations ----------------------------------------------------------------

    def _create_training_job(self, params: dict[str, Any]) -> dict[str, Any]:
        name = params["TrainingJobName"]
        arn = f"arn:aws:sagemaker:{self.region}:{ACCOUNT}:training-job/{name.lower()}"
        if name in self.jobs:
            raise ApiError(
                "ResourceInUse",
                f"Training job names must be unique within an AWS account and region, and a training "
                f"job with this name already exists ({arn})",
            )
        self.jobs[name] = FakeJob(arn, params, list(self.next_script), self.next_failure_reason)
        self.tags[arn] = list(params.get("Tags", []))
        if self.on_create is not None:  # the test plays the job's containers (writes its outputs)
            self.on_create(params)
        return {"TrainingJobArn": arn}

    def _describe_training_job(self, params: dict[str, Any]) -> dict[str, Any]:
        job = self._job(params["TrainingJobName"])
        job.advance()
        return _described(job)

    def _stop_training_job(self, params: dict[str, Any]) -> dict[str, Any]:
        job = self._job(params["TrainingJobName"])
        status = job.step[0]
        if status in TERMINAL or status == "Stopping":
            raise ApiError(
                "ValidationException", f"The training job is in status {status} and cannot be stopped."
            )
        job.script, job.position = [*job.script[: job.position + 1], *STOP_SCRIPT], job.position
        return {}

    def _list_training_jobs(self, params: dict[str, Any]) -> dict[str, Any]:
        contains = params.get("NameContains", "")
        summaries = [
            {
                "TrainingJobName": name,
                "TrainingJobArn": job.arn,
                "CreationTime": job.created,
                "TrainingJobStatus": job.step[0],
            }
            for name, job in self.jobs.items()
            if contains in name and params.get("StatusEquals", job.step[0]) == job.step[0]
        ]
        return {"TrainingJobSummaries": summaries}

    def _search(self, params: dict[str, Any]) -> dict[str, Any]:
        """Training jobs by one ``Tags.<key>`` Exists or Equals filter, sorted by CreationTime, paged; moves no job."""
        expression = params.get("SearchExpression", {})
        filters = expression.get("Filters", [])
        supported = (
            params["Resource"] in ("TrainingJob", "HyperParameterTuningJob")
            and set(expression) == {"Filters"}
            and len(filters) == 1
            and filters[0]["Name"].startswith("Tags.")
            and filters[0].get("Operator") in ("Exists", "Equals")
            and params.get("SortBy", "CreationTime") == "CreationTime"
        )
        if not supported:
            raise ApiError("ValidationException", f"The fake cannot search with {params}")
        key = filters[0]["Name"].removeprefix("Tags.")
        value = filters[0].get("Value") if filters[0]["Operator"] == "Equals" else None

        def tagged(tags: list[dict[str, str]]) -> bool:
            return any(tag["Key"] == key and value in (None, tag["Value"]) for tag in tags)

        if params["Resource"] == "HyperParameterTuningJob":
            tuned = [j for j in self.tuning_jobs.values() if tagged(self.tags[j["arn"]])]
            tuned.sort(key=lambda j: j["created"], reverse=True)
            results = [
                {"HyperParameterTuningJob": self._tuning_described(j) | {"Tags": self.tags[j["arn"]]}}
                for j in tuned
            ]
            return {"Results": results[: params.get("MaxResults", 10)]}
        found = [job for job in self.jobs.values() if tagged(self.tags[job.arn])]
        found.sort(key=lambda job: job.created, reverse=params.get("SortOrder") != "Ascending")
        start, size = int(params.get("NextToken") or 0), params.get("MaxResults", 10)
        page = [
            {"TrainingJob": _described(job) | {"Tags": self.tags[job.arn]}}
            for job in found[start : start + size]
        ]
        more = {"NextToken": str(start + size)} if start + size < len(found) else {}
        return {"Results": page, **more}

    def _create_hyper_parameter_tuning_job(self, params: dict[str, Any]) -> dict[str, Any]:
        name = params["HyperParameterTuningJobName"]
        arn = f"arn:aws:sagemaker:{self.region}:{ACCOUNT}:hyper-parameter-tuning-job/{name.lower()}"
        if name in self.tuning_jobs:
            raise ApiError("ResourceInUse", f"Hyperparameter tuning job {arn} already exists")
        self.tuning_jobs[name] = {
            "request": params, "arn": arn, "status": "InProgress", "created": time.time(), "trials": [], "ended": None,
        }  # fmt: skip
        self.tags[arn] = list(params.get("Tags", []))
        return {"HyperParameterTuningJobArn": arn}

    def _describe_hyper_parameter_tuning_job(self, params: dict[str, Any]) -> dict[str, Any]:
        job = self._tuning(params["HyperParameterTuningJobName"])
        if job["status"] == "InProgress":
            self._step_trials(job)
        elif job["status"] == "Stopping":
            job["status"], job["ended"] = "Stopped", time.time()
            for trial in job["trials"]:
                if trial["TrainingJobStatus"] == "InProgress":
                    trial |= {"TrainingJobStatus": "Stopped", "TrainingEndTime": time.time()}
        return self._tuning_described(job)

    def _step_trials(self, job: dict[str, Any]) -> None:
        request = job["request"]
        limits = request["HyperParameterTuningJobConfig"]["ResourceLimits"]
        for trial in job["trials"]:
            if trial["TrainingJobStatus"] == "InProgress":
                self._end_trial(request, trial)
        total, parallel = limits.get("MaxNumberOfTrainingJobs", 1), limits["MaxParallelTrainingJobs"]
        if len(job["trials"]) >= total:
            job["status"], job["ended"] = "Completed", time.time()
            return
        while (
            len(job["trials"]) < total
            and sum(t["TrainingJobStatus"] == "InProgress" for t in job["trials"]) < parallel
        ):
            number = len(job["trials"]) + 1
            name = f"{request['HyperParameterTuningJobName'][:32]}-{number:03d}-{number:08x}"
            now = time.time()
            job["trials"].append(
                {
                    "TrainingJobName": name,
                    "TrainingJobArn": f"arn:aws:sagemaker:{self.region}:{ACCOUNT}:training-job/{name}",
                    "TuningJobName": request["HyperParameterTuningJobName"],
                    "CreationTime": now + number / 1000,
                    "TrainingStartTime": now,
                    "TrainingJobStatus": "InProgress",
                    "TunedHyperParameters": _first_values(
                        request["HyperParameterTuningJobConfig"]["ParameterRanges"]
                    ),
                }
            )

    def _end_trial(self, request: dict[str, Any], trial: dict[str, Any]) -> None:
        objective = request["HyperParameterTuningJobConfig"]["HyperParameterTuningJobObjective"]
        [definition] = [
            d for d in request["TrainingJobDefinition"]["AlgorithmSpecification"]["MetricDefinitions"]
            if d["Name"] == objective["MetricName"]
        ]  # fmt: skip
        lines = (
            self.on_trial(request["TrainingJobDefinition"], trial["TunedHyperParameters"])
            if self.on_trial
            else []
        )
        values = [float(m.group(1)) for line in lines if (m := re.search(definition["Regex"], line))]
        trial |= {"TrainingEndTime": time.time(), "TrainingJobStatus": "Completed" if values else "Failed"}
        if values:
            trial["FinalHyperParameterTuningJobObjectiveMetric"] = {
                "MetricName": objective["MetricName"],
                "Value": values[-1],
            }
            trial["ObjectiveStatus"] = "Succeeded"
        else:
            trial |= {
                "ObjectiveStatus": "Failed",
                "FailureReason": "The objective metric was not found in the logs.",
            }

    def _tuning_described(self, job: dict[str, Any]) -> dict[str, Any]:
        request = job["request"]
        counters = {
            "Completed": 0,
            "InProgress": 0,
            "RetryableError": 0,
            "NonRetryableError": 0,
            "Stopped": 0,
        }
        for trial in job["trials"]:
            status = trial["TrainingJobStatus"]
            counters["NonRetryableError" if status == "Failed" else status] += 1
        described = {k: v for k, v in request.items() if k != "Tags"} | {
            "HyperParameterTuningJobArn": job["arn"],
            "HyperParameterTuningJobStatus": job["status"],
            "CreationTime": job["created"],
            "TrainingJobStatusCounters": counters,
            "ObjectiveStatusCounters": {"Succeeded": 0, "Pending": 0, "Failed": 0},
        }
        if job["ended"] is not None:
            described["HyperParameterTuningEndTime"] = job["ended"]
        done = [t for t in job["trials"] if "FinalHyperParameterTuningJobObjectiveMetric" in t]
        if done:
            pick = (
                max
                if request["HyperParameterTuningJobConfig"]["HyperParameterTuningJobObjective"]["Type"]
                == "Maximize"
                else min
            )
            described["BestTrainingJob"] = pick(
                done, key=lambda t: t["FinalHyperParameterTuningJobObjectiveMetric"]["Value"]
            )
        return described

    def _list_training_jobs_for_hyper_parameter_tuning_job(self, params: dict[str, Any]) -> dict[str, Any]:
        job = self._tuning(params["HyperParameterTuningJobName"])
        return {"TrainingJobSummaries": sorted(job["trials"], key=lambda t: t["CreationTime"])}

    def _stop_hyper_parameter_tuning_job(self, params: dict[str, Any]) -> dict[str, Any]:
        job = self._tuning(params["HyperParameterTuningJobName"])
        if job["status"] != "InProgress":
            raise ApiError(
                "ValidationException", f"The tuning job is in status {job['status']} and cannot be stopped."
            )
        job["status"] = "Stopping"
        return {}

    def _tuning(self, name: str) -> dict[str, Any]:
        if name not in self.tuning_jobs:
            raise ApiError("ResourceNotFound", f"Amazon SageMaker can't find a tuning job with name {name}")
        return self.tuning_jobs[name]

    def _search_training_plan_offerings(self, params: dict[str, Any]) -> dict[str, Any]:
        """Offerings of ``plan_rates`` for the type, count and hours asked, starting tomorrow at midnight UTC."""
        hours, count = params.get("DurationHours", 24), params.get("InstanceCount", 1)
        start = (int(time.time()) // 86400 + 1) * 86400
        return {
            "TrainingPlanOfferings": [
                {
                    "TrainingPlanOfferingId": f"tpo-{params['InstanceType']}-{index}",
                    "TargetResources": params.get("TargetResources", ["training-job"]),
                    "DurationHours": hours,
                    "DurationMinutes": 0,
                    "UpfrontFee": f"{rate * count * hours:.2f}",
                    "CurrencyCode": "USD",
                    "ReservedCapacityOfferings": [
                        {
                            "InstanceType": params["InstanceType"],
                            "InstanceCount": count,
                            "StartTime": start,
                            "EndTime": start + hours * 3600,
                        }
                    ],
                }
                for index, rate in enumerate(self.plan_rates.get(params.get("InstanceType", ""), []))
            ]
        }

    def _add_tags(self, params: dict[str, Any]) -> dict[str, Any]:
        self._arn(params["ResourceArn"])
        self.tags[params["ResourceArn"]] += params["Tags"]
        return {"Tags": params["Tags"]}

    def _list_tags(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"Tags": self.tags[self._arn(params["ResourceArn"])]}

    def _job(self, name: str) -> FakeJob:
        if name not in self.jobs:
            raise ApiError("ValidationException", "Requested resource not found.")
        return self.jobs[name]

    def _arn(self, arn: str) -> str:
        if arn not in self.tags:
            raise ApiError("ResourceNotFound", f"Resource {arn} not found.")
        return arn


def _described(job: FakeJob) -> dict[str, Any]:
    """The DescribeTrainingJob answer for ``job`` where it is now.

    TrainingStartTime is when it first reached Training; once it has ended, TrainingEndTime,
    TrainingTimeInSeconds and BillableTimeInSeconds are set, as SageMaker sets them.
    """
    status, secondary, _ = job.step
    described = {k: v for k, v in job.request.items() if k != "Tags"}
    described |= {
        "TrainingJobArn": job.arn,
        "TrainingJobStatus": status,
        "SecondaryStatus": secondary,
        "SecondaryStatusTransitions": job.transitions,
        "CreationTime": job.created,
    }
    started = next((t["StartTime"] for t in job.transitions if t["Status"] == "Training"), None)
    if started is not None:
        described["TrainingStartTime"] = started
    if status in TERMINAL:
        ended = job.transitions[-1]["StartTime"] if job.transitions else job.created
        training = job.training_s if job.training_s is not None else int(ended - (started or ended))
        described |= {
            "TrainingEndTime": ended,
            "TrainingTimeInSeconds": training,
            "BillableTimeInSeconds": job.billable_s if job.billable_s is not None else training,
        }
    if status == "Failed" and job.failure_reason:
        described["FailureReason"] = job.failure_reason
    if "MlflowConfig" in job.request:  # the run SageMaker made on the managed MLflow (API_MlflowDetails)
        described["MlflowDetails"] = {
            "MlflowExperimentId": "1",
            "MlflowRunId": f"run-of-{job.request['TrainingJobName']}",
        }
    return described


def _first_values(ranges: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    """Each range's lower bound or first value, as the tuner's first suggestion."""
    values = {
        r["Name"]: r["MinValue"]
        for kind in ("IntegerParameterRanges", "ContinuousParameterRanges")
        for r in ranges.get(kind, [])
    }
    return values | {r["Name"]: r["Values"][0] for r in ranges.get("CategoricalParameterRanges", [])}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _handler(service: FakeSageMaker) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            target = self.headers.get("X-Amz-Target", "")
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            try:
                if not target.startswith("SageMaker."):
                    raise ApiError("UnknownOperationException", f"Unknown target {target!r}")
                self._send(200, service.handle(target.removeprefix("SageMaker."), body))
            except ApiError as exc:
                self._send(exc.status, {"__type": exc.code, "message": exc.message})

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/x-amz-json-1.1")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("x-amzn-RequestId", "00000000-0000-0000-0000-000000000000")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: tests read ``service.calls`` instead."""

    return Handler
