"""The runtime configuration: what the plan resolved for the container, defined once, here.

The SDK builds it (``cloudtrain.planning.Plan.runtime``) and sends it as compact JSON;
the runtime parses it back. The container may be a stock TensorFlow image with nothing
but this package shipped in the code bundle, so it is a frozen dataclass read with the
standard library, not pydantic.

Sources, first found wins: ``--config FILE``, the ``CLOUDTRAIN_CONFIG`` environment
variable, its pieces ``CLOUDTRAIN_CONFIG_0``, ``_1``, ... (a SageMaker sweep on a Deep
Learning Container, ``join_pieces``), then the hyperparameters file of an environment that has one (SageMaker's
``/opt/ml/input/config/hyperparameters.json``): the keys ``cloudtrain_config_0``, ``_1``,
... joined in order (SageMaker caps Environment values at 512 characters and
hyperparameter values at 256, so the JSON travels in pieces), or a single
``cloudtrain_config``.

Every value is checked against its field's type before the config is built: a string
where a list is expected is never split into characters, numbers are finite, counts
(epochs, batch, replicas, hosts, devices) are whole numbers from 1 to 2**31 - 1, no
string holds a NUL character, and the name and channel names are plain folder names.

Example:
>>> cfg = parse('{"name": "demo", "module": "trainer.task", "epochs": 2, '
...             '"per_replica_batch": 8, "replicas": 2, "learning_rate": 0.02, '
...             '"base_learning_rate": 0.01, "mixed_precision": "off", "strategy": "auto", '
...             '"keras_backend": "tensorflow", "accelerator": "cpu", "devices_per_host": 1, '
...             '"hosts": 2, "backup_dir": "b", "tensorboard_dir": "t", "export_dir": "e"}', "test")
>>> cfg.global_batch
16
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cloudtrain_runtime import rules
from cloudtrain_runtime.errors import ConfigError
from cloudtrain_runtime.inputs import loads, shown
from cloudtrain_runtime.paths import under_root

CONFIG_ENV = "CLOUDTRAIN_CONFIG"
CONFIG_HYPERPARAMETER = "cloudtrain_config"
CONFIG_PIECES_ENV = f"{CONFIG_ENV}_"
COUNT_MAX = 2**31 - 1  # TensorFlow counts steps, batches and replicas in int32
# The spec keeps these positive; the runtime divides by them and sizes tensors with them.
COUNTS = (
    "epochs",
    "per_replica_batch",
    "replicas",
    "hosts",
    "devices_per_host",
    "model_parallel",
    "steps_per_epoch",
)
# Fields that name one of a few things: a value outside them would run as something else
# (an unknown strategy as the default one, an unknown precision as float32), so it is an error.
CHOICES: dict[str, tuple[str, ...]] = {
    "strategy": ("auto", *rules.CLASSES),
    "strategy_requested": ("auto", *rules.CLASSES),
    "keras_backend": ("tensorflow", "jax"),
    "mixed_precision": ("bf16", "fp16", "off"),
}
# The job name and channel names become folder names (the SageMaker export, input channels).
_FOLDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}")
_PIECE_NUMBER = re.compile(r"0|[1-9][0-9]{0,5}")

# A tuned hyperparameter's value, of one of these kinds (``RuntimeConfig.tuned``).
Value = int | float | str
KINDS = ("int", "float", "str")
# Empty outside a sweep, and then left out of the configuration's JSON (``as_dict``).
SWEEP_FIELDS = ("hparams", "tuned", "objective")
# Empty without ``tracking:``, and then left out too: an untracked job travels as before tracking existed.
TRACKING_FIELDS = ("tracking_uri", "tracking_experiment", "tracking_tags", "log_model")

# ``training.hang_timeout``: the hang watchdog's floor, seconds (``cloudtrain_runtime.watchdog``), or
# off; left out of the configuration's JSON when it is the default, so a job travels as before.
HANG_TIMEOUT_DEFAULT = 60
OFF = "off"

# The training speed switches: ``training.<name>`` in the spec, resolved by
# ``cloudtrain_runtime.tuning``. The figures are examples/s ratios measured on CPU with
# benchmarks/entrypoint_overhead.py (``--switches``); a switch is on by default only where
# that measurement shows it pays.
AUTO = "auto"
SWITCH_DOCS = {
    "steps_per_execution": "Training steps per call into the compiled step function. auto: 16 with "
    "Keras 3 on one device (2.2-2.8x the examples/s of 1 for the example's model on CPU; 32 gained no "
    "more), the largest divisor of steps_per_epoch up to 16 when that is fixed; 1 under mirrored and "
    "multi-worker, where Keras 3 fails with more (keras-team/keras#19246), and on tf_keras, JAX and "
    "TPUs (not measured). A number fixes it.",
    "jit_compile": "XLA-compile the training step. auto: Keras decides (on for one GPU, off on CPU and "
    "under tf.distribute); forced on, it measured 0.80-0.94x the examples/s at 1 step per execution "
    "and 0.74-0.91x at 16 on CPU. true fails under mirrored and multi-worker.",
    "cache": "Keep the examples in memory after the first epoch. auto: when the dataset is finite, "
    "gives the same examples in the same order every epoch (no shuffle, no random op), does work per "
    "example (map, files) and fits in a quarter of the host's memory (1.9-2.5x the examples/s of a "
    "map-heavy pipeline on CPU).",
    "prefetch": "Add prefetch(AUTOTUNE) after batching the training data: 0.97-1.20x the examples/s "
    "of a pipeline with a per-example map on CPU, 1.12x the median of five runs.",
    "parallel_map": "Let tf.data run stateless map() calls and batching on several threads where the "
    "code did not (its map_parallelization and parallel_batch rewrites): 1.1-1.7x the examples/s of a "
    "pipeline with a per-example map on CPU; false turns them off.",
}


@dataclass(frozen=True)
class RuntimeConfig:
    """What the plan resolved for the container.

    Paths are provider URIs (gs://, s3:// or local); the runtime maps them to what the
    replica can open (``/gcs/...`` FUSE on Vertex, ``/opt/ml/...`` on SageMaker).
    """

    name: str
    epochs: int
    per_replica_batch: int
    replicas: int
    learning_rate: float
    base_learning_rate: float
    mixed_precision: str
    strategy: str
    keras_backend: str
    accelerator: str
    devices_per_host: int
    hosts: int
    backup_dir: str
    tensorboard_dir: str
    export_dir: str
    module: str | None = None
    script: str | None = None
    args: tuple[str, ...] = ()
    bundle: str | None = None
    steps_per_epoch: int | None = None
    warmup_epochs: float = 0.0
    layout_map: Mapping[str, tuple[str | None, ...]] = field(default_factory=dict)
    model_parallel: int = 1
    data: Mapping[str, str] = field(default_factory=dict)
    strategy_requested: str | None = None
    """``training.strategy`` as the spec wrote it (``auto`` or a name); None from older SDKs."""
    run_id: str | None = None
    """The run every attempt of this job belongs to (``cloudtrain.runs``); None when started by hand."""
    latest_file: str | None = None
    """Where the pointer to the newest verified export of the storage root goes; None: nowhere."""
    allow_cpu_fallback: bool = False
    """``resources.allow_cpu_fallback``: a replica planned with GPUs that sees none trains on the CPU
    instead of stopping (``cloudtrain_runtime.device_check``)."""
    steps_per_execution: int | str = field(default=AUTO, metadata={"doc": SWITCH_DOCS["steps_per_execution"]})
    jit_compile: bool | str = field(default=AUTO, metadata={"doc": SWITCH_DOCS["jit_compile"]})
    cache: bool | str = field(default=AUTO, metadata={"doc": SWITCH_DOCS["cache"]})
    prefetch: bool = field(default=True, metadata={"doc": SWITCH_DOCS["prefetch"]})
    parallel_map: bool = field(default=True, metadata={"doc": SWITCH_DOCS["parallel_map"]})
    hparams: Mapping[str, Value] = field(default_factory=dict)
    """A sweep trial's hyperparameter values, by name (``cloudtrain_runtime.hparams``); empty otherwise."""
    tuned: Mapping[str, str] = field(default_factory=dict)
    """A sweep's tuned parameters and their kinds (``int``, ``float``, ``str``); empty outside a sweep."""
    objective: str | None = None
    """The metric a sweep optimises, reported after every epoch; None outside a sweep."""
    tracking_uri: str | None = None
    """The MLflow tracking URI the chief logs the run to (``cloudtrain_runtime.tracking``); None: not tracked."""
    tracking_experiment: str | None = None
    """The MLflow experiment of the run; None outside tracking."""
    tracking_tags: Mapping[str, str] = field(default_factory=dict)
    """The spec's tags for the MLflow run, set where the runtime creates it; empty outside tracking."""
    log_model: bool = False
    """Log the export as an MLflow model too (``tracking.log_model``); else only its URI."""
    hang_timeout: int | str = HANG_TIMEOUT_DEFAULT
    """``training.hang_timeout``: seconds without a training step a replica waits at least before it
    ends the attempt with exit 75 (``cloudtrain_runtime.watchdog``), or ``off``."""

    @property
    def global_batch(self) -> int:
        """The batch of one step over all replicas: per-replica batch × replicas."""
        return self.per_replica_batch * self.replicas

    def __repr__(self) -> str:
        entry = self.module or self.script
        return (
            f"RuntimeConfig(name={self.name!r}, entry={entry!r}, replicas={self.replicas}, "
            f"global_batch={self.global_batch}, strategy={self.strategy!r})"
        )


FIELDS = tuple(f.name for f in dataclasses.fields(RuntimeConfig))
SWITCH_DEFAULTS = {f.name: f.default for f in dataclasses.fields(RuntimeConfig) if f.name in SWITCH_DOCS}
"""Each speed switch's default, for the spec's fields (``cloudtrain.spec.Training``)."""
_REQUIRED = tuple(
    f.name
    for f in dataclasses.fields(RuntimeConfig)
    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
)
_HINTS = typing.get_type_hints(RuntimeConfig)
_FLOATS = tuple(name for name, hint in _HINTS.items() if hint is float)


def parse(text: str, source: str) -> RuntimeConfig:
    """Parse the configuration JSON found in ``source`` (named in every error)."""
    try:
        raw = loads(text)
    except ValueError as err:
        raise ConfigError(f"{source}: the runtime configuration is not valid JSON ({err}).") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: the runtime configuration must be a JSON object.")
    return from_dict(raw, source)


def from_dict(raw: Mapping[str, Any], source: str) -> RuntimeConfig:
    """Build the config from its JSON object; unknown or missing keys and bad values are errors.

    Raises:
        ConfigError: naming ``source``, the key, what it must be and the value received.
    """
    unknown = sorted(set(raw) - set(FIELDS))
    missing = [name for name in _REQUIRED if name not in raw]
    if unknown or missing:
        raise ConfigError(
            f"{source}: runtime configuration keys do not match this runtime "
            f"(unknown: {shown(unknown) if unknown else 'none'}, missing: {missing or 'none'}). "
            "The SDK and the runtime in the image come from different cloudtrain versions: "
            "rebuild the image from containers/ or use image: auto."
        )
    for name, value in raw.items():
        expected = _expected(name, value)
        if expected:
            raise ConfigError(
                f"{source}: runtime configuration key {name!r} must be {expected}. Received: {name}={shown(value)}"
            )
    per_execution = raw.get("steps_per_execution", AUTO)
    problem = steps_per_execution_problem(per_execution, raw.get("steps_per_epoch"))
    if problem:
        raise ConfigError(f"{source}: training.steps_per_execution={per_execution} {problem}.")
    values = dict(raw)
    # Float fields stay floats however the number was written (a spec's `base: 1`), so the
    # JSON a config is written back as does not depend on it.
    values.update({name: float(values[name]) for name in _FLOATS if name in values})
    values["args"] = tuple(values.get("args", ()))
    values["layout_map"] = {key: tuple(axes) for key, axes in values.get("layout_map", {}).items()}
    return RuntimeConfig(**values)


def _expected(name: str, value: Any) -> str | None:
    """What ``value`` must be for the field ``name``, or None when it is fine."""
    hint = _HINTS[name]
    if name in SWITCH_DOCS:
        return switch_problem(name, value)
    if name == "hang_timeout":
        return hang_timeout_problem(value)
    if not _conforms(value, hint):
        return describe(hint)
    if _holds_nul(value):
        return "free of NUL characters"
    if name in CHOICES and value is not None and value not in CHOICES[name]:
        return "one of " + ", ".join(map(repr, CHOICES[name]))
    if name in _FLOATS and not _finite(value):
        return "a finite number"
    if name in COUNTS and value is not None and not 1 <= value <= COUNT_MAX:
        return f"a whole number from 1 to {COUNT_MAX}"
    if name == "name" and not _FOLDER_NAME.fullmatch(value):
        return "a folder name: a letter or digit, then letters, digits, '.', '_' or '-'"
    if name == "data" and not all(map(_FOLDER_NAME.fullmatch, value)):
        return "an object whose keys are channel names like 'train'"
    if name == "tuned" and not set(value.values()) <= set(KINDS):
        return f"an object of kinds ({', '.join(KINDS)})"
    if name == "hparams" and not all(map(_finite, (v for v in value.values() if not isinstance(v, str)))):
        return "an object of strings and finite numbers"
    return None


def as_dict(config: RuntimeConfig) -> dict[str, Any]:
    """The configuration as JSON-ready data; the sweep fields only in a sweep's trial, the tracking
    fields only in a tracked run, ``hang_timeout`` only where it is not the default.

    A job without ``tuning:``, ``tracking:`` or ``hang_timeout`` then travels exactly as it did
    before they existed.
    """
    values = dataclasses.asdict(config)
    optional = SWEEP_FIELDS + TRACKING_FIELDS
    if values["hang_timeout"] == HANG_TIMEOUT_DEFAULT:
        del values["hang_timeout"]
    return {name: value for name, value in values.items() if value or name not in optional}


def hang_timeout_problem(value: Any) -> str | None:
    """What ``training.hang_timeout`` must be when ``value`` is not allowed, else None.

    Example:
    >>> hang_timeout_problem(60) is None, hang_timeout_problem("off") is None
    (True, True)
    >>> hang_timeout_problem(0)
    "a whole number of seconds from 1 to 2147483647, or 'off'"
    """
    if value == OFF or (type(value) is int and 1 <= value <= COUNT_MAX):
        return None
    return f"a whole number of seconds from 1 to {COUNT_MAX}, or {OFF!r}"


def switch_problem(name: str, value: Any) -> str | None:
    """What the speed switch ``name`` must be when ``value`` is not allowed, else None.

    The spec (``cloudtrain.spec``) and the runtime both check with this, so the values
    allowed are written once.

    Example:
    >>> switch_problem("steps_per_execution", 16) is None
    True
    >>> switch_problem("cache", "yes")
    "'auto', true or false"
    """
    options = typing.get_args(_HINTS[name])
    takes_auto, counts = str in options, int in options
    if takes_auto and value == AUTO:
        return None
    if (counts and type(value) is int and 1 <= value <= COUNT_MAX) or (not counts and type(value) is bool):
        return None
    if counts:
        return f"'{AUTO}' or a whole number from 1 to {COUNT_MAX}" if takes_auto else "a whole number"
    return f"'{AUTO}', true or false" if takes_auto else "true or false"


def steps_per_execution_problem(steps_per_execution: int | str, steps_per_epoch: int | None) -> str | None:
    """Why this steps_per_execution cannot run with this steps_per_epoch; None when it can.

    With a fixed steps_per_epoch the data repeats, and Keras runs whole executions: an
    epoch of 10 steps at 4 per execution would train 12.

    Example:
    >>> steps_per_execution_problem(4, 10)
    'does not divide training.steps_per_epoch=10: each epoch would train 12 steps. Set training.steps_per_execution to a divisor of 10, or to auto'
    """
    if steps_per_execution == AUTO or not steps_per_epoch or steps_per_epoch % int(steps_per_execution) == 0:
        return None
    per_execution = int(steps_per_execution)
    trained = -(-steps_per_epoch // per_execution) * per_execution
    return (
        f"does not divide training.steps_per_epoch={steps_per_epoch}: each epoch would train {trained} "
        f"steps. Set training.steps_per_execution to a divisor of {steps_per_epoch}, or to {AUTO}"
    )


def _conforms(value: Any, hint: Any) -> bool:
    """Whether JSON ``value`` has the shape of the type hint (lists stand for tuples)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is types.UnionType:
        return any(_conforms(value, arg) for arg in args)
    if origin is tuple:
        return isinstance(value, list | tuple) and all(_conforms(item, args[0]) for item in value)
    if origin is Mapping:
        return isinstance(value, Mapping) and all(
            isinstance(key, str) and _conforms(item, args[1]) for key, item in value.items()
        )
    if hint is float:
        return type(value) in (int, float)
    return value is None if hint is type(None) else type(value) is hint


def describe(hint: Any, *, plural: bool = False) -> str:
    """A type hint in JSON's words.

    Example:
    >>> describe(typing.get_type_hints(RuntimeConfig)["layout_map"])
    'an object of lists of strings or nulls'
    """
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is types.UnionType:
        return " or ".join(describe(arg, plural=plural) for arg in args)
    if origin is tuple:
        return f"{'lists' if plural else 'a list'} of {describe(args[0], plural=True)}"
    if origin is Mapping:
        return f"{'objects' if plural else 'an object'} of {describe(args[1], plural=True)}"
    names = {
        str: ("a string", "strings"),
        int: ("an integer", "integers"),
        float: ("a number", "numbers"),
        bool: ("a boolean", "booleans"),
    }
    return names.get(hint, ("null", "nulls"))[plural]


def _holds_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, Mapping):
        return any(_holds_nul(key) or _holds_nul(item) for key, item in value.items())
    return isinstance(value, list | tuple) and any(map(_holds_nul, value))


def _finite(number: float) -> bool:
    try:
        return math.isfinite(number)
    except OverflowError:  # an integer too large for a float
        return False


def load(
    config_file: str | None,
    env: Mapping[str, str],
    root: str,
    carriers: Sequence[tuple[str, str]],
) -> RuntimeConfig:
    """The configuration from the first source found (see the module docstring).

    ``carriers`` are ``(label, fixed path)`` of the hyperparameter files the environments
    may write (``cloudtrain_runtime.environments.hyperparameter_files``).

    Raises:
        ConfigError: when no source exists or the one found is malformed.
    """
    if config_file:
        return parse(_read(Path(config_file), "--config"), f"--config {config_file}")
    if env.get(CONFIG_ENV):
        return parse(env[CONFIG_ENV], CONFIG_ENV)
    pieces = join_pieces(env, source="the environment", prefix=CONFIG_PIECES_ENV)
    if pieces:
        return parse(pieces, f"{CONFIG_PIECES_ENV}0, ...")
    for _, file in carriers:
        if under_root(root, file).is_file():
            return _from_hyperparameters(under_root(root, file))
    ways = ["Pass --config FILE", f"set {CONFIG_ENV} to the plan's runtime JSON"]
    ways += [f"({label}) set the hyperparameter {CONFIG_HYPERPARAMETER!r}" for label, _ in carriers]
    raise ConfigError(f"No runtime configuration found. {', '.join(ways[:-1])}, or {ways[-1]}.")


def _from_hyperparameters(path: Path) -> RuntimeConfig:
    try:
        hyperparameters = loads(_read(path, str(path)))
    except ValueError as err:
        raise ConfigError(f"{path}: not valid JSON ({err}).") from None
    if not isinstance(hyperparameters, dict):
        raise ConfigError(
            f"{path} must be a JSON object of hyperparameters (name: string). Received: {shown(hyperparameters)}"
        )
    value = hyperparameters.get(CONFIG_HYPERPARAMETER)
    if value is not None and not isinstance(value, str):
        raise ConfigError(
            f"{path}: the hyperparameter {CONFIG_HYPERPARAMETER!r} must be a string holding the plan's "
            f"runtime JSON. Received: {CONFIG_HYPERPARAMETER}={shown(value)}"
        )
    value = value or join_pieces(hyperparameters, source=str(path))
    if not value:
        raise ConfigError(
            f"{path} has no {CONFIG_HYPERPARAMETER!r} hyperparameters; set them to the plan's runtime JSON."
        )
    return parse(value, f"{path} [{CONFIG_HYPERPARAMETER}]")


def join_pieces(
    hyperparameters: Mapping[str, Any],
    *,
    source: str = "hyperparameters",
    prefix: str = f"{CONFIG_HYPERPARAMETER}_",
) -> str:
    """``cloudtrain_config_0``, ``_1``, ... joined in numeric order (``_10`` after ``_9``).

    The same pieces travel as environment variables ``CLOUDTRAIN_CONFIG_0``, ``_1``, ...
    (``prefix``) where the hyperparameters cannot carry them: a SageMaker sweep on a Deep
    Learning Container, whose training toolkit passes every hyperparameter to the trial's
    command as a word of a shell line (``sagemaker_training/process.py``), which JSON is not.

    Example:
    >>> join_pieces({"cloudtrain_config_1": "world", "cloudtrain_config_0": "hello ", "epochs": "3"})
    'hello world'
    >>> join_pieces({"CLOUDTRAIN_CONFIG_0": "{}", "HOME": "/root"}, prefix="CLOUDTRAIN_CONFIG_")
    '{}'

    Raises:
        ConfigError: for a piece that is not a string, is not numbered 0, 1, ... (no leading
            zeros), or leaves a gap.
    """
    pieces = {}
    for key, value in hyperparameters.items():
        if not key.startswith(prefix):
            continue
        number = key[len(prefix) :]
        if not _PIECE_NUMBER.fullmatch(number) or not isinstance(value, str):
            raise ConfigError(
                f"{source}: {shown(key)} is not a piece of the runtime configuration: pieces are "
                f"strings named {prefix}0, {prefix}1, ... Received: {shown(key)}={shown(value)}"
            )
        pieces[int(number)] = value
    gaps = sorted(set(range(len(pieces))) - set(pieces))
    if gaps:
        raise ConfigError(
            f"{source}: the runtime configuration pieces skip {prefix}{gaps[0]}; they must be numbered "
            f"{prefix}0 to {prefix}{len(pieces) - 1} without gaps."
        )
    return "".join(pieces[number] for number in range(len(pieces)))


def _read(path: Path, source: str) -> str:
    try:
        return path.read_text()
    except (OSError, ValueError) as err:  # ValueError: not UTF-8, or a NUL in the path
        reason = err.strerror if isinstance(err, OSError) else err
        raise ConfigError(f"{source}: cannot read {str(path)!r} ({reason}).") from None
