"""cloudtrain's training jobs in a region, as ``cloudtrain list`` and ``status`` show them.

Listing uses the ``Search`` API for training jobs whose ``cloudtrain:job`` tag exists
("To define a tag filter, enter a value with the form Tags.<key>", API_Filter; the
``Exists`` operator), sorted by ``CreationTime``, newest first: one call per 100 jobs,
each answer holding the whole job, tags included. ListTrainingJobs cannot filter by tag.

A Search result's ``TrainingJob`` has the fields of a ``DescribeTrainingJob`` response
under the same names, plus ``Tags`` (botocore's sagemaker service model), so one
``summary`` reads both.

What a job was billed for is SageMaker's own measure: "Billable time refers to the
absolute wall-clock time. Multiply BillableTimeInSeconds by the number of instances
(InstanceCount) in your training cluster to get the total compute time SageMaker bills
you" (botocore 1.44.8 sagemaker 2017-07-24 service-2.json, BillableTimeInSeconds). With managed spot the billable time already holds the
saving, "(1 - BillableTimeInSeconds / TrainingTimeInSeconds) * 100" percent
(the same documentation), so it is priced at the on-demand rate.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cloudtrain import catalog
from cloudtrain.provider.base import JobSummary, Usage
from cloudtrain.providers.sagemaker.clients import AwsClients
from cloudtrain.providers.sagemaker.render import JOB_TAG, RUN_TAG, estimate_from_tags
from cloudtrain.providers.sagemaker.states import ARN, STOP_TAG, instance_shape, job_status

# Every training job cloudtrain creates carries this tag (render); the search asks for it to exist.
CLOUDTRAIN_JOBS = {"Filters": [{"Name": f"Tags.{JOB_TAG}", "Operator": "Exists"}]}
# Search's MaxResults: 1 to 100.
PAGE_SIZE = 100
ENDED = ("Completed", "Failed", "Stopped")


def list_jobs(clients: AwsClients, *, limit: int | None) -> list[JobSummary]:
    """At most ``limit`` (None: all) of cloudtrain's training jobs in the clients' region, newest first.

    Raises:
        ProviderError: SageMaker refused the call (the message says how to fix it).
        CredentialsError: no usable AWS credentials.
    """
    return _search(clients, CLOUDTRAIN_JOBS, limit=limit)


def jobs_of_run(clients: AwsClients, run_id: str) -> list[JobSummary]:
    """The training jobs of run ``run_id`` (its ``cloudtrain:run`` tag) in the clients' region, newest first.

    Search's ``Equals`` operator on ``Tags.<key>`` ("The value of Name equals Value", API_Filter),
    so SageMaker does the filtering.

    Raises:
        ProviderError: SageMaker refused the call.
        CredentialsError: no usable AWS credentials.
    """
    expression = {"Filters": [{"Name": f"Tags.{RUN_TAG}", "Operator": "Equals", "Value": run_id}]}
    return _search(clients, expression, limit=None)


def _search(clients: AwsClients, expression: dict[str, Any], *, limit: int | None) -> list[JobSummary]:
    found: list[JobSummary] = []
    token = None
    while limit is None or len(found) < limit:
        page = clients.call("sagemaker", "search", **_query(expression, limit, len(found), token))
        found += [
            summary(result["TrainingJob"]) for result in page.get("Results", []) if "TrainingJob" in result
        ]
        token = page.get("NextToken")
        if not token:
            break
    return found[:limit]


def _query(expression: dict[str, Any], limit: int | None, found: int, token: str | None) -> dict[str, Any]:
    wanted = PAGE_SIZE if limit is None else min(PAGE_SIZE, limit - found)
    query = {
        "Resource": "TrainingJob",
        "SearchExpression": expression,
        "SortBy": "CreationTime",
        "SortOrder": "Descending",
        "MaxResults": wanted,
    }
    return query | ({"NextToken": token} if token else {})


def summary(job: dict[str, Any], tags: Iterable[dict[str, str]] | None = None) -> JobSummary:
    """A DescribeTrainingJob response, or a Search result's TrainingJob, as ``list`` shows it.

    ``tags`` are the job's (a Search result carries its own; a description needs ListTags):
    they give the job's name in the spec, whether cloudtrain stopped it, and its estimate.
    """
    tags = list(job.get("Tags", []) if tags is None else tags)
    values = {tag.get("Key"): tag.get("Value") for tag in tags}
    machine_type, hosts = instance_shape(job.get("ResourceConfig", {}))
    return JobSummary(
        id=job["TrainingJobArn"],
        name=values.get(JOB_TAG) or job["TrainingJobName"],
        provider="sagemaker",
        state=job_status(job, lambda: STOP_TAG in values).state,
        created=job["CreationTime"],
        started=job.get("TrainingStartTime"),
        ended=job.get("TrainingEndTime"),
        shape=f"{hosts} × {machine_type}" if machine_type else "",
        estimate=estimate_from_tags(tags),
        usage=_usage(job, hosts, machine_type) if job["TrainingJobStatus"] in ENDED else None,
        run=values.get(RUN_TAG),
    )


def _usage(job: dict[str, Any], hosts: int, machine_type: str) -> Usage:
    """``BillableTimeInSeconds`` on every instance, at the on-demand rate (see the module docstring)."""
    match = ARN.match(job["TrainingJobArn"])
    return Usage(
        region=match["region"] if match else "",
        machine_type=machine_type,
        accelerator=accelerator_of(machine_type),
        hosts=hosts,
        seconds=float(job.get("BillableTimeInSeconds", 0)),
        spot=False,
        measure=measure(job),
    )


def measure(job: dict[str, Any]) -> str:
    """How the seconds were counted, for people: with managed spot, what it saved.

    >>> measure({"EnableManagedSpotTraining": True, "BillableTimeInSeconds": 100, "TrainingTimeInSeconds": 500})
    'BillableTimeInSeconds, managed spot saved 80%'
    """
    billable, trained = job.get("BillableTimeInSeconds"), job.get("TrainingTimeInSeconds")
    if not (job.get("EnableManagedSpotTraining") and billable is not None and trained):
        return "BillableTimeInSeconds"
    return f"BillableTimeInSeconds, managed spot saved {(1 - billable / trained) * 100:.0f}%"


def accelerator_of(instance_type: str) -> str:
    """The catalog's accelerator name for an instance type; "" for one the catalog lacks.

    >>> accelerator_of("ml.g4dn.xlarge"), accelerator_of("ml.unknown.xlarge")
    ('t4', '')
    """
    return next((m.accelerator for m in catalog.machines("sagemaker") if m.machine_type == instance_type), "")
