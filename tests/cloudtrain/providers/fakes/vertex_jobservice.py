"""A fake Vertex AI JobService: a real gRPC server on 127.0.0.1 speaking aiplatform_v1.

The real ``JobServiceClient`` talks to it over an insecure channel, so requests and
responses go through the real protobuf (de)serialisation. It implements the four
methods the Vertex backend uses (create, get, list with a label filter, cancel),
checks what the real service checks that a test can see (pool 0 has one replica,
filters are valid), records every request, moves jobs through a scripted list of
states (one step per ``GetCustomJob``, setting ``start_time`` on the first running
state and ``end_time`` on an ended one, as the service does), and fails on demand with a given status,
before doing what was asked (``fail``) or after it (``lose_response``). A failure can
carry Google's message and an ``ErrorInfo`` reason (``SERVICE_DISABLED``), sent as the
real service sends them: in the rich status the client's api_core reads. ``reset``
empties it, so one server can serve a whole test session.

Hyperparameter tuning jobs (create, get, list with a label filter, cancel) move through
the same states. When one starts running, the fake starts ``parallelTrialCount`` trials
(then the next ones as trials end) whose parameters are each parameter's lower bound or
first value, each backed by a CustomJob name; ``on_trial`` plays a trial's container and
returns the ``cloudml-hypertune`` metrics file it wrote, which the fake reads as Vertex
does: each JSON line's value of the study's metric, at its ``global_step``, becomes a
measurement, the last one the final measurement once the trial succeeds.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import grpc
from google.cloud import aiplatform_v1
from google.protobuf import any_pb2, empty_pb2, timestamp_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

SERVICE = "google.cloud.aiplatform.v1.JobService"
CREATES = ("CreateCustomJob", "CreateHyperparameterTuningJob")
# labels.KEY="VALUE" (equality) or labels.KEY:* (the key exists), as ListCustomJobsRequest.filter documents.
LABEL_FILTER = re.compile(r'\Alabels\.([a-z][a-z0-9_-]*)(?:="([a-z0-9_-]*)"|(:\*))\Z')
# state=JOB_STATE_X, alone or joined by OR (ListCustomJobsRequest.filter: "state supports = and !=").
STATE_FILTER = re.compile(r"state=JOB_STATE_[A-Z_]+(?: OR state=JOB_STATE_[A-Z_]+)*")
DEFAULT_STATES = ("JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED")
ENDED_STATES = (
    "JOB_STATE_SUCCEEDED",
    "JOB_STATE_PARTIALLY_SUCCEEDED",
    "JOB_STATE_FAILED",
    "JOB_STATE_CANCELLED",
    "JOB_STATE_EXPIRED",
)
PROJECT_NUMBER = "123456789012"


@dataclass(frozen=True)
class Failure:
    """One planned failure: a status code, Google's message, and an optional ErrorInfo reason."""

    code: grpc.StatusCode
    message: str = ""
    reason: str = ""

    def abort(self, context: grpc.ServicerContext, default_message: str) -> None:
        """End the call with this failure, in the rich status form (google.rpc.Status)."""
        status = status_pb2.Status(code=self.code.value[0], message=self.message or default_message)
        if self.reason:
            info = error_details_pb2.ErrorInfo(
                reason=self.reason,
                domain="googleapis.com",
                metadata={"service": "aiplatform.googleapis.com", "consumer": f"projects/{PROJECT_NUMBER}"},
            )
            detail = any_pb2.Any()
            detail.Pack(info)
            status.details.append(detail)
        context.abort_with_status(rpc_status.to_status(status))


