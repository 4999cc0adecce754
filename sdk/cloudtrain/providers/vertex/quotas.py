"""Vertex AI's training quotas: what a job needs, read through the Cloud Quotas API before it is sent.

Custom training draws on per-region quotas of the ``aiplatform.googleapis.com`` service:
GPUs per GPU type (``custom_model_training_nvidia_a100_gpus``), and CPUs for N1 and E2
machines (``custom_model_training_cpus``) (cloud.google.com/vertex-ai/docs/quotas,
"Custom training"; the metrics, by accelerator, are rows of ``quota_metrics.csv``). Spot
VMs and flex-start draw on the preemptible variant of the GPU metric
(``custom_model_training_preemptible_nvidia_a100_gpus``,
cloud.google.com/vertex-ai/docs/training/schedule-jobs-dws, "Quota"). A create over the
limit fails with ``429 RESOURCE_EXHAUSTED``; one within it while running jobs hold the
quota waits in ``JOB_STATE_QUEUED`` (cloud.google.com/vertex-ai/docs/training/understanding-training-service,
"Queue a new job").

The limits are read with the Cloud Quotas API v1 (google-cloud-quotas,
``CloudQuotasClient.list_quota_infos`` on
``projects/P/locations/global/services/aiplatform.googleapis.com``): the ``QuotaInfo`` of
the metric, and its ``dimensions_infos`` entry for the region (a value of -1 is
unlimited). The use is what this project's custom jobs in the region hold now
(``ListCustomJobs`` of the queued, pending and running ones). An increase is a quota
preference (``gcloud beta quotas preferences create``,
cloud.google.com/docs/quotas/implement-common-use-cases).

Example:
>>> a2 = catalog_machine("a2-highgpu-8g", "NVIDIA_TESLA_A100")
>>> [(need.name, need.amount) for need in needs(a2, 2, spot=True, region="us-central1", project="p")]
[('aiplatform.googleapis.com/custom_model_training_preemptible_nvidia_a100_gpus', 16)]
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudtrain import catalog
from cloudtrain.errors import CloudtrainError
from cloudtrain.provider.quotas import QuotaNeed, QuotaReading
from cloudtrain.providers.vertex.clients import VertexClients, with_retries
from cloudtrain.providers.vertex.names import api_call

if TYPE_CHECKING:
    from cloudtrain.catalog import Machine
    from cloudtrain.planning import Plan

SERVICE = "aiplatform.googleapis.com"
METRICS = Path(__file__).with_name("quota_metrics.csv")
# The states in which a custom job holds its quota.
HOLDING = ("JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING")
# Seconds one quota read may take: the preflight must not hold a submit up.
TIMEOUT_S = 20.0


@functools.cache
def _metrics() -> dict[str, tuple[str, str]]:
    """Vertex accelerator type (``cpu`` for a machine without one) -> (metric, unit)."""
    return {row["provider_accelerator"]: (row["metric"], row["unit"]) for row in catalog.read(METRICS)}


def needs(machine: Machine, hosts: int, *, spot: bool, region: str, project: str) -> list[QuotaNeed]:
    """The quota a job of ``hosts`` × ``machine`` draws on; none for a machine no metric is known for (TPUs)."""
    found = _metrics().get(machine.provider_accelerator or "cpu")
    if found is None:
        return []
    metric, unit = found
    if spot and unit == "GPUs":
        metric = metric.replace("custom_model_training_", "custom_model_training_preemptible_", 1)
    per_host = machine.accelerator_count if unit == "GPUs" else machine.vcpus
    name = f"{SERVICE}/{metric}"
    return [
        QuotaNeed("vertex", region, name, hosts * per_host, unit, increase(project, region, None, 0, name))
    ]


def catalog_machine(machine_type: str, accelerator_type: str) -> Machine | None:
    """The catalog's row of a Vertex machine with ``accelerator_type`` (``ACCELERATOR_TYPE_UNSPECIFIED``: none)."""
    wanted = "" if accelerator_type == "ACCELERATOR_TYPE_UNSPECIFIED" else accelerator_type
    return next(
        (
            m
            for m in catalog.machines("vertex")
            if m.machine_type == machine_type and m.provider_accelerator == wanted
        ),
        None,
    )


