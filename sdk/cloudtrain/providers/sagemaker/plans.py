"""Training plan offerings: what SageMaker sells ahead for a job's shape, and its upfront fee.

``SearchTrainingPlanOfferings`` (botocore 1.44.18 sagemaker 2017-07-24) takes an instance
type, a count, a duration in hours and the target resource ``training-job``, and answers
offerings with their ``UpfrontFee`` (a string) and ``CurrencyCode`` and the reserved
capacity's window. Only some instance types are sold this way: the operation's own
``InstanceType`` enum, read from the client's model, says which.
(https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_SearchTrainingPlanOfferings.html)
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from cloudtrain.provider.base import PlanOffer

if TYPE_CHECKING:
    from cloudtrain.providers.sagemaker.clients import AwsClients

OPERATION = "SearchTrainingPlanOfferings"
TARGET = "training-job"


def sold(aws: AwsClients) -> tuple[str, ...]:
    """The instance types training plans are sold for (the operation's InstanceType enum)."""
    model = aws.client("sagemaker").meta.service_model.operation_model(OPERATION)
    return tuple(model.input_shape.members["InstanceType"].enum)


def search(aws: AwsClients, machine_type: str, hosts: int, *, hours: int) -> list[PlanOffer]:
    """The offerings of ``hosts`` × ``machine_type`` for ``hours``, cheapest first; none for a type not sold so."""
    if machine_type not in sold(aws):
        return []
    answer = aws.call(
        "sagemaker",
        "search_training_plan_offerings",
        InstanceType=machine_type,
        InstanceCount=hosts,
        DurationHours=hours,
        TargetResources=[TARGET],
    )
    found = [_offer(item, machine_type, hosts) for item in answer.get("TrainingPlanOfferings", [])]
    return sorted((offer for offer in found if offer is not None), key=lambda offer: offer.upfront)


def _offer(item: dict[str, Any], machine_type: str, hosts: int) -> PlanOffer | None:
    """One offering; None when its fee is not a number (nothing to compare)."""
    try:
        fee = float(item.get("UpfrontFee", ""))
    except ValueError:
        return None
    if not math.isfinite(fee):
        return None
    window = (item.get("ReservedCapacityOfferings") or [{}])[0]
    return PlanOffer(
        provider="sagemaker",
        machine_type=machine_type,
        hosts=hosts,
        offer_id=str(item["TrainingPlanOfferingId"]),
        upfront=fee,
        currency=str(item.get("CurrencyCode", "USD")),
        hours=float(item.get("DurationHours", 0)) + float(item.get("DurationMinutes", 0)) / 60,
        start=window.get("StartTime"),
        end=window.get("EndTime"),
    )
