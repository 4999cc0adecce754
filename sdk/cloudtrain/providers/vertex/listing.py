"""cloudtrain's custom jobs in a project and region, as ``cloudtrain list`` and ``status`` show them.

Listing asks the JobService for the jobs carrying the ``cloudtrain_job`` label, never for
every job: ``ListCustomJobsRequest.filter`` "labels supports general map functions that
is: labels.key=value - key:value equality labels.key:* - key existence"
(google-cloud-aiplatform, aiplatform_v1 types/job_service.py). The service promises no
order, so the jobs are sorted here, newest first.

What a job was billed for comes from its own times: ``start_time`` is "Time when the
CustomJob for the first time entered the JOB_STATE_RUNNING state", ``end_time`` "Time when
the CustomJob entered any of the following states: JOB_STATE_SUCCEEDED, JOB_STATE_FAILED,
JOB_STATE_CANCELLED" (aiplatform_v1 custom_job.proto). Training is billed per replica in
30-second increments (https://cloud.google.com/vertex-ai/pricing), so every replica of every pool counts
for that span; the increment is applied where the price is (``cost.actual``). Vertex
reports no billed time of its own: a replica that started late is counted from the first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cloudtrain import catalog
from cloudtrain.provider.base import JobSummary, Usage
from cloudtrain.providers.vertex.clients import VertexClients, require_google, with_retries
from cloudtrain.providers.vertex.names import JOB_ID, STATES, api_call
from cloudtrain.providers.vertex.render import JOB_LABEL, RUN_LABEL, estimate_from_labels

if TYPE_CHECKING:
    from datetime import datetime

# Every custom job cloudtrain creates carries this label (render); the filter asks for it to exist.
CLOUDTRAIN_JOBS = f"labels.{JOB_LABEL}:*"
PAGE_SIZE = 100
MEASURE = "start to end × replicas"


def list_jobs(
    project: str, region: str, *, limit: int | None, clients: VertexClients | None = None
) -> list[JobSummary]:
    """At most ``limit`` (None: all) of cloudtrain's custom jobs in ``project`` and ``region``, newest first.

    Raises:
        ProviderError: Vertex refused the call (the message says how to fix it).
        CredentialsError: no usable Google credentials.
        MissingDependencyError: google-cloud-aiplatform is missing.
    """
    return _listed(project, region, CLOUDTRAIN_JOBS, clients)[:limit]


def jobs_of_run(
    project: str, region: str, run_id: str, *, clients: VertexClients | None = None
) -> list[JobSummary]:
    """The custom jobs of run ``run_id`` (its ``cloudtrain_run`` label) in ``project`` and ``region``, newest first.

    The service filters: ``labels.key=value`` equality (``ListCustomJobsRequest.filter``).

    Raises:
        ProviderError: Vertex refused the call.
        CredentialsError: no usable Google credentials.
        MissingDependencyError: google-cloud-aiplatform is missing.
    """
    return _listed(project, region, f'labels.{RUN_LABEL}="{run_id}"', clients)


def _listed(project: str, region: str, query: str, clients: VertexClients | None) -> list[JobSummary]:
    """The custom jobs ``query`` filters, newest first."""
    require_google()
    clients = clients or VertexClients()
    parent = f"projects/{project}/locations/{region}"
    service = clients.job_service(region)
    request = {"parent": parent, "filter": query, "page_size": PAGE_SIZE}
    found = with_retries(
        lambda: list(service.list_custom_jobs(request=request)),
        api_call("ListCustomJobs", f"list custom jobs in {parent}", parent),
        sleep=clients.sleep,
    )
    found.sort(key=lambda job: job.create_time, reverse=True)
    return [summary(job) for job in found]


def summary(job: Any) -> JobSummary:
    """An ``aiplatform_v1.CustomJob`` as ``list`` shows it, with its usage once it has ended."""
    pools = job.job_spec.worker_pool_specs
    hosts = sum(pool.replica_count for pool in pools)
    machine = pools[0].machine_spec if pools else None
    state = STATES[job.state.name]
    return JobSummary(
        id=job.name,
        name=job.labels.get(JOB_LABEL) or job.display_name,
        provider="vertex",
        state=state,
        created=job.create_time,
        started=_time(job, "start_time"),
        ended=_time(job, "end_time"),
        shape=f"{hosts} × {machine.machine_type}" if machine else "",
        estimate=estimate_from_labels(dict(job.labels)),
        usage=_usage(job, hosts) if machine is not None and "end_time" in job else None,
        run=job.labels.get(RUN_LABEL),
    )


def _usage(job: Any, hosts: int) -> Usage:
    """Every replica billed from the job's first running moment to its end (0 if it never ran)."""
    machine = job.job_spec.worker_pool_specs[0].machine_spec
    started, ended = _time(job, "start_time"), _time(job, "end_time")
    seconds = (ended - started).total_seconds() if started and ended else 0.0
    match = JOB_ID.match(job.name)
    return machine_usage(
        match["region"] if match else "", machine, hosts, seconds, job.job_spec.scheduling, MEASURE
    )


def machine_usage(
    region: str, machine: Any, hosts: int, seconds: float, scheduling: Any, measure: str
) -> Usage:
    """``hosts`` replicas of ``machine`` (a ``MachineSpec``) for ``seconds`` under ``scheduling``.

    A custom job and a tuning job's trials (each a CustomJob) are billed alike; only how
    their seconds add up differs, so both read the machine, the accelerator and spot here.
    """
    return Usage(
        region=region,
        machine_type=machine.machine_type,
        accelerator=accelerator_of(machine.machine_type, machine.accelerator_type.name),
        hosts=hosts,
        seconds=max(seconds, 0.0),
        spot=scheduling.strategy.name == "SPOT",
        measure=measure,
    )


def accelerator_of(machine_type: str, accelerator_type: str) -> str:
    """The catalog's accelerator name for a machine spec; "" for a machine the catalog lacks.

    A spec with no accelerator (``ACCELERATOR_TYPE_UNSPECIFIED``: a CPU machine, or a TPU
    v5e machine, which takes none) is the catalog row whose ``provider_accelerator`` is empty.

    >>> accelerator_of("n1-standard-8", "NVIDIA_TESLA_T4"), accelerator_of("n1-standard-8", "ACCELERATOR_TYPE_UNSPECIFIED")
    ('t4', 'cpu')
    """
    wanted = "" if accelerator_type == "ACCELERATOR_TYPE_UNSPECIFIED" else accelerator_type
    return next(
        (
            machine.accelerator
            for machine in catalog.machines("vertex")
            if machine.machine_type == machine_type and machine.provider_accelerator == wanted
        ),
        "",
    )


def _time(job: Any, field: str) -> datetime | None:
    """A timestamp the service has set, else None (proto-plus gives None for an unset one)."""
    return getattr(job, field) if field in job else None