def plan_needs(plan: Plan) -> list[QuotaNeed]:
    """What ``plan``'s job needs of Vertex AI's quotas."""
    assert plan.machine is not None  # a Vertex plan always has its machine
    settings = plan.spec.vertex  # type: ignore[attr-defined]
    return needs(
        plan.machine, plan.hosts, spot=plan.spec.resources.spot, region=plan.region, project=settings.project
    )


def increase(project: str, region: str, quota_id: str | None, wanted: int, metric: str) -> str:
    """The command that asks for ``wanted`` of ``quota_id`` in ``region``; the console while the id is unknown."""
    if quota_id is None:
        return f"https://console.cloud.google.com/iam-admin/quotas?project={project} (filter {metric.split('/')[-1]})"
    return (
        f"gcloud beta quotas preferences create --service={SERVICE} --quota-id={quota_id} "
        f"--preferred-value={wanted} --dimensions=region={region} --project={project}"
    )


def read(plan: Plan, needs: list[QuotaNeed], clients: VertexClients) -> list[QuotaReading]:
    """Each need's limit (Cloud Quotas) and use (this project's custom jobs holding it).

    Never raises for a read Google refuses: the reading says why instead.
    """
    project = plan.spec.vertex.project  # type: ignore[attr-defined]
    try:
        infos = _quota_infos(project, {need.name for need in needs}, clients)
        used = _in_use(project, plan.region, clients)
    except CloudtrainError as failed:
        return [QuotaReading(need, None, None, str(failed).splitlines()[0]) for need in needs]
    return [_reading(need, infos.get(need.name), used.get(need.name, 0), project) for need in needs]


def _reading(need: QuotaNeed, info: Any, used: int, project: str) -> QuotaReading:
    if info is None:
        return QuotaReading(need, None, used, "Cloud Quotas lists no such quota")
    limit = _region_limit(info, need.region)
    if limit is None:
        return QuotaReading(need, None, used, f"Cloud Quotas has no value of it for {need.region}")
    wanted = need.amount + used
    need = dataclasses.replace(
        need, increase=increase(project, need.region, info.quota_id, wanted, need.name)
    )
    return QuotaReading(need, limit, used)


def _region_limit(info: Any, region: str) -> float | None:
    """The limit of ``info`` in ``region``: its entry for the region, else the one without a region; -1 is none."""
    entries = {dict(entry.dimensions).get("region"): entry.details.value for entry in info.dimensions_infos}
    value = entries.get(region, entries.get(None))
    if value is None:
        return None
    return float("inf") if value < 0 else float(value)


def _quota_infos(project: str, metrics: set[str], clients: VertexClients) -> dict[str, Any]:
    """Metric -> its ``QuotaInfo``, for the metrics asked for."""
    parent = f"projects/{project}/locations/global/services/{SERVICE}"
    service = clients.quota_service()
    call = api_call("ListQuotaInfos", f"list the quotas of {SERVICE} in project {project}", parent)
    call = dataclasses.replace(call, api="cloudquotas.googleapis.com", project=project)
    # retry=None: with_retries retries, waiting through ``sleep``; the client's own retry would wait minutes.
    infos = with_retries(
        lambda: list(service.list_quota_infos(parent=parent, retry=None, timeout=TIMEOUT_S)),
        call,
        sleep=clients.sleep,
    )
    return {info.metric: info for info in infos if info.metric in metrics}


def _in_use(project: str, region: str, clients: VertexClients) -> dict[str, int]:
    """Metric -> what the custom jobs holding quota in ``region`` hold of it."""
    parent = f"projects/{project}/locations/{region}"
    service = clients.job_service(region)
    query = {"parent": parent, "filter": " OR ".join(f"state={state}" for state in HOLDING)}
    jobs = with_retries(
        lambda: list(service.list_custom_jobs(request=query)),
        api_call("ListCustomJobs", f"list custom jobs in {parent}", parent),
        sleep=clients.sleep,
    )
    used: dict[str, int] = {}
    for job in jobs:
        spot = job.job_spec.scheduling.strategy.name in ("SPOT", "FLEX_START")
        for pool in job.job_spec.worker_pool_specs:
            found = catalog_machine(pool.machine_spec.machine_type, pool.machine_spec.accelerator_type.name)
            for need in (
                needs(found, pool.replica_count, spot=spot, region=region, project=project) if found else []
            ):
                used[need.name] = used.get(need.name, 0) + need.amount
    return used
