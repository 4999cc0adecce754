"""Submit, find and control Vertex AI hyperparameter tuning jobs through ``aiplatform_v1.JobServiceClient``.

As with custom jobs, submitting is idempotent, and two submits racing each other make
one tuning job (``once``: look, create, reconcile by the ``cloudtrain_request`` label).
A tuning job's ID is its resource name, ``projects/P/locations/L/hyperparameterTuningJobs/N``.

The handle reads the trials off the job (``HyperparameterTuningJob.trials``): each
``Trial`` has its parameters, its measurements (one per epoch, from the trial's
``cloudml-hypertune`` reports), its final measurement once it ended, and the CustomJob
that ran it, whose logs ``cloudtrain logs <custom job>`` shows.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from cloudtrain.errors import ProviderError
from cloudtrain.outputs import Outputs
from cloudtrain.provider.base import JobStatus, JobSummary, Usage
from cloudtrain.provider.jobs import WaitsByPolling
from cloudtrain.provider.sweeps import STOPPED, Trial, TrialEventLogs, best_of
from cloudtrain.providers.vertex import failures, once, sweep
from cloudtrain.providers.vertex.clients import VertexClients, require_google, with_retries
from cloudtrain.providers.vertex.job import upload_and_open
from cloudtrain.providers.vertex.listing import MEASURE, machine_usage
from cloudtrain.providers.vertex.names import PARENT, STATES, api_call
from cloudtrain.providers.vertex.render import JOB_LABEL, REQUEST_LABEL, estimate_from_labels

if TYPE_CHECKING:
    from cloudtrain.bundle import Bundle
    from cloudtrain.planning import Plan
    from cloudtrain.progress import OnProgress

SWEEP_ID = re.compile(rf"{PARENT.pattern}/hyperparameterTuningJobs/(?P<id>[0-9]+)\Z")
# Trial.State name -> neutral trial state (aiplatform_v1 study.proto). INFEASIBLE: "done but
# missing the final_measurement"; STOPPING: the service is stopping it (early stopping).
TRIAL_STATES = {
    "STATE_UNSPECIFIED": "queued",
    "REQUESTED": "queued",
    "ACTIVE": "running",
    "STOPPING": STOPPED,
    "SUCCEEDED": "succeeded",
    "INFEASIBLE": "failed",
}


def owns(job_id: str) -> bool:
    return SWEEP_ID.match(job_id) is not None


def submit(
    plan: Plan,
    request: dict[str, Any],
    bundle: Bundle,
    clients: VertexClients | None = None,
    progress: OnProgress | None = None,
) -> VertexSweep:
    """Upload the code bundle, then create the tuning job unless the same one exists.

    Raises:
        ProviderError: the request is not a valid HyperparameterTuningJob, or Vertex refused a call.
    """
    require_google()
    message = _message(request)
    clients = clients or VertexClients()
    parent, service = upload_and_open(plan, bundle, clients, progress)
    submitted = once.submit_once(
        service, parent, request["labels"][REQUEST_LABEL], message, once.TUNING_JOB, clients.sleep
    )
    return VertexSweep(submitted.name, clients=clients, request=request)


def _message(request: dict[str, Any]) -> Any:
    """The REST body as an ``aiplatform_v1.HyperparameterTuningJob``, rejecting any field the API lacks."""
    from google.cloud import aiplatform_v1
    from google.protobuf import json_format

    message = aiplatform_v1.HyperparameterTuningJob.pb(aiplatform_v1.HyperparameterTuningJob())
    try:
        json_format.ParseDict(request, message, ignore_unknown_fields=False)
    except json_format.ParseError as exc:
        raise ProviderError(f"The request is not a valid Vertex AI HyperparameterTuningJob: {exc}.") from exc
    return aiplatform_v1.HyperparameterTuningJob.wrap(message)


def attach(job_id: str, clients: VertexClients | None = None) -> VertexSweep:
    return VertexSweep(job_id, clients=clients or VertexClients())


def list_sweeps(project: str, region: str, *, limit: int | None, clients: VertexClients) -> list[JobSummary]:
    """cloudtrain's tuning jobs in ``project`` and ``region`` (the ``cloudtrain_job`` label), newest first."""
    parent = f"projects/{project}/locations/{region}"
    service = clients.job_service(region)
    query = {"parent": parent, "filter": f"labels.{JOB_LABEL}:*", "page_size": 100}
    found = with_retries(
        lambda: list(service.list_hyperparameter_tuning_jobs(request=query)),
        api_call("ListHyperparameterTuningJobs", f"list tuning jobs in {parent}", parent),
        sleep=clients.sleep,
    )
    found.sort(key=lambda job: job.create_time, reverse=True)
    return [summary(job) for job in found[:limit]]


