"""SageMaker's training quotas: what a job needs, read through Service Quotas before it is sent.

A training job draws on one quota per instance type, counted in instances and named
"<instance type> for training job usage", or "<instance type> for spot training job
usage" with managed spot (docs.aws.amazon.com/general/latest/gr/sagemaker.html, "Service
quotas"; a new account's GPU types are at 0). ``CreateTrainingJob`` over it fails at once
with ``ResourceLimitExceeded``, which counts the instances of the running jobs too
("with current utilization of N Instances and a request delta of M Instances").

The limits are read with Service Quotas ``ListServiceQuotas(ServiceCode="sagemaker")``
(paginated), matched by ``QuotaName`` because the quota codes of these names are not
published (a quota the account never changed is read from ``ListAWSDefaultServiceQuotas``);
the use is the instances of this account's training jobs in progress in the region
(``ListTrainingJobs(StatusEquals="InProgress")`` and ``DescribeTrainingJob``). An increase
is ``RequestServiceQuotaIncrease``, with the quota's code.

Example:
>>> needs("ml.p4d.24xlarge", 2, spot=False, region="us-east-1")[0].name
'ml.p4d.24xlarge for training job usage'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from cloudtrain.errors import CloudtrainError
from cloudtrain.provider.quotas import QuotaNeed, QuotaReading
from cloudtrain.providers.sagemaker.clients import AwsClients

if TYPE_CHECKING:
    from cloudtrain.planning import Plan

SERVICE_CODE = "sagemaker"
# Where a quota whose code is not known yet is found and raised by hand.
CONSOLE = "https://console.aws.amazon.com/servicequotas/home/services/sagemaker/quotas"


def quota_name(instance_type: str, *, spot: bool) -> str:
    """The Service Quotas name of the training quota of ``instance_type``."""
    return f"{instance_type} for {'spot ' if spot else ''}training job usage"


def needs(instance_type: str, hosts: int, *, spot: bool, region: str) -> list[QuotaNeed]:
    """The one quota a job of ``hosts`` × ``instance_type`` draws on."""
    name = quota_name(instance_type, spot=spot)
    return [QuotaNeed("sagemaker", region, name, hosts, "instances", increase(region, None, hosts, name))]


def plan_needs(plan: Plan) -> list[QuotaNeed]:
    """What ``plan``'s job needs of SageMaker's quotas."""
    assert plan.machine is not None  # a SageMaker plan always has its instance type
    return needs(plan.machine.machine_type, plan.hosts, spot=plan.spec.resources.spot, region=plan.region)


def increase(region: str, code: str | None, wanted: int, name: str) -> str:
    """The command that asks for ``wanted`` of quota ``code``; the console page while the code is unknown."""
    if code is None:
        return f"{CONSOLE} (search {name!r}), or: aws service-quotas list-service-quotas --service-code sagemaker"
    return (
        f"aws service-quotas request-service-quota-increase --service-code {SERVICE_CODE} "
        f"--quota-code {code} --desired-value {wanted} --region {region}"
    )


def read(needs: list[QuotaNeed], clients: AwsClients) -> list[QuotaReading]:
    """Each need's limit (Service Quotas) and use (the training jobs in progress).

    Never raises for a read AWS refuses: the reading says why instead.
    """
    try:
        limits = _limits({need.name for need in needs}, clients)
        used = _in_use(clients)
    except CloudtrainError as failed:
        return [QuotaReading(need, None, None, str(failed).splitlines()[0]) for need in needs]
    return [_reading(need, limits.get(need.name), used.get(need.name, 0), clients.region) for need in needs]


def _reading(need: QuotaNeed, found: tuple[str, float] | None, used: int, region: str) -> QuotaReading:
    if found is None:
        return QuotaReading(need, None, used, "Service Quotas lists no such quota in this region")
    code, limit = found
    need = dataclasses.replace(need, increase=increase(region, code, need.amount + used, need.name))
    return QuotaReading(need, limit, used)


def _limits(names: set[str], clients: AwsClients) -> dict[str, tuple[str, float]]:
    """Quota name -> (code, value): the account's applied values, then AWS's defaults for the rest."""
    found: dict[str, tuple[str, float]] = {}
    for operation in ("list_service_quotas", "list_aws_default_service_quotas"):
        for quota in _pages(clients, operation):
            name = quota.get("QuotaName")
            if name in names and name not in found:
                found[name] = (str(quota["QuotaCode"]), float(quota["Value"]))
        if names <= set(found):
            break
    return found


def _pages(clients: AwsClients, operation: str) -> Iterator[dict[str, Any]]:
    token: str | None = None
    while True:
        page = clients.call("service-quotas", operation, ServiceCode=SERVICE_CODE, **_token(token))
        yield from page.get("Quotas", [])
        token = page.get("NextToken")
        if not token:
            return


def _in_use(clients: AwsClients) -> dict[str, int]:
    """Quota name -> instances of the training jobs in progress that draw on it."""
    used: dict[str, int] = {}
    token: str | None = None
    while True:
        page = clients.call("sagemaker", "list_training_jobs", StatusEquals="InProgress", **_token(token))
        for summary in page.get("TrainingJobSummaries", []):
            described = clients.call(
                "sagemaker", "describe_training_job", TrainingJobName=summary["TrainingJobName"]
            )
            config = described.get("ResourceConfig", {})
            spot = bool(described.get("EnableManagedSpotTraining"))
            if "InstanceType" in config:
                name = quota_name(config["InstanceType"], spot=spot)
                used[name] = used.get(name, 0) + int(config.get("InstanceCount", 1))
        token = page.get("NextToken")
        if not token:
            return used


def _token(token: str | None) -> dict[str, str]:
    return {"NextToken": token} if token else {}
