"""The ``sagemaker:`` section of a job spec: the region, role and network of a SageMaker job.

Only the sagemaker provider reads it; ``JobSpec`` has it because the provider is installed
(``cloudtrain.installed``). This module imports nothing of the provider's own,
so building the spec does not load the provider.

Example:
>>> SageMakerSettings(role="arn:aws:iam::123456789012:role/Training").region
'us-east-1'
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from cloudtrain.messages import quote
from cloudtrain.sections import METRIC_NAME, StoredSection, Whole, parse_duration, shaped

# Region shapes: us-east-1, us-gov-west-1.
_AWS_REGION = r"^[a-z]{2}(-gov)?-[a-z]+-\d+$"
# An AWS Batch job queue: its name (up to 128 letters, digits, '-' and '_') or its ARN
# (SubmitServiceJob.jobQueue, botocore 1.44.18 batch 2016-08-10: "either the name or the ARN").
BATCH_QUEUE = (
    r"^([A-Za-z0-9_-]{1,128}|arn:aws[a-z-]*:batch:[a-z0-9-]+:\d{12}:job-queue/[A-Za-z0-9_-]{1,128})$"
)


class SageMakerSettings(StoredSection):
    """SageMaker settings; only read when the provider is sagemaker."""

    provider: ClassVar[str] = "sagemaker"
    title: ClassVar[str] = "SageMaker"
    summary: ClassVar[str] = "SageMaker settings; read only on --provider sagemaker."
    examples: ClassVar[tuple[dict[str, Any], ...]] = (
        {"region": "us-east-1", "role": "arn:aws:iam::123456789012:role/Training"},
    )
    schemes: ClassVar[tuple[str, ...]] = ("s3://",)
    identity: ClassVar[str | None] = "role"
    # The SageMaker TensorFlow toolkit's own hyperparameters (sagemaker_program, sagemaker_region, ...).
    reserved_parameters: ClassVar[tuple[str, ...]] = ("sagemaker_",)
    scanned_fields: ClassVar[frozenset[str]] = frozenset({"tags"})

    region: Annotated[
        str, shaped("region", _AWS_REGION, "is not an AWS region; use a region like us-east-1")
    ] = Field(
        "us-east-1",
        description="The AWS region.",
        examples=["eu-west-1"],
        json_schema_extra={"pattern": _AWS_REGION},
    )
    storage_root: str | None = Field(
        None,
        description="s3:// root used on SageMaker instead of storage.root.",
        examples=["s3://bucket/churn"],
    )
    role: str | None = Field(
        None,
        description="arn:aws:iam::ACCOUNT:role/NAME the job runs as (required on SageMaker).",
        examples=["arn:aws:iam::123456789012:role/Training"],
        json_schema_extra={"pattern": r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+$"},
    )
    subnets: list[str] = Field(
        default_factory=list, description="VPC subnet IDs for the job.", examples=[["subnet-0abc1234"]]
    )
    security_groups: list[str] = Field(
        default_factory=list, description="VPC security group IDs for the job.", examples=[["sg-0abc1234"]]
    )
    tags: dict[str, str] = Field(
        default_factory=dict, description="Tags on the training job.", examples=[{"team": "search"}]
    )
    input_mode: Literal["File", "FastFile"] = Field(
        "File",
        description="How data channels reach the container: File (copied) or FastFile (streamed).",
        examples=["FastFile"],
    )
    max_retries: Whole = Field(
        0,
        ge=0,
        le=30,
        description=(
            "RetryStrategy.MaximumRetryAttempts: retries after an internal SageMaker error "
            "(never after an error exit of the job)."
        ),
        examples=[2],
    )
    metrics: list[
        Annotated[str, shaped("metric", METRIC_NAME, "is not a Keras metric name; use letters, digits and _")]
    ] = Field(
        default_factory=lambda: ["loss", "val_loss"],
        max_length=40,
        description="Metrics charted by SageMaker (MetricDefinitions), read from the epoch log lines.",
        examples=[["loss", "val_loss", "binary_accuracy", "val_binary_accuracy"]],
    )

    queue: Annotated[
        str | None,
        shaped(
            "batch_queue",
            BATCH_QUEUE,
            "is not an AWS Batch job queue; use its name (letters, digits, '-', '_') or its ARN",
        ),
    ] = Field(
        None,
        description="The AWS Batch job queue (of type SAGEMAKER_TRAINING) for capacity: queue: its name or "
        "ARN. resources.capacity.name or submit --queue names another; list shows its queued jobs.",
        examples=["ml-training"],
        json_schema_extra={"pattern": BATCH_QUEUE},
    )
    keep_alive: Annotated[int, Field(le=21600)] | None = Field(
        None,
        description="Warm pool: keep the instances this long after the job ends, for the next job of the "
        "same shape (ResourceConfig.KeepAlivePeriodInSeconds, at most 6h; billed while kept; not with spot).",
        examples=["10m"],
        json_schema_extra={
            "anyOf": [{"type": "string"}, {"type": "integer", "minimum": 1, "maximum": 21600}]
        },
    )

    @field_validator("keep_alive", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return None if value is None else parse_duration(value)

    @field_validator("role")
    @classmethod
    def _role_arn(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+", value):
            raise PydanticCustomError(
                "role_arn",
                "{value} is not an IAM role ARN; use arn:aws:iam::123456789012:role/NAME",
                {"value": quote(value)},
            )
        return value


SECTION = SageMakerSettings
