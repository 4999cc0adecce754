"""The provider-neutral job spec.

A ``JobSpec`` says what the user wants: which code, how much hardware, how to train and
where to keep the results. It says nothing about Vertex worker pools or SageMaker
resource configs; ``cloudtrain.planning.plan`` resolves those. Every field has the default a
newcomer would pick, and unknown keys are errors so a typo never silently does nothing.

Example:
>>> spec = JobSpec(name="demo", code={"module": "trainer.task"})
>>> spec.resources.hosts, spec.training.strategy
(1, 'auto')
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PositiveInt,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from cloudtrain_runtime import rules

Strategy = Literal[
    "auto",
    "one-device",
    "mirrored",
    "multi-worker",
    "tpu",
    "keras-data-parallel",
    "keras-model-parallel",
]
MixedPrecision = Literal["auto", "bf16", "fp16", "off"]
LRScaling = Literal["linear", "sqrt", "none"]
KerasBackend = Literal["tensorflow", "jax"]

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_NAME = re.compile(r"^[a-z][a-z0-9-]{0,61}[a-z0-9]$")
_BUCKET_URI = re.compile(r"^[a-z][a-z0-9+.-]*://[a-z0-9][a-z0-9._-]{1,61}[a-z0-9](/.*)?$")
_SECRET_KEY = re.compile(r"(SECRET|PASSWORD|PASSWD|TOKEN|PRIVATE_KEY|ACCESS_KEY|API_KEY|CREDENTIAL)")


def parse_duration(value: Any) -> int:
    """Turn ``"24h"``, ``"90m"``, ``"2d"``, ``"3600s"`` or a number of seconds into seconds.

    Example:
    >>> parse_duration("1.5h")
    5400
    """
    if isinstance(value, bool):
        raise PydanticCustomError("duration", "must be a duration like 90m, 24h or 2d")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        match = _DURATION.match(str(value))
        if not match:
            raise PydanticCustomError("duration", "must be a duration like 90m, 24h or 2d")
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if seconds < 1:
        raise PydanticCustomError("duration_min", "must be at least 1s")
    return int(seconds)


Duration = Annotated[int, BeforeValidator(parse_duration)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Code(_Section):
    """The user's training code: a module with ``build_model``/``make_dataset``, or a script."""

    module: str | None = Field(None, description="Managed mode: module exposing build_model().")
    script: str | None = Field(None, description="Script mode: a Python file run as __main__.")
    source_dir: str = Field(".", description="Directory shipped to the container, relative to the spec.")
    args: list[str] = Field(default_factory=list, description="Arguments passed to the script.")

    @field_validator("module")
    @classmethod
    def _dotted(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", value):
            raise PydanticCustomError(
                "code_module",
                "{value} is not a dotted module path; use a module name like trainer.task",
                {"value": repr(value)},
            )
        return value

    @model_validator(mode="after")
    def _one_entry_point(self) -> Code:
        if (self.module is None) == (self.script is None):
            raise PydanticCustomError(
                "code_entry",
                "set exactly one of code.module (e.g. trainer.task) or code.script (e.g. train.py)",
            )
        return self


class Resources(_Section):
    """How much hardware: a neutral accelerator name, devices per host, and hosts."""

    accelerator: str = Field(
        "cpu",
        description="t4, v100, l4, a10g, a100-40gb, a100-80gb, h100-80gb, h200-141gb, tpu-v5e or cpu.",
    )
    per_host: PositiveInt = Field(1, description="Accelerators per host (TPU: chips).")
    hosts: PositiveInt = Field(1, description="Number of hosts (machines).")
    spot: bool = Field(False, description="Use spot/preemptible capacity.")
    disk_gb: int = Field(100, ge=30, le=64000, description="Boot/volume disk per host in GB.")

    @field_validator("accelerator")
    @classmethod
    def _known_accelerator(cls, value: str) -> str:
        from cloudtrain import catalog
        from cloudtrain.errors import did_you_mean

        names = catalog.accelerator_names()
        if value not in names:
            raise PydanticCustomError(
                "accelerator",
                "unknown accelerator {value}.{hint}",
                {"value": repr(value), "hint": did_you_mean(value, names)},
            )
        return value


class LearningRate(_Section):
    """Base learning rate for one replica, and how it scales with the replica count."""

    base: float = Field(1e-3, gt=0, le=10, description="Learning rate of a single replica.")
    scaling: LRScaling = Field("linear", description="linear: base × replicas; sqrt; none.")
    warmup_epochs: float = Field(0, ge=0, description="Linear warm-up from 0 over this many epochs.")


class Training(_Section):
    """How to train: epochs, batch, learning rate, precision, strategy and backend."""

    epochs: PositiveInt = 10
    steps_per_epoch: PositiveInt | None = None
    examples_per_epoch: PositiveInt | None = Field(
        None, description="Size of one epoch; used for warm-up steps and cost."
    )
    per_replica_batch: PositiveInt | None = Field(
        None,
        description="Batch per replica (default 32); global batch = per_replica_batch × replicas.",
    )
    global_batch: PositiveInt | None = Field(
        None, description="Alternative to per_replica_batch; must divide by the replica count."
    )
    learning_rate: LearningRate = Field(default_factory=LearningRate)
    mixed_precision: MixedPrecision = "auto"
    strategy: Strategy = "auto"
    keras_backend: KerasBackend = "tensorflow"
    layout_map: dict[str, list[str | None]] = Field(
        default_factory=dict,
        description="keras-model-parallel: weight path regex -> sharding axes, e.g. '.*dense/kernel': [null, model].",
    )
    model_parallel: PositiveInt = Field(
        1, description="Devices on the 'model' mesh axis (keras-model-parallel)."
    )

    @model_validator(mode="after")
    def _one_batch(self) -> Training:
        if self.per_replica_batch is not None and self.global_batch is not None:
            raise PydanticCustomError(
                "batch",
                "set one of training.per_replica_batch or training.global_batch, not both",
            )
        return self


class Storage(_Section):
    """Where backups, checkpoints, TensorBoard logs and the export live."""

    root: str = Field(
        ..., description="gs://bucket/path (vertex), s3://bucket/path (sagemaker) or a local path."
    )

    @field_validator("root")
    @classmethod
    def _bucket_uri(cls, value: str) -> str:
        return check_storage_root(value)


def check_storage_root(value: str) -> str:
    """A bucket URI of a provider's scheme (gs://, s3://, ...) or a local path; trailing '/' dropped."""
    from cloudtrain.providers import registry

    if "://" in value:
        scheme = value.split("://", 1)[0] + "://"
        schemes = registry.schemes(plugins=False)
        if scheme not in schemes:
            schemes = registry.schemes()
        if scheme not in schemes:
            raise PydanticCustomError(
                "storage_root",
                "{value} uses an unsupported scheme; use {schemes} or a local path",
                {"value": repr(value), "schemes": ", ".join(schemes)},
            )
        if not _BUCKET_URI.match(value):
            raise PydanticCustomError(
                "storage_root",
                "{value} is not a valid bucket URI; use {examples}",
                {"value": repr(value), "examples": " or ".join(f"{s}BUCKET/path" for s in schemes)},
            )
    return value.rstrip("/") if len(value) > 1 else value


class Limits(_Section):
    """Guards: the longest the job may run and the most it may cost."""

    max_runtime: Duration = Field(24 * 3600, description="e.g. 90m, 24h, 2d.")
    max_cost_usd: float | None = Field(None, gt=0, description="submit refuses an estimate above this.")


class _ProviderSettings(_Section):
    @field_validator("storage_root", check_fields=False)
    @classmethod
    def _bucket_uri(cls, value: str | None) -> str | None:
        return None if value is None else check_storage_root(value)


class VertexSettings(_ProviderSettings):
    """Vertex AI settings; only read when the provider is vertex."""

    project: str | None = None
    region: str = "us-central1"
    storage_root: str | None = Field(None, description="gs:// root used on Vertex instead of storage.root.")
    service_account: str | None = None
    network: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    tensorboard: str | None = Field(
        None, description="projects/P/locations/L/tensorboards/ID; needs service_account."
    )
    flex_start: bool = Field(
        False,
        description="Dynamic Workload Scheduler: queue until the whole job's capacity is free, then run.",
    )
    max_wait: Duration | None = Field(None, description="With flex_start: how long to wait for capacity.")


class SageMakerSettings(_ProviderSettings):
    """SageMaker settings; only read when the provider is sagemaker."""

    region: str = "us-east-1"
    storage_root: str | None = Field(
        None, description="s3:// root used on SageMaker instead of storage.root."
    )
    role: str | None = Field(None, description="arn:aws:iam::ACCOUNT:role/NAME the job runs as.")
    subnets: list[str] = Field(default_factory=list)
    security_groups: list[str] = Field(default_factory=list)
    tags: dict[str, str] = Field(default_factory=dict)
    input_mode: Literal["File", "FastFile"] = "File"
    max_retries: int = Field(0, ge=0, le=30, description="RetryStrategy.MaximumRetryAttempts.")

    @field_validator("role")
    @classmethod
    def _role_arn(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+", value):
            raise PydanticCustomError(
                "role_arn",
                "{value} is not an IAM role ARN; use arn:aws:iam::123456789012:role/NAME",
                {"value": repr(value)},
            )
        return value


class JobSpec(_Section):
    """One training job, provider-neutral. Load it with ``load_spec`` or build it in Python."""

    name: str = Field(..., description="Job name: lowercase letters, digits and '-', 2-63 characters.")
    provider: str = Field("local", description="Default provider; --provider overrides.")
    code: Code
    image: str = Field("auto", description="Container image URI, or auto for cloudtrain's image.")
    resources: Resources = Field(default_factory=Resources)
    training: Training = Field(default_factory=Training)
    storage: Storage = Field(default_factory=lambda: Storage(root="./outputs"))
    data: dict[str, str] = Field(
        default_factory=dict, description="Input channels: name -> gs://, s3:// or local path."
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="Extra environment variables for the container."
    )
    limits: Limits = Field(default_factory=Limits)
    vertex: VertexSettings = Field(default_factory=VertexSettings)
    sagemaker: SageMakerSettings = Field(default_factory=SageMakerSettings)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.fullmatch(value):
            raise PydanticCustomError(
                "job_name",
                "{value} is not a valid job name; use 2-63 lowercase letters, digits and '-', starting with a letter",
                {"value": repr(value)},
            )
        return value

    @field_validator("provider")
    @classmethod
    def _registered(cls, value: str) -> str:
        from cloudtrain.errors import did_you_mean
        from cloudtrain.providers import registry

        if value not in registry.BUILTIN and value not in registry.names():
            raise PydanticCustomError(
                "provider",
                "{value} is not valid.{hint}",
                {"value": repr(value), "hint": did_you_mean(value, registry.names())},
            )
        return value

    @field_validator("env")
    @classmethod
    def _no_credentials(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if _SECRET_KEY.search(key.upper()):
                raise PydanticCustomError(
                    "secret_env",
                    "{key} looks like a credential; never put secrets in a job spec. The job runs as "
                    "vertex.service_account or sagemaker.role: grant that identity access instead",
                    {"key": repr(key)},
                )
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
                raise PydanticCustomError(
                    "env_key", "{key} is not a valid environment variable name", {"key": repr(key)}
                )
        return value

    @field_validator("data")
    @classmethod
    def _channel_names(cls, value: dict[str, str]) -> dict[str, str]:
        for channel in value:
            if not re.fullmatch(r"[a-z][a-z0-9_]{0,30}", channel) or channel == "code":
                raise PydanticCustomError(
                    "channel",
                    "{channel} is not a valid channel name; use lowercase letters, digits and '_' (not 'code')",
                    {"channel": repr(channel)},
                )
        return value

    def storage_root(self, provider: str) -> str:
        """The storage root used on ``provider``: its section's override, else storage.root."""
        from cloudtrain.providers import registry

        return registry.get(provider).storage_root(self)

    @model_validator(mode="after")
    def _consistent(self) -> JobSpec:
        """The strategy rules the spec alone can check; those on the machine wait for the plan."""
        training = self.training
        verdict = rules.decide(
            rules.Setup(
                training.strategy,
                keras_backend=training.keras_backend,
                hosts=self.resources.hosts,
                layout_map=bool(training.layout_map),
            )
        )
        if verdict.broken:
            raise PydanticCustomError("strategy", verdict.text("spec"))
        return self
