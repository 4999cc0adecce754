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

import math
import re
from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from cloudtrain import installed, uris
from cloudtrain.candidates import Placement
from cloudtrain.capacity import Capacity, capacity_schema, max_pending_s, mode_alone, read_bool, with_spot
from cloudtrain.errors import CloudtrainError
from cloudtrain.messages import CONTROL, MAX_DIGITS, QUOTE_LIMIT, quote, shorten, validation_problems
from cloudtrain.sections import (
    DURATION_SCHEMA,
    INT32_MAX,
    MAX_DURATION_S,
    METRIC_NAME,
    Duration,
    ProviderSection,
    Real,
    Section,
    Text,
    Wait,
    Whole,
    identities,
    parse_duration,
    provider_sections,
    real_number,
    shaped,
    whole_number,
    whole_spec,
)
from cloudtrain.tracker import Tracking, tracking_shorthand
from cloudtrain_runtime import config as runtime_config
from cloudtrain_runtime import hparams, profiling, rules

__all__ = [
    "MAX_DURATION_S",
    "Capacity",
    "Code",
    "JobSpec",
    "LearningRate",
    "Limits",
    "Resources",
    "Storage",
    "Strategy",
    "Training",
    "check_location",
    "check_storage_root",
    "parse_duration",
]


def check_location(value: str) -> str:
    """A bucket URI of a scheme some installed provider reads and writes, or a local path; as written."""
    return uris.check_location(value, _schemes_for(value))


def check_storage_root(value: str) -> str:
    """``check_location``, with a trailing '/' dropped."""
    return uris.check_storage_root(value, _schemes_for(value))


def _schemes_for(value: str) -> tuple[str, ...]:
    """Every installed provider's schemes: the built-ins' alone when they hold ``value``'s,
    which needs no scan of installed packages."""
    builtin = installed.schemes(plugins=False)
    return builtin if uris.scheme_of(value) in builtin else installed.schemes()


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

_NAME = re.compile(r"^[a-z][a-z0-9-]{0,61}[a-z0-9]$")
# Set by the providers or the runtime; a user value would break the cluster setup.
_RESERVED_ENV = re.compile(r"^(TF_CONFIG|CLUSTER_SPEC|CLOUDTRAIN_\w*|AIP_\w*|SM_\w*|TRAINING_JOB_\w*)$")
_SECRET_KEY = re.compile(r"(SECRET|PASSWORD|PASSWD|TOKEN|PRIVATE_KEY|ACCESS_KEY|API_KEY|CREDENTIAL)")


def _accelerator_names(schema: dict[str, Any]) -> None:
    """The catalog's accelerator names as the schema's enum, so editors complete them; then the
    providers' own names, which stand for them (``Resources._provider_names``)."""
    from cloudtrain import catalog

    schema["enum"] = sorted(catalog.accelerator_names()) + catalog.accelerator_aliases()


