"""SageMaker training: a Plan becomes a CreateTrainingJob request, submitted with boto3.

The rooms: ``checks`` (what SageMaker refuses), ``render`` (the request, pure, validated
by botocore's own model), ``clients`` (retries and error translation), ``job`` (status,
logs, stop), ``upload`` (the code bundle to S3, once), ``emulate`` (the hosts SageMaker
would start, run by the local provider).

Example:
>>> provider.name, provider.schemes
('sagemaker', ('s3://',))
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from cloudtrain import planning
from cloudtrain.providers.sagemaker import checks, emulate
from cloudtrain.providers.sagemaker.clients import AwsClients
from cloudtrain.providers.sagemaker.job import SageMakerJob
from cloudtrain.providers.sagemaker.render import attach, owns, render, submit

if TYPE_CHECKING:
    from pathlib import Path

    from cloudtrain.bundle import Bundle
    from cloudtrain.planning import Plan
    from cloudtrain.providers.base import Provider
    from cloudtrain.spec import JobSpec

__all__ = ["AwsClients", "SageMaker", "SageMakerJob", "attach", "owns", "provider", "render", "submit"]


class SageMaker:
    """SageMaker training jobs."""

    name = "sagemaker"
    title = "SageMaker"
    schemes = ("s3://",)
    machine_catalog = True
    billed = True
    # MaxRuntimeInSeconds: "The maximum value is 28 days" (CreateTrainingJob API reference).
    max_runtime_s = 28 * 86400
    max_runtime_field = "StoppingCondition.MaxRuntimeInSeconds"
    unsupported: Mapping[str, str] = MappingProxyType({"tpu": "SageMaker has no TPUs; use --provider vertex"})
    catalog_dir: Path | None = None
    color = "#ff9900"

    def __repr__(self) -> str:
        return "SageMaker()"

    def region(self, spec: JobSpec) -> str:
        return spec.sagemaker.region

    def storage_root(self, spec: JobSpec) -> str:
        return spec.sagemaker.storage_root or spec.storage.root

    def check(self, spec: JobSpec) -> list[str]:
        return checks.problems(spec)

    def plan(self, spec: JobSpec) -> Plan:
        return planning.plan(spec, self.name)

    def render(self, plan: Plan) -> dict[str, Any]:
        return render(plan)

    def submit(
        self, plan: Plan, request: dict[str, Any], bundle: Bundle, *, clients: Any = None
    ) -> SageMakerJob:
        return submit(plan, request, bundle, clients)

    def attach(self, job_id: str, *, clients: Any = None) -> SageMakerJob:
        return attach(job_id, clients)

    def owns(self, job_id: str) -> bool:
        return owns(job_id)

    def emulate(self, plan: Plan, request: dict[str, Any]) -> dict[str, Any]:
        return emulate.replicas(request, plan.region)


provider: Provider = SageMaker()