@dataclass
class FakeJobService:
    """The service's state; ``serve()`` serves it on a free loopback port."""

    states: tuple[str, ...] = DEFAULT_STATES
    jobs: dict[str, aiplatform_v1.CustomJob] = field(default_factory=dict)
    requests: list[tuple[str, Any]] = field(default_factory=list)
    failures: dict[str, deque[Failure]] = field(default_factory=lambda: defaultdict(deque))
    lost: dict[str, deque[grpc.StatusCode]] = field(default_factory=lambda: defaultdict(deque))
    on_create: Callable[[aiplatform_v1.CustomJob], None] | None = None
    """Called with each created job: a test playing its containers writes its outputs there."""
    tuning_jobs: dict[str, aiplatform_v1.HyperparameterTuningJob] = field(default_factory=dict)
    on_trial: Callable[[aiplatform_v1.HyperparameterTuningJob, aiplatform_v1.Trial], Path | None] | None = (
        None
    )
    """Plays a trial's containers; returns the metrics file they wrote (None: they reported nothing)."""
    create_barrier: threading.Barrier | None = None
    """Each create (a custom or tuning job) waits here before it is served: racing submits all looked first."""
    _progress: dict[str, deque[str]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _next_id: int = 8_000_000_000_000_000_001
    clock: int = 1_795_000_000
    """The service's time, seconds since the epoch, one more at each event. A test of how long a
    job has waited (limits.max_pending counts its age) sets it to now."""

    def fail(
        self, method: str, code: grpc.StatusCode, times: int = 1, *, message: str = "", reason: str = ""
    ) -> None:
        """Make the next ``times`` calls of ``method`` (e.g. ``"CreateCustomJob"``) fail with ``code``.

        ``message`` is Google's text (default: "injected failure of METHOD"); ``reason``
        adds an ``ErrorInfo`` with that reason, as for a disabled API (``SERVICE_DISABLED``).
        """
        self.failures[method].extend([Failure(code, message, reason)] * times)

    def lose_response(self, method: str, code: grpc.StatusCode) -> None:
        """Carry out the next call of ``method``, then answer ``code``, as when the response is lost."""
        self.lost[method].append(code)

    def reset(self) -> None:
        """Forget every job, request and planned failure; the server keeps serving."""
        fresh = FakeJobService()
        with self._lock:
            for name in (f.name for f in fields(self) if f.name != "_lock"):
                setattr(self, name, getattr(fresh, name))

    def calls(self, method: str) -> list[Any]:
        """The requests received for ``method``, failed ones included, in order."""
        return [request for name, request in self.requests if name == method]

    def set_state(self, name: str, state: str, *, error: tuple[int, str] | None = None) -> None:
        """Put a job in ``state`` and keep it there; ``error`` is the ``google.rpc.Status`` (code, message) it failed with."""
        self._enter(self.jobs[name], state)
        self._progress[name] = deque()
        if error is not None:
            self.jobs[name].error = {"code": error[0], "message": error[1]}

    @contextlib.contextmanager
    def serve(self) -> Iterator[str]:
        """Serve on 127.0.0.1:<free port> while in the block; yields ``host:port``."""
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        server.add_generic_rpc_handlers((self._handler(),))
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        try:
            yield f"127.0.0.1:{port}"
        finally:
            server.stop(grace=None)

    def _handler(self) -> grpc.GenericRpcHandler:
        methods = {
            "CreateCustomJob": (self._create, aiplatform_v1.CreateCustomJobRequest, aiplatform_v1.CustomJob),
            "GetCustomJob": (self._get, aiplatform_v1.GetCustomJobRequest, aiplatform_v1.CustomJob),
            "ListCustomJobs": (
                self._list,
                aiplatform_v1.ListCustomJobsRequest,
                aiplatform_v1.ListCustomJobsResponse,
            ),
            "CancelCustomJob": (self._cancel, aiplatform_v1.CancelCustomJobRequest, None),
            "CreateHyperparameterTuningJob": (
                self._create_tuning,
                aiplatform_v1.CreateHyperparameterTuningJobRequest,
                aiplatform_v1.HyperparameterTuningJob,
            ),
            "GetHyperparameterTuningJob": (
                self._get_tuning,
                aiplatform_v1.GetHyperparameterTuningJobRequest,
                aiplatform_v1.HyperparameterTuningJob,
            ),
            "ListHyperparameterTuningJobs": (
                self._list_tuning,
                aiplatform_v1.ListHyperparameterTuningJobsRequest,
                aiplatform_v1.ListHyperparameterTuningJobsResponse,
            ),
            "CancelHyperparameterTuningJob": (
                self._cancel_tuning,
                aiplatform_v1.CancelHyperparameterTuningJobRequest,
                None,
            ),
        }
        return grpc.method_handlers_generic_handler(
            SERVICE, {name: self._rpc(name, *parts) for name, parts in methods.items()}
        )

    def _rpc(self, name: str, behaviour: Any, request_type: Any, response_type: Any) -> Any:
        def handle(request: Any, context: grpc.ServicerContext) -> Any:
            if name in CREATES and self.create_barrier is not None:
                self.create_barrier.wait(timeout=30)
            with self._lock:
                self.requests.append((name, request))
                if self.failures[name]:
                    self.failures[name].popleft().abort(context, f"injected failure of {name}")
                response = behaviour(request, context)
                if self.lost[name]:
                    context.abort(self.lost[name].popleft(), f"the response to {name} was lost")
                return response

        serialize = response_type.serialize if response_type else empty_pb2.Empty.SerializeToString
        return grpc.unary_unary_rpc_method_handler(
            handle, request_deserializer=request_type.deserialize, response_serializer=serialize
        )

    def _create(self, request: Any, context: grpc.ServicerContext) -> aiplatform_v1.CustomJob:
        job = aiplatform_v1.CustomJob(request.custom_job)
        pools = job.job_spec.worker_pool_specs
        if not job.display_name or not pools or pools[0].replica_count != 1:
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                "display_name is required and worker_pool_specs[0].replica_count must be 1",
            )
        job.name = f"{request.parent}/customJobs/{self._next_id}"
        self._next_id += 1
        job.create_time = self._now()
        job.state = aiplatform_v1.JobState[self.states[0]]
        self._progress[job.name] = deque(self.states[1:])
        self.jobs[job.name] = job
        if self.on_create is not None:
            self.on_create(job)
        return job

    def _get(self, request: Any, context: grpc.ServicerContext) -> aiplatform_v1.CustomJob:
        job = self._find(request.name, context)
        if self._progress[job.name]:
            self._enter(job, self._progress[job.name].popleft())
        if job.state.name == "JOB_STATE_FAILED" and not job.error.message:
            job.error = {
                "code": 9,
                "message": "The replica workerpool0-0 exited with a non-zero status of 1.",
            }
        return job

    def _list(self, request: Any, context: grpc.ServicerContext) -> aiplatform_v1.ListCustomJobsResponse:
        match = LABEL_FILTER.match(request.filter)
        states = STATE_FILTER.fullmatch(request.filter)
        if request.filter and not (match or states):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"Unsupported filter: {request.filter}")
        wanted = set(re.findall(r"state=(JOB_STATE_[A-Z_]+)", request.filter)) if states else None
        jobs = [
            job
            for name, job in self.jobs.items()
            if name.startswith(f"{request.parent}/")
            and (not match or _matches(job, *match.groups()))
            and (wanted is None or job.state.name in wanted)
        ]
        return aiplatform_v1.ListCustomJobsResponse(custom_jobs=jobs)

    def _cancel(self, request: Any, context: grpc.ServicerContext) -> empty_pb2.Empty:
        job = self._find(request.name, context)
        if job.state.name in ENDED_STATES:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"Job {job.name} is already done")
        self._enter(job, "JOB_STATE_CANCELLING")
        self._progress[job.name] = deque(["JOB_STATE_CANCELLED"])
        return empty_pb2.Empty()

    def _create_tuning(
        self, request: Any, context: grpc.ServicerContext
    ) -> aiplatform_v1.HyperparameterTuningJob:
        job = aiplatform_v1.HyperparameterTuningJob(request.hyperparameter_tuning_job)
        study, pools = job.study_spec, job.trial_job_spec.worker_pool_specs
        if (
            not job.display_name
            or not study.metrics
            or not study.parameters
            or not pools
            or job.max_trial_count < 1
        ):
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                "display_name, study_spec.metrics, study_spec.parameters, trial_job_spec and max_trial_count are required",
            )
        job.name = f"{request.parent}/hyperparameterTuningJobs/{self._next_id}"
        self._next_id += 1
        job.create_time = self._now()
        job.state = aiplatform_v1.JobState[self.states[0]]
        self._progress[job.name] = deque(self.states[1:])
        self.tuning_jobs[job.name] = job
        return job

    def _get_tuning(
        self, request: Any, context: grpc.ServicerContext
    ) -> aiplatform_v1.HyperparameterTuningJob:
        """One step: a running job ends its active trials and starts the next; else its next state."""
        job = self._find_tuning(request.name, context)
        if job.state.name == "JOB_STATE_RUNNING":
            for trial in job.trials:
                if trial.state.name == "ACTIVE":
                    self._finish_trial(job, trial)
            if len(job.trials) < job.max_trial_count:
                self._start_trials(job)
                return job
        if self._progress[job.name]:
            self._enter(job, self._progress[job.name].popleft())
            if job.state.name == "JOB_STATE_RUNNING":
                self._start_trials(job)
        return job

    def _start_trials(self, job: aiplatform_v1.HyperparameterTuningJob) -> None:
        """New trials, up to ``parallel_trial_count`` at once and ``max_trial_count`` in all."""
        parallel = max(job.parallel_trial_count, 1)
        while (
            len(job.trials) < job.max_trial_count
            and sum(t.state.name == "ACTIVE" for t in job.trials) < parallel
        ):
            parent = job.name.split("/hyperparameterTuningJobs/")[0]
            job.trials.append(
                aiplatform_v1.Trial(
                    id=str(len(job.trials) + 1),
                    state=aiplatform_v1.Trial.State.ACTIVE,
                    parameters=[_first_value(spec) for spec in job.study_spec.parameters],
                    start_time=self._now(),
                    custom_job=f"{parent}/customJobs/{self._next_id}",
                )
            )
            self._next_id += 1

    def _finish_trial(self, job: aiplatform_v1.HyperparameterTuningJob, trial: aiplatform_v1.Trial) -> None:
        metric = job.study_spec.metrics[0].metric_id
        path = self.on_trial(job, trial) if self.on_trial is not None else None
        lines = [json.loads(line) for line in path.read_text().splitlines()] if path else []
        for line in lines:
            if metric in line:
                trial.measurements.append(
                    {
                        "step_count": int(line["global_step"]),
                        "metrics": [{"metric_id": metric, "value": float(line[metric])}],
                    }
                )
        trial.end_time = self._now()
        if trial.measurements:
            trial.final_measurement = trial.measurements[-1]
            trial.state = aiplatform_v1.Trial.State.SUCCEEDED
        else:
            trial.state = aiplatform_v1.Trial.State.INFEASIBLE
            trial.infeasible_reason = f"The trial reported no {metric}."

    def _list_tuning(
        self, request: Any, context: grpc.ServicerContext
    ) -> aiplatform_v1.ListHyperparameterTuningJobsResponse:
        match = LABEL_FILTER.match(request.filter)
        if request.filter and not match:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"Unsupported filter: {request.filter}")
        jobs = [
            job
            for name, job in self.tuning_jobs.items()
            if name.startswith(f"{request.parent}/") and (not match or _matches(job, *match.groups()))
        ]
        return aiplatform_v1.ListHyperparameterTuningJobsResponse(hyperparameter_tuning_jobs=jobs)

    def _cancel_tuning(self, request: Any, context: grpc.ServicerContext) -> empty_pb2.Empty:
        job = self._find_tuning(request.name, context)
        if job.state.name in ENDED_STATES:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"Job {job.name} is already done")
        self._enter(job, "JOB_STATE_CANCELLING")
        for trial in job.trials:
            if trial.state.name == "ACTIVE":
                trial.state = aiplatform_v1.Trial.State.STOPPING
        self._progress[job.name] = deque(["JOB_STATE_CANCELLED"])
        return empty_pb2.Empty()

    def _find_tuning(self, name: str, context: grpc.ServicerContext) -> aiplatform_v1.HyperparameterTuningJob:
        if name not in self.tuning_jobs:
            context.abort(grpc.StatusCode.NOT_FOUND, f"HyperparameterTuningJob {name} not found")
        return self.tuning_jobs[name]

    def _find(self, name: str, context: grpc.ServicerContext) -> aiplatform_v1.CustomJob:
        if name not in self.jobs:
            context.abort(grpc.StatusCode.NOT_FOUND, f"CustomJob {name} not found")
        return self.jobs[name]

    def _enter(self, job: Any, state: str) -> None:
        """Move ``job`` to ``state``: the first running state sets start_time, an ended one end_time."""
        job.state = aiplatform_v1.JobState[state]
        if state == "JOB_STATE_RUNNING" and "start_time" not in job:
            job.start_time = self._now()
        if state in ENDED_STATES and "end_time" not in job:
            job.end_time = self._now()

    def _now(self) -> timestamp_pb2.Timestamp:
        self.clock += 1
        return timestamp_pb2.Timestamp(seconds=self.clock)


def _first_value(spec: aiplatform_v1.StudySpec.ParameterSpec) -> aiplatform_v1.Trial.Parameter:
    """A parameter's lower bound, or its first value, as the service would suggest one."""
    if "double_value_spec" in spec:
        value: Any = spec.double_value_spec.min_value
    elif "integer_value_spec" in spec:
        value = float(spec.integer_value_spec.min_value)
    elif "discrete_value_spec" in spec:
        value = spec.discrete_value_spec.values[0]
    else:
        value = spec.categorical_value_spec.values[0]
    return aiplatform_v1.Trial.Parameter(parameter_id=spec.parameter_id, value=value)


def _matches(job: Any, key: str, value: str | None, exists: str | None) -> bool:
    """Whether ``job`` passes ``labels.KEY="VALUE"`` or ``labels.KEY:*``."""
    return key in job.labels if exists else job.labels.get(key) == value