class Code(Section):
    """The user's training code: a module with ``build_model``/``make_dataset``, or a script."""

    scanned_fields: ClassVar[frozenset[str]] = frozenset({"args"})

    model_config = ConfigDict(
        json_schema_extra={
            # Exactly one of module and script (the _one_entry_point rule).
            "oneOf": [
                {
                    "required": ["module"],
                    "properties": {"module": {"type": "string"}, "script": {"type": "null"}},
                },
                {
                    "required": ["script"],
                    "properties": {"script": {"type": "string"}, "module": {"type": "null"}},
                },
            ]
        }
    )

    module: str | None = Field(
        None,
        description="Managed mode: the dotted module under source_dir that defines build_model(config) and "
        "make_dataset(context). Set this or script.",
        examples=["trainer.task"],
        json_schema_extra={"pattern": r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$"},
    )
    script: Text | None = Field(
        None,
        description="Script mode: a Python file under source_dir, run as __main__; it calls "
        "cloudtrain_runtime.setup(). Set this or module.",
        examples=["train.py"],
    )
    source_dir: Text = Field(
        ".",
        description="The project folder shipped to the container, relative to the spec file.",
        examples=[".", "src"],
    )
    args: list[str] = Field(
        default_factory=list,
        description="Command-line arguments passed to the script.",
        examples=[["--hidden", "32"]],
    )

    @field_validator("module")
    @classmethod
    def _dotted(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", value):
            raise PydanticCustomError(
                "code_module",
                "{value} is not a dotted module path; use a module name like trainer.task",
                {"value": quote(value)},
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


class Resources(Section):
    """How much hardware: a neutral accelerator name, devices per host, and hosts."""

    accelerator: str = Field(
        "cpu",
        description="The accelerator, by its neutral name: t4, v100, l4, a10g, a100-40gb, a100-80gb, "
        "h100-80gb, h200-141gb, tpu-v5e or cpu.",
        examples=["a100-40gb", "t4"],
        json_schema_extra=_accelerator_names,
    )
    # cloudtrain limits: the largest machine offered has 8 accelerators (TPU hosts 8 chips).
    per_host: Whole = Field(1, gt=0, le=64, description="Accelerators per host (TPU: chips).", examples=[8])
    hosts: Whole = Field(1, gt=0, le=1024, description="Number of hosts (machines).", examples=[2])
    spot: bool = Field(
        False, description="Use spot/preemptible capacity: the same as capacity: spot.", examples=[True]
    )
    capacity: Annotated[Capacity, BeforeValidator(mode_alone)] = Field(
        default_factory=Capacity,
        description="How the job gets its machines: on_demand, spot, flex, reservation, plan or queue, "
        "alone or with options, e.g. {mode: flex, max_wait: 6h}.",
        examples=["flex", {"mode": "reservation", "name": "any"}],
        json_schema_extra=capacity_schema,
    )
    disk_gb: Whole = Field(
        100, ge=30, le=64000, description="Boot/volume disk per host in GB.", examples=[200]
    )
    allow_cpu_fallback: StrictBool = Field(
        False,
        description="Let a replica that was planned with GPUs but sees none train on the CPU (with the "
        "plan's devices as logical CPU devices) and say so, instead of stopping before training. "
        "No effect on a CPU plan; not allowed with TPUs.",
        examples=[True],
    )
    machine_type: Text | None = Field(
        None,
        description="The provider's machine type, where it offers several for the accelerator and per_host "
        "(CPU jobs, L4 hosts on Vertex AI); one of the catalog's. Default: the catalog's first.",
        examples=["n1-standard-16", "g2-standard-16", "ml.m5.4xlarge"],
    )

    @model_validator(mode="before")
    @classmethod
    def _spot_is_a_capacity(cls, data: Any) -> Any:
        """``spot: true`` is ``capacity: spot``; the two always agree once read (``capacity.with_spot``)."""
        if not isinstance(data, dict):
            return data
        spot = read_bool(data.get("spot", False))
        return data if spot is None else with_spot(data, spot)  # None: the field's own check reports it

    @model_validator(mode="before")
    @classmethod
    def _provider_names(cls, data: Any) -> Any:
        """A provider's own accelerator or machine name stands for the neutral one.

        ``NVIDIA_TESLA_T4`` is ``t4``; ``ml.g4dn.12xlarge`` is ``t4``, 4 per host, on that
        instance type (``catalog.accelerator_alias``).
        """
        if not isinstance(data, dict) or not isinstance(data.get("accelerator"), str):
            return data
        from cloudtrain import catalog

        alias = (
            None
            if data["accelerator"] in catalog.accelerator_names()
            else catalog.accelerator_alias(data["accelerator"])
        )
        if alias is None:
            return data
        accelerator, machine = alias
        named = {"machine_type": machine.machine_type, "per_host": machine.devices} if machine else {}
        return {**named, **data, "accelerator": accelerator}

    @field_validator("accelerator")
    @classmethod
    def _known_accelerator(cls, value: str) -> str:
        from cloudtrain import catalog
        from cloudtrain.errors import did_you_mean

        names = catalog.accelerator_names()
        if value not in names:
            hint = did_you_mean(value, names) if len(value) <= QUOTE_LIMIT else ""
            raise PydanticCustomError(
                "accelerator",
                "unknown accelerator {value}.{hint}",
                {"value": quote(value), "hint": hint},
            )
        return value

    @field_validator("allow_cpu_fallback")
    @classmethod
    def _not_from_tpus(cls, value: bool, info: ValidationInfo) -> bool:
        """A CPU plan runs on the CPU anyway; a TPU plan cannot fall back: TPUStrategy needs its TPU."""
        from cloudtrain import catalog

        accelerator = info.data.get("accelerator")
        if value and accelerator and catalog.accelerators()[accelerator].kind == "tpu":
            raise PydanticCustomError(
                "cpu_fallback",
                "true falls back from GPUs to the CPU; a TPU plan (resources.accelerator {accelerator}) "
                "cannot, TPUStrategy needs its TPU. Remove it, or plan GPUs",
                {"accelerator": quote(accelerator)},
            )
        return value


class LearningRate(Section):
    """Base learning rate for one replica, and how it scales with the replica count."""

    base: Real = Field(1e-3, gt=0, le=10, description="Learning rate of a single replica.", examples=[3.0e-4])
    scaling: LRScaling = Field(
        "linear",
        description="linear: base × replicas; sqrt: base × √replicas; none: base.",
        examples=["linear"],
    )
    warmup_epochs: Real = Field(
        0, ge=0, le=1_000_000, description="Linear warm-up from 0 over this many epochs.", examples=[3]
    )


class Profile(Section):
    """Training steps the TensorFlow Profiler traces on the chief, into the run's TensorBoard folder.

    The runtime writes ``<logs>/plugins/profile/<run>/*.xplane.pb``, where TensorBoard's
    profile plugin reads it (``cloudtrain_runtime.profiling``).
    """

    epoch: Whole = Field(
        ..., gt=0, le=1_000_000, description="The epoch (1-based) whose steps are traced.", examples=[2]
    )
    steps: str = Field(
        ...,
        description='Steps FIRST-LAST of that epoch (1-based), e.g. "10-20": a few, after the first ones.',
        examples=["10-20"],
    )

    @field_validator("steps")
    @classmethod
    def _window(cls, value: str) -> str:
        steps = profiling.parse_steps(value)
        problem = (
            "write FIRST-LAST"
            if steps is None
            else profiling.window_problem(epoch=1, first=steps[0], last=steps[1])
        )
        if problem:
            raise PydanticCustomError(
                "profile_steps", 'must be FIRST-LAST, e.g. "10-20" ({problem})', {"problem": problem}
            )
        return value.strip()

    @property
    def window(self) -> str:
        """The runtime's ``CLOUDTRAIN_TRACE_STEPS`` value: ``EPOCH:FIRST-LAST``."""
        return f"{self.epoch}:{self.steps}"


def _speed_switch(name: str) -> BeforeValidator:
    """The runtime's own check of the speed switch ``name`` (``config.switch_problem``)."""

    def check(value: Any) -> Any:
        allowed = runtime_config.switch_problem(name, value)
        if allowed:
            raise PydanticCustomError("speed_switch", "must be {allowed}", {"allowed": allowed})
        return value

    return BeforeValidator(check)


def _speed_field(name: str, *, examples: list[Any]) -> Any:
    """The speed switch's field: the runtime's default and description."""
    default = runtime_config.SWITCH_DEFAULTS[name]
    return Field(default, description=runtime_config.SWITCH_DOCS[name], examples=examples)


def _hang_timeout(value: Any) -> Any:
    """``off`` (a bare YAML off reads as false) or a duration, in whole seconds."""
    if value is False or value == runtime_config.OFF:
        return runtime_config.OFF
    try:
        return parse_duration(value)
    except PydanticCustomError:
        raise PydanticCustomError("hang_timeout", "must be a duration like 60s or 5m, or off") from None


HangTimeout = Annotated[
    int | Literal["off"],
    BeforeValidator(_hang_timeout),
    WithJsonSchema({"anyOf": [DURATION_SCHEMA, {"enum": ["off", False]}]}),
]


class Training(Section):
    """How to train: epochs, batch, learning rate, precision, strategy and backend."""

    model_config = ConfigDict(
        json_schema_extra={
            # Not both batch sizes (the _one_batch rule).
            "not": {
                "required": ["per_replica_batch", "global_batch"],
                "properties": {"per_replica_batch": {"type": "integer"}, "global_batch": {"type": "integer"}},
            }
        }
    )

    # cloudtrain limits: a million epochs, int32 steps and batches, 10^15 examples.
    epochs: Whole = Field(10, gt=0, le=1_000_000, description="Passes over the training data.", examples=[30])
    steps_per_epoch: Annotated[int, Field(gt=0, le=INT32_MAX), BeforeValidator(whole_number)] | None = Field(
        None,
        description="Steps per epoch; default: the dataset's length.",
        examples=[128],
    )
    examples_per_epoch: Annotated[int, Field(gt=0, le=10**15), BeforeValidator(whole_number)] | None = Field(
        None,
        description="Size of one epoch; used for warm-up steps and cost.",
        examples=[1281167],
    )
    per_replica_batch: Annotated[int, Field(gt=0, le=INT32_MAX), BeforeValidator(whole_number)] | None = (
        Field(
            None,
            description="Batch per replica (default 32); global batch = per_replica_batch × replicas.",
            examples=[64],
        )
    )
    global_batch: Annotated[int, Field(gt=0, le=INT32_MAX), BeforeValidator(whole_number)] | None = Field(
        None,
        description="Alternative to per_replica_batch; must divide by the replica count.",
        examples=[512],
    )
    learning_rate: LearningRate = Field(
        default_factory=LearningRate,
        description="Base learning rate of one replica, how it scales with replicas, and the warm-up.",
        examples=[{"base": 3.0e-4, "scaling": "linear", "warmup_epochs": 3}],
    )
    mixed_precision: MixedPrecision = Field(
        "auto", description="auto: bf16 on Ampere+/TPU, fp16 on T4/V100, off on CPU.", examples=["bf16"]
    )
    strategy: Strategy = Field(
        "auto",
        description="The distribution strategy; auto picks it from hosts, devices and backend.",
        examples=["multi-worker"],
    )
    keras_backend: KerasBackend = Field(
        "tensorflow", description="Keras 3 backend: tensorflow (tf.distribute) or jax.", examples=["jax"]
    )
    layout_map: dict[str, list[str | None]] = Field(
        default_factory=dict,
        description="keras-model-parallel: weight path regex -> sharding axes, e.g. '.*dense/kernel': [null, model].",
        examples=[{".*dense/kernel": [None, "model"]}],
    )
    model_parallel: Whole = Field(
        1, gt=0, le=64, description="Devices on the 'model' mesh axis (keras-model-parallel).", examples=[2]
    )
    # The speed switches: defaults, descriptions and allowed values are the runtime's (config.py).
    steps_per_execution: Annotated[
        Annotated[int, Field(ge=1, le=INT32_MAX)] | Literal["auto"], _speed_switch("steps_per_execution")
    ] = _speed_field("steps_per_execution", examples=[16])
    jit_compile: Annotated[bool | Literal["auto"], _speed_switch("jit_compile")] = _speed_field(
        "jit_compile", examples=[True]
    )
    cache: Annotated[bool | Literal["auto"], _speed_switch("cache")] = _speed_field("cache", examples=[False])
    prefetch: Annotated[bool, _speed_switch("prefetch")] = _speed_field("prefetch", examples=[True])
    parallel_map: Annotated[bool, _speed_switch("parallel_map")] = _speed_field(
        "parallel_map", examples=[False]
    )
    profile: Profile | None = Field(
        None,
        description="Trace these steps with the TensorFlow Profiler (chief only); off by default.",
        examples=[{"epoch": 2, "steps": "10-20"}],
    )
    hang_timeout: HangTimeout = Field(
        runtime_config.HANG_TIMEOUT_DEFAULT,
        description="A replica with no training step for this long (at least; 5 x the median step where "
        "that is longer) dumps its stack and ends the attempt, which resumes from the last backup; off: never.",
        examples=["5m", "off"],
    )

    @field_validator("layout_map")
    @classmethod
    def _layout_rules(cls, value: dict[str, list[str | None]]) -> dict[str, list[str | None]]:
        """Keys are regular expressions (Keras fullmatches them); axes name the mesh's two axes."""
        for key, axes in value.items():
            try:
                re.compile(key)
            except re.error as err:
                raise PydanticCustomError(
                    "layout_map",
                    "{key} is not a regular expression ({why}); escape special characters, e.g. '.*dense/kernel'",
                    {"key": quote(key), "why": str(err)},
                ) from None
            unknown = [axis for axis in axes if axis is not None and axis not in rules.MESH_AXES]
            if unknown:
                raise PydanticCustomError(
                    "layout_map",
                    "{key} shards over {axis}, but the mesh has the axes {axes}; use those or null",
                    {
                        "key": quote(key),
                        "axis": quote(unknown[0]),
                        "axes": " and ".join(map(repr, rules.MESH_AXES)),
                    },
                )
        return value

    @model_validator(mode="after")
    def _one_batch(self) -> Training:
        if self.per_replica_batch is not None and self.global_batch is not None:
            raise PydanticCustomError(
                "batch",
                "set one of training.per_replica_batch or training.global_batch, not both",
            )
        return self

    @field_validator("steps_per_execution")
    @classmethod
    def _whole_executions(cls, value: int | str, info: ValidationInfo) -> int | str:
        problem = runtime_config.steps_per_execution_problem(value, info.data.get("steps_per_epoch"))
        if problem:
            raise PydanticCustomError("steps_per_execution", problem)
        return value

    @model_validator(mode="after")
    def _profile_within_training(self) -> Training:
        if self.profile is not None and self.profile.epoch > self.epochs:
            raise PydanticCustomError(
                "profile",
                "profile.epoch={epoch} is after the last epoch ({epochs}); set training.profile.epoch to {epochs} or less",
                {"epoch": self.profile.epoch, "epochs": self.epochs},
            )
        return self

    @model_validator(mode="after")
    def _warmup_within_training(self) -> Training:
        if self.learning_rate.warmup_epochs > self.epochs:
            raise PydanticCustomError(
                "warmup",
                "learning_rate.warmup_epochs={warmup} is longer than epochs={epochs}; "
                "set training.learning_rate.warmup_epochs to {epochs} or less",
                {"warmup": f"{self.learning_rate.warmup_epochs:g}", "epochs": self.epochs},
            )
        return self


class Storage(Section):
    """Where backups, checkpoints, TensorBoard logs and the export live."""

    root: str = Field(
        ...,
        description="gs://bucket/path (vertex), s3://bucket/path (sagemaker) or a local path, relative "
        "to the spec file.",
        examples=["gs://bucket/churn", "./outputs"],
    )

    @field_validator("root")
    @classmethod
    def _bucket_uri(cls, value: str) -> str:
        return check_storage_root(value)


class Limits(Section):
    """Guards: the longest the job may run and the most it may cost."""

    max_runtime: Duration = Field(
        24 * 3600,
        description="The longest the job may run: a duration like 90m, 24h or 2d, or seconds. "
        "Without a measured throughput, submit checks the budget as if every host ran this long.",
        examples=["24h", "90m", "2d"],
        json_schema_extra={"default": "24h"},
    )
    max_cost_usd: Annotated[float, Field(gt=0, le=10_000_000), BeforeValidator(real_number)] | None = Field(
        None,
        description="submit refuses a job whose estimate (or worst case) is above this, unless --force.",
        examples=[400],
    )
    max_pending: Wait | None = Field(
        None,
        description="The longest a submitted job may wait to start before it is cancelled (reason: "
        "capacity), e.g. 30m; 0 waits for ever. Default: 10m; with a capacity mode made to wait, its "
        "wait (flex: max_wait, else for ever; plan and queue: for ever). submit --max-pending overrides it.",
        examples=["30m", 0],
        json_schema_extra={"default": "10m"},
    )


def _choices(values: list[Any]) -> list[Any]:
    """Each choice a string without control characters, or a finite number of at most 18 digits."""
    for index, value in enumerate(values):
        if isinstance(value, bool):
            raise PydanticCustomError(
                "choice",
                "values[{index}] is a YAML boolean (yes, no, true, false, on, off); quote it ('yes') or write a number",
                {"index": index},
            )
        if isinstance(value, str):
            if not value.strip() or CONTROL.search(value):
                raise PydanticCustomError(
                    "choice",
                    "values[{index}] must be non-empty text without control characters",
                    {"index": index},
                )
        elif not isinstance(value, int | float) or not math.isfinite(value) or abs(value) >= 10**MAX_DIGITS:
            raise PydanticCustomError(
                "choice", "values[{index}] must be a string or a finite number", {"index": index}
            )
    return values


# cloudtrain limit: the trials of one sweep (tuning.max_trials), and so the points of a grid.
MAX_TRIALS = 10_000
ParameterType = Literal["float", "int", "categorical", "discrete"]
TuningAlgorithm = Literal["auto", "random", "grid", "bayesian"]
# A tuned parameter's name: a flag or a hyperparameter of the provider's tuning service, where
# cloudtrain_config_N carry the runtime configuration; providers reserve their tools' own prefixes
# (ProviderSection.reserved_parameters).
_PARAMETER_NAME = r"[a-z][a-z0-9_]{0,63}"


def _reserved_prefixes() -> tuple[str, ...]:
    """The parameter name prefixes that are not the user's: cloudtrain's, then each provider's."""
    sections = provider_sections(whole_spec()).values()
    return ("cloudtrain", *(prefix for section in sections for prefix in section.reserved_parameters))


class Parameter(Section):
    """One tuned hyperparameter: a range (float, int) or a list of values (categorical, discrete)."""

    type: ParameterType = Field(
        ...,
        description="float or int (a range), categorical (strings) or discrete (numbers).",
        examples=["float"],
    )
    min: Real | None = Field(
        None, description="Lower bound of a float or int range, inclusive.", examples=[1e-4]
    )
    max: Real | None = Field(
        None, description="Upper bound of a float or int range, inclusive.", examples=[0.1]
    )
    scale: Literal["linear", "log"] = Field(
        "linear", description="How a range is searched: linear, or log (bounds above 0).", examples=["log"]
    )
    values: Annotated[list[Any], AfterValidator(_choices)] | None = Field(
        None,
        min_length=1,
        max_length=1000,
        description="The choices of a categorical (strings) or discrete (numbers, ascending) parameter.",
        examples=[["adam", "sgd"], [16, 32, 64]],
    )

    @model_validator(mode="after")
    def _shape(self) -> Parameter:
        ranged = self.type in ("float", "int")
        if ranged and (self.min is None or self.max is None or self.values is not None):
            raise PydanticCustomError(
                "parameter", "{type} parameters take min and max, not values", {"type": self.type}
            )
        if not ranged and (self.values is None or self.min is not None or self.max is not None):
            raise PydanticCustomError(
                "parameter", "{type} parameters take values, not min and max", {"type": self.type}
            )
        if ranged:
            return self._check_range()
        return self._check_values()

    def _check_range(self) -> Parameter:
        assert self.min is not None and self.max is not None  # _shape checked it
        if self.min >= self.max:
            raise PydanticCustomError(
                "range",
                "min ({min}) must be below max ({max})",
                {"min": f"{self.min:g}", "max": f"{self.max:g}"},
            )
        if self.type == "int" and not (float(self.min).is_integer() and float(self.max).is_integer()):
            raise PydanticCustomError("range", "an int parameter takes whole-number min and max")
        if self.scale == "log" and self.min <= 0:
            raise PydanticCustomError(
                "range", "scale log needs min above 0 (received {min})", {"min": f"{self.min:g}"}
            )
        return self

    def _check_values(self) -> Parameter:
        values = self.values or []
        numbers = [v for v in values if not isinstance(v, str)]
        if self.type == "discrete" and len(numbers) != len(values):
            raise PydanticCustomError(
                "values", "a discrete parameter takes numbers; use categorical for strings"
            )
        if self.type == "categorical" and numbers:
            raise PydanticCustomError(
                "values", "a categorical parameter takes strings; quote them, e.g. '16'"
            )
        if len(set(values)) != len(values) or (numbers and numbers != sorted(numbers)):
            raise PydanticCustomError("values", "values must be distinct (discrete: in ascending order)")
        if self.scale != "linear":
            raise PydanticCustomError("scale", "scale applies to float and int ranges only")
        return self

    @property
    def numbers(self) -> list[float]:
        """The numeric values the parameter can take at its ends (a range) or all of them (discrete)."""
        if self.values is not None:
            return [float(value) for value in self.values]
        return [float(self.min or 0), float(self.max or 0)]

    @property
    def grid_values(self) -> int | None:
        """How many values a grid search takes of it: its values, or every whole number of an int
        range; None for a float range, which has no grid. Counted, never listed.

        Example:
        >>> Parameter(type="int", min=1, max=2_000_000_000).grid_values
        2000000000
        """
        if self.values is not None:
            return len(self.values)
        if self.type == "int":
            return int(self.max or 0) - int(self.min or 0) + 1
        return None

    @property
    def kind(self) -> str:
        """The runtime's kind of value: ``int`` (whole numbers), ``float`` or ``str``."""
        if self.type == "categorical":
            return "str"
        if self.type == "int" or (
            self.type == "discrete" and all(float(v).is_integer() for v in self.values or [])
        ):
            return "int"
        return "float"


class Objective(Section):
    """The metric a sweep optimises, as the runtime logs it each epoch."""

    metric: Annotated[
        str, shaped("metric", METRIC_NAME, "is not a Keras metric name; use letters, digits and _")
    ] = Field(
        ...,
        description="A metric of the epoch lines, e.g. val_loss or val_binary_accuracy.",
        examples=["val_loss"],
    )
    goal: Literal["maximize", "minimize"] = Field(
        ..., description="maximize or minimize.", examples=["minimize"]
    )


class Tuning(Section):
    """A hyperparameter sweep: many trials of the job, each with other values, searched for the best."""

    objective: Objective = Field(
        ...,
        description="The metric to optimise and its goal.",
        examples=[{"metric": "val_loss", "goal": "minimize"}],
    )
    parameters: dict[str, Parameter] = Field(
        ...,
        min_length=1,
        description="Name -> range or values. learning_rate, per_replica_batch and epochs also set those "
        "training fields; every value is config.hparams[name] in the code.",
        examples=[{"learning_rate": {"type": "float", "min": 1e-4, "max": 0.1, "scale": "log"}}],
        json_schema_extra={"propertyNames": {"pattern": f"^{_PARAMETER_NAME}$"}},
    )
    max_trials: Whole = Field(10, ge=1, le=MAX_TRIALS, description="Trials in all.", examples=[40])
    parallel_trials: Whole = Field(1, ge=1, le=1_000, description="Trials running at once.", examples=[4])
    algorithm: TuningAlgorithm = Field(
        "auto",
        description="auto (the provider's default: Bayesian on the clouds, TPE here), random, grid, or bayesian.",
        examples=["random"],
    )
    early_stopping: bool = Field(
        False,
        description="Stop trials whose objective trails the others' median (per epoch).",
        examples=[True],
    )
    max_failed_trials: Whole = Field(
        0,
        ge=0,
        le=10_000,
        description="Failed trials that end the sweep; 0: the provider decides (here: none).",
        examples=[3],
    )

    @field_validator("parameters")
    @classmethod
    def _names(cls, value: dict[str, Parameter]) -> dict[str, Parameter]:
        for name, parameter in value.items():
            if (
                not re.fullmatch(_PARAMETER_NAME, name)
                or name in hparams.RESERVED
                or name.startswith(_reserved_prefixes())
            ):
                raise PydanticCustomError(
                    "parameter_name",
                    "{name} is not a parameter name: use lowercase letters, digits and _, starting with a "
                    "letter, not config, help or a {prefixes} prefix",
                    {"name": quote(name), "prefixes": "/".join(_reserved_prefixes())},
                )
            field, kind = hparams.OVERRIDES.get(name, ("", parameter.kind))
            if parameter.kind != kind and not (kind == "float" and parameter.kind == "int"):
                raise PydanticCustomError(
                    "parameter_kind",
                    "{name} sets {field}, so it takes {kind} values",
                    {
                        "name": quote(name),
                        "field": field,
                        "kind": "whole-number" if kind == "int" else "numeric",
                    },
                )
            if field and parameter.type != "categorical" and min(parameter.numbers) <= 0:
                raise PydanticCustomError(
                    "parameter_kind",
                    "{name} sets {field}, so its values must be above 0",
                    {"name": quote(name), "field": field},
                )
        return value

    @model_validator(mode="after")
    def _search(self) -> Tuning:
        if self.parallel_trials > self.max_trials:
            raise PydanticCustomError(
                "parallel",
                "parallel_trials ({parallel}) exceeds max_trials ({total}); lower it",
                {"parallel": self.parallel_trials, "total": self.max_trials},
            )
        ranges = [name for name, p in self.parameters.items() if p.type == "float"]
        if self.algorithm == "grid" and ranges:
            raise PydanticCustomError(
                "grid",
                "algorithm grid needs int, categorical or discrete parameters; {name} is a float range: "
                "make it discrete (values: [...])",
                {"name": quote(ranges[0])},
            )
        if self.algorithm == "grid":
            self._check_grid()
        return self

    def _check_grid(self) -> None:
        """A grid's size, counted (never listed), within the trials a sweep may run.

        A grid search runs every combination once, so one of more than ``MAX_TRIALS`` points
        can never be searched, and listing it (Optuna's GridSampler, SageMaker's values)
        would exhaust memory first.
        """
        counts = {name: p.grid_values or 0 for name, p in self.parameters.items()}
        for name, count in counts.items():
            if count > MAX_TRIALS:
                raise PydanticCustomError(
                    "grid",
                    "algorithm grid runs every value, and {count} are {values} values; a sweep runs at most "
                    "{limit} trials. Narrow the range, list the values to try (type: discrete), or use "
                    "algorithm random or bayesian",
                    {
                        "at": f"parameters.{name}",
                        "count": _range_text(self.parameters[name]),
                        "values": f"{count:,}",
                        "limit": f"{MAX_TRIALS:,}",
                    },
                )
        size = math.prod(counts.values())
        if size > MAX_TRIALS:
            raise PydanticCustomError(
                "grid",
                "algorithm grid runs every combination, {product} = {size}; a sweep runs at most {limit} "
                "trials. Use fewer values, or algorithm random or bayesian",
                {
                    "at": "parameters",
                    "product": " × ".join(f"{name} {count:,}" for name, count in counts.items()),
                    "size": f"{size:,}",
                    "limit": f"{MAX_TRIALS:,}",
                },
            )


def _range_text(parameter: Parameter) -> str:
    """``min 1 to max 2000000000``, or ``the values``."""
    if parameter.values is not None:
        return "the values"
    return f"min {int(parameter.min or 0):,} to max {int(parameter.max or 0):,}"


class Origins:
    """Says where a spec's values from beneath it came from, in a problem about one (``Sources.annotate``).

    Not part of what a spec is: every ``Origins`` equals every other, so two specs of equal
    values are equal (pydantic compares private attributes too) wherever they were loaded from.
    """

    def __init__(self, annotate: Callable[[list[str]], list[str]] | None = None) -> None:
        self._annotate = annotate

    def __call__(self, problems: list[str]) -> list[str]:
        return self._annotate(problems) if self._annotate is not None else problems

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Origins)

    def __hash__(self) -> int:
        return hash(Origins)

    def __repr__(self) -> str:
        return f"Origins(known={self._annotate is not None})"


class JobSpec(Section):
    """One training job, provider-neutral. Load it with ``load_spec`` or build it in Python."""

    # After ``limits`` comes one section per installed provider that has one
    # (``vertex:``, ``sagemaker:``, a plugin's), named after the provider and read only by
    # it (``add_provider_sections``). The docstring above is the JSON Schema's description.

    # Built once, with the provider sections (add_provider_sections), rather than also before.
    model_config = ConfigDict(defer_build=True)
    whole: ClassVar[bool] = True
    # The field the provider sections follow.
    sections_after: ClassVar[str] = "limits"
    scanned_fields: ClassVar[frozenset[str]] = frozenset({"env"})

    name: str = Field(
        ...,
        description="Job name: lowercase letters, digits and '-', 2-63 characters, starting with a letter.",
        examples=["churn-model"],
        json_schema_extra={"pattern": _NAME.pattern},
    )
    provider: str = Field(
        "local",
        description="Default provider; --provider overrides.",
        examples=list(installed.BUILTIN),
    )
    code: Code = Field(
        ...,
        description="The training code: a managed module, or a script.",
        examples=[{"module": "trainer.task"}, {"script": "train.py"}],
    )
    image: Text = Field(
        "auto",
        description="Container image URI, or auto for a maintained TensorFlow image with the runtime "
        "shipped in the code bundle.",
        examples=["auto", "us-docker.pkg.dev/my-project/train/cloudtrain-gpu:1"],
    )
    resources: Resources = Field(
        default_factory=Resources,
        description="The hardware: accelerator, devices per host, hosts, and how to get it (capacity).",
        examples=[{"accelerator": "a100-40gb", "per_host": 8, "hosts": 2, "spot": True}],
    )
    training: Training = Field(
        default_factory=Training,
        description="Epochs, batch, learning rate, precision, strategy and Keras backend.",
        examples=[{"epochs": 30, "per_replica_batch": 64}],
    )
    storage: Storage = Field(
        default_factory=lambda: Storage(root="./outputs"),
        description="Where backups, checkpoints, TensorBoard logs and the model go (default ./outputs).",
        examples=[{"root": "gs://bucket/churn"}],
    )
    data: dict[str, Annotated[str, AfterValidator(check_location)]] = Field(
        default_factory=dict,
        description="Input channels: name -> gs://, s3:// or local path.",
        examples=[{"train": "gs://bucket/data/train"}],
        json_schema_extra={"propertyNames": {"pattern": "^[a-z][a-z0-9_]{0,30}$", "not": {"const": "code"}}},
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Extra environment variables for the container (never secrets).",
        examples=[{"WANDB_MODE": "offline"}],
        json_schema_extra={"propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}},
    )
    limits: Limits = Field(
        default_factory=Limits,
        description="The longest the job may run and the most it may cost.",
        examples=[{"max_runtime": "24h", "max_cost_usd": 400}],
    )
    placement: Placement | None = Field(
        None,
        description="Where the run may start, tried in order: providers, regions and shapes. "
        "The first that takes it runs it; the global batch and learning rate hold on every one.",
        examples=[[{"provider": name} for name in installed.BUILTIN if name != "local"]],
    )
    tuning: Tuning | None = Field(
        None,
        description="A hyperparameter sweep: a Vertex AI tuning job, a SageMaker tuning job, or trials here.",
        examples=[
            {
                "objective": {"metric": "val_loss", "goal": "minimize"},
                "parameters": {"learning_rate": {"type": "float", "min": 1e-4, "max": 0.1, "scale": "log"}},
                "max_trials": 8,
                "parallel_trials": 2,
            }
        ],
    )

    tracking: Annotated[Tracking | None, BeforeValidator(tracking_shorthand)] = Field(
        None,
        description="Log every run, all of its attempts as one, to an experiment tracker: tracking: mlflow, "
        "or a mapping with kind, uri, experiment, tags. Off by default; submit --tracking URI turns it on.",
        examples=["mlflow", {"kind": "mlflow", "uri": "http://127.0.0.1:5000", "experiment": "churn"}],
    )

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.fullmatch(value):
            raise PydanticCustomError(
                "job_name",
                "{value} is not a valid job name; use 2-63 lowercase letters, digits and '-', starting with a letter",
                {"value": quote(value)},
            )
        return value

    @field_validator("provider")
    @classmethod
    def _registered(cls, value: str) -> str:
        from cloudtrain.errors import did_you_mean

        if value not in installed.BUILTIN and value not in installed.names():
            hint = did_you_mean(value, installed.names()) if len(value) <= QUOTE_LIMIT else ""
            raise PydanticCustomError(
                "provider", "{value} is not valid.{hint}", {"value": quote(value), "hint": hint}
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
                    "{identities}: grant that identity access instead",
                    {"key": repr(key), "identities": identities()},
                )
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
                raise PydanticCustomError(
                    "env_key", "{key} is not a valid environment variable name", {"key": repr(key)}
                )
        return value

    @field_validator("env")
    @classmethod
    def _not_reserved(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if _RESERVED_ENV.match(key):
                raise PydanticCustomError(
                    "reserved_env",
                    "{key} is set by the provider or cloudtrain (TF_CONFIG, CLUSTER_SPEC, CLOUDTRAIN_*, AIP_*, "
                    "SM_*, TRAINING_JOB_*); rename it, e.g. MY_{name}",
                    {"key": quote(key), "name": shorten(key)},
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
                    {"channel": quote(channel)},
                )
        return value

    # Given by ``load_spec``: what the plan refuses of a value from beneath the spec (a region
    # of GOOGLE_CLOUD_REGION) then says where it came from and where to fix it.
    _origins: Origins = PrivateAttr(default_factory=lambda: Origins())

    def with_origins(self, annotate: Callable[[list[str]], list[str]]) -> JobSpec:
        """This spec, whose problems ``annotate`` tells where their values came from (``explained``)."""
        copy = self.model_copy()
        copy._origins = Origins(annotate)
        return copy

    def explained(self, problems: list[str]) -> list[str]:
        """``problems``, each about a value from beneath the spec saying where it came from and the fix."""
        return self._origins(problems)

    @property
    def max_pending_s(self) -> int:
        """How long a submitted job may wait to start, in seconds; 0: for ever (``capacity.max_pending_s``)."""
        return max_pending_s(self.limits.max_pending, self.resources.capacity)

    def storage_root(self, provider: str) -> str:
        """The storage root used on ``provider``: its section's ``storage_root``, else storage.root."""
        section = getattr(self, provider, None) if provider in provider_sections(type(self)) else None
        return str(getattr(section, "storage_root", None) or self.storage.root)

    @model_validator(mode="after")
    def _tuned_training(self) -> JobSpec:
        """Every trial trains as a spec may: the ends of a parameter that sets a training field
        (``hparams.OVERRIDES``) obey that field's bounds and rules, as its fixed value would.

        The runtime refuses what the spec refuses (epochs, batches up to 2**31 - 1), so a
        tuned value past them would fail every trial at its start, after the bill began.
        """
        if self.tuning is None:
            return self
        for name, parameter in self.tuning.parameters.items():
            if name not in hparams.OVERRIDES:
                continue
            for end, value in (("min", min(parameter.numbers)), ("max", max(parameter.numbers))):
                problem = _trial_training_problem(self.training, name, value)
                if problem:
                    raise PydanticCustomError(
                        "tuned_value",
                        "its {end} {value} sets {field} of a trial, which the spec refuses: {problem} "
                        "Narrow the parameter to what {field} takes",
                        {
                            "at": f"tuning.parameters.{name}",
                            "end": end,
                            "value": f"{int(value)}" if value.is_integer() else f"{value:g}",
                            "field": hparams.OVERRIDES[name][0],
                            "problem": problem,
                        },
                    )
        return self

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

    @model_validator(mode="after")
    def _candidates_have_settings(self) -> JobSpec:
        """A placement candidate on a provider with a section of the spec needs that section written.

        Without it the candidate would run on the section's defaults (no project, no role),
        which its provider refuses only when the candidate is tried.
        """
        sections = provider_sections(type(self))
        for index, candidate in enumerate(self.placement.candidates if self.placement else ()):
            if candidate.provider in sections and candidate.provider not in self.model_fields_set:
                raise PydanticCustomError(
                    "candidate_settings",
                    "placement.candidates[{index}].provider: {provider} has no {provider}: section in the "
                    "spec; add one with its settings (or take it from a profile)",
                    {"index": index, "provider": candidate.provider},
                )
        return self


def _trial_training_problem(training: Training, name: str, value: float) -> str | None:
    """Why the training section of a trial whose tuned ``name`` is ``value`` is invalid; None if it is not."""
    data = training.model_dump()
    if name == "learning_rate":
        data["learning_rate"]["base"] = value
    elif name == "per_replica_batch":
        data |= {"per_replica_batch": int(value), "global_batch": None}
    else:
        data[name] = int(value)
    try:
        Training.model_validate(data)
    except ValidationError as exc:
        return validation_problems(exc, root=whole_spec(), at=("training",))[0]
    return None


def add_provider_sections(spec: type[JobSpec] = JobSpec) -> None:
    """Give ``spec`` one field per installed provider section (after ``sections_after``), and no other.

    The model is changed in place, so every ``JobSpec`` imported anywhere gains a section
    installed or registered later in the process (``installed.watch`` calls this). pydantic
    has no public way to add a field to a built model: the field is added to the model's
    fields (``__pydantic_fields__``, what ``model_fields`` reads) and the model rebuilt
    from them (``model_rebuild(force=True)``), as pydantic does for forward references.
    """
    own = {
        name: info for name, info in spec.__pydantic_fields__.items() if name not in provider_sections(spec)
    }
    sections = {name: _provider_section(name, section) for name, section in installed.sections().items()}
    for name in sections:
        if name in own:
            raise CloudtrainError(
                f"The provider {name!r} cannot have a section: the spec has a field {name!r} of its own. "
                "Rename the provider, or remove its section."
            )
    names = list(own)
    at = names.index(spec.sections_after) + 1 if spec.sections_after in own else len(names)
    fields = {
        **{name: own[name] for name in names[:at]},
        **{name: _section_field(section) for name, section in sections.items()},
        **{name: own[name] for name in names[at:]},
    }
    spec.__pydantic_fields__.clear()
    spec.__pydantic_fields__.update(fields)
    spec.model_rebuild(force=True)


def _provider_section(name: str, section: type[BaseModel]) -> type[ProviderSection]:
    """Provider ``name``'s section class, which must be a ``ProviderSection`` to be a section of the spec.

    Raises:
        CloudtrainError: a plugin declared another class; the message names the provider.
    """
    if not issubclass(section, ProviderSection):
        raise CloudtrainError(
            f"The provider {name!r} declares {section.__qualname__} as its section, which is not a "
            "cloudtrain.sections.ProviderSection. Fix the provider's package, or uninstall it."
        )
    return section


def _section_field(section: type[ProviderSection]) -> FieldInfo:
    """The spec's field for a provider's section: its defaults unless given."""
    return FieldInfo.from_annotated_attribute(
        section, Field(default_factory=section, description=section.summary, examples=list(section.examples))
    )


add_provider_sections()
installed.watch(add_provider_sections)