class VertexSweep(TrialEventLogs, WaitsByPolling):
    """A submitted tuning job: status, trials, best, cancel and wait, by its resource name."""

    provider = "vertex"

    def __init__(self, job_id: str, *, clients: VertexClients, request: dict[str, Any] | None = None) -> None:
        match = SWEEP_ID.match(job_id)
        if match is None:
            raise ProviderError(
                f"{job_id!r} is not a Vertex AI tuning job name: "
                "projects/PROJECT/locations/REGION/hyperparameterTuningJobs/NUMBER."
            )
        self.id, self.request, self._clients = job_id, request, clients
        self.project, self.region, self.number = match["project"], match["region"], match["id"]

    @property
    def console_url(self) -> str:
        return (
            f"https://console.cloud.google.com/agent-platform/locations/{self.region}/training/"
            f"{self.number}?project={self.project}"
        )

    def _get(self) -> Any:
        service = self._clients.job_service(self.region)
        call = api_call("GetHyperparameterTuningJob", f"get {self.id}", self.id)
        return with_retries(
            lambda: service.get_hyperparameter_tuning_job(name=self.id), call, sleep=self._clients.sleep
        )

    def status(self) -> JobStatus:
        job = self._get()
        state, detail = STATES[job.state.name], job.error.message or ""
        failure = failures.job_failure(job.error.code, detail) if state == "failed" else None
        return JobStatus(state, job.state.name, detail, failure)

    @property
    def goal(self) -> str:
        return str(self._get().study_spec.metrics[0].goal.name.lower())

    @property
    def metric(self) -> str:
        return str(self._get().study_spec.metrics[0].metric_id)

    def trials(self) -> list[Trial]:
        return trials_of(self._get())

    def best(self) -> Trial | None:
        job = self._get()
        return best_of(trials_of(job), job.study_spec.metrics[0].goal.name.lower())

    @property
    def outputs(self) -> Outputs:
        """The best trial's artifacts; ``{trial}`` in their place until one has ended."""
        from google.protobuf import json_format

        job = self._get()
        request = json_format.MessageToDict(job._pb)
        best = best_of(trials_of(job), job.study_spec.metrics[0].goal.name.lower())
        return sweep.outputs_of(request, project=self.project, trial=best.id if best else sweep.TRIAL)

    def cancel(self) -> None:
        service = self._clients.job_service(self.region)
        call = api_call("CancelHyperparameterTuningJob", f"cancel {self.id}", self.id)
        with_retries(
            lambda: service.cancel_hyperparameter_tuning_job(name=self.id), call, sleep=self._clients.sleep
        )

    def _sleep(self, seconds: float) -> None:
        self._clients.sleep(seconds)

    def summary(self) -> JobSummary:
        return summary(self._get())

    def __repr__(self) -> str:
        return f"VertexSweep(id={self.id!r})"


def trials_of(job: Any) -> list[Trial]:
    """A tuning job's trials in neutral words; a trial's objective is its last measurement."""
    metric = job.study_spec.metrics[0].metric_id
    base = job.trial_job_spec.base_output_directory.output_uri_prefix.rstrip("/")
    found: list[Trial] = []
    for trial in job.trials:
        measurements = list(trial.measurements)
        final = (
            trial.final_measurement
            if "final_measurement" in trial
            else (measurements[-1] if measurements else None)
        )
        values = [m.value for m in final.metrics if m.metric_id == metric] if final is not None else []
        found.append(
            Trial(
                number=int(trial.id) if trial.id.isdigit() else len(found) + 1,
                id=trial.id,
                state=TRIAL_STATES[trial.state.name],
                values={p.parameter_id: _plain(p.value) for p in trial.parameters},
                objective=values[0] if values else None,
                epochs=len(measurements),
                job=trial.custom_job or None,
                model=f"{base}/{trial.id}/model",
                detail=trial.infeasible_reason,
            )
        )
    return found


def _plain(value: Any) -> int | float | str:
    """A parameter's value as proto-plus gives it (a float for numbers): whole numbers as ints."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int | float) else str(value)


def summary(job: Any) -> JobSummary:
    """A tuning job as ``list`` shows it; once ended, every trial's span billed for its replicas."""
    pools = job.trial_job_spec.worker_pool_specs
    hosts = sum(pool.replica_count for pool in pools)
    machine = pools[0].machine_spec if pools else None
    ended = "end_time" in job
    return JobSummary(
        id=job.name,
        name=job.labels.get(JOB_LABEL) or job.display_name,
        provider="vertex",
        state=STATES[job.state.name],
        created=job.create_time,
        started=job.start_time if "start_time" in job else None,
        ended=job.end_time if ended else None,
        shape=f"sweep of {len(job.trials)}/{job.max_trial_count} trials × {hosts} × {machine.machine_type}"
        if machine
        else "",
        estimate=estimate_from_labels(dict(job.labels)),
        usage=_usage(job, hosts, machine) if machine is not None and ended else None,
    )


def _usage(job: Any, hosts: int, machine: Any) -> Usage:
    """Each trial's replicas from its start to its end, added up (trials run as CustomJobs)."""
    seconds = sum(
        (trial.end_time - trial.start_time).total_seconds()
        for trial in job.trials
        if "start_time" in trial and "end_time" in trial
    )
    match = SWEEP_ID.match(job.name)
    region = match["region"] if match else ""
    return machine_usage(
        region, machine, hosts, seconds, job.trial_job_spec.scheduling, f"each trial {MEASURE}"
    )
