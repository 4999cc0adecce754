"""The runtime configuration: what the plan resolved for the container, defined once, here.

The SDK builds it (``cloudtrain.planning.Plan.runtime``) and sends it as compact JSON;
the runtime parses it back. The container may be a stock TensorFlow image with nothing
but this package shipped in the code bundle, so it is a frozen dataclass read with the
standard library, not pydantic.

Sources, first found wins: ``--config FILE``, the ``CLOUDTRAIN_CONFIG`` environment
variable, then SageMaker's ``/opt/ml/input/config/hyperparameters.json``: the keys
``cloudtrain_config_0``, ``_1``, ... joined in order (SageMaker caps Environment values at
512 characters and hyperparameter values at 256, so the JSON travels in pieces), or a
single ``cloudtrain_config``.

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
import json
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cloudtrain_runtime.errors import ConfigError
from cloudtrain_runtime.paths import under_root

CONFIG_ENV = "CLOUDTRAIN_CONFIG"
HYPERPARAMETERS = "/opt/ml/input/config/hyperparameters.json"
CONFIG_HYPERPARAMETER = "cloudtrain_config"


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
_REQUIRED = tuple(
    f.name
    for f in dataclasses.fields(RuntimeConfig)
    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
)
_FLOATS = tuple(name for name, hint in typing.get_type_hints(RuntimeConfig).items() if hint is float)


def parse(text: str, source: str) -> RuntimeConfig:
    """Parse the configuration JSON found in ``source`` (named in every error)."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"{source}: the runtime configuration is not valid JSON ({err}).") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: the runtime configuration must be a JSON object.")
    return from_dict(raw, source)


def from_dict(raw: Mapping[str, Any], source: str) -> RuntimeConfig:
    """Build the config from its JSON object; unknown or missing keys are errors."""
    unknown = sorted(set(raw) - set(FIELDS))
    missing = [name for name in _REQUIRED if name not in raw]
    if unknown or missing:
        raise ConfigError(
            f"{source}: runtime configuration keys do not match this runtime "
            f"(unknown: {unknown or 'none'}, missing: {missing or 'none'}). "
            "The SDK and the runtime in the image come from different cloudtrain versions: "
            "rebuild the image from containers/ or use image: auto."
        )
    values = dict(raw)
    # Float fields stay floats however the number was written (a spec's `base: 1`), so the
    # JSON a config is written back as does not depend on it.
    values.update({name: float(values[name]) for name in _FLOATS if name in values})
    values["args"] = tuple(values.get("args", ()))
    values["layout_map"] = {key: tuple(axes) for key, axes in values.get("layout_map", {}).items()}
    return RuntimeConfig(**values)


def load(config_file: str | None, env: Mapping[str, str], root: str) -> RuntimeConfig:
    """The configuration from the first source found (see the module docstring).

    Raises:
        ConfigError: when no source exists or the one found is malformed.
    """
    if config_file:
        return parse(_read(Path(config_file), "--config"), f"--config {config_file}")
    if env.get(CONFIG_ENV):
        return parse(env[CONFIG_ENV], CONFIG_ENV)
    hyperparameters = under_root(root, HYPERPARAMETERS)
    if hyperparameters.is_file():
        return _from_hyperparameters(hyperparameters)
    raise ConfigError(
        f"No runtime configuration found. Pass --config FILE, set {CONFIG_ENV} to the plan's "
        f"runtime JSON, or (SageMaker) set the hyperparameter {CONFIG_HYPERPARAMETER!r}."
    )


def _from_hyperparameters(path: Path) -> RuntimeConfig:
    try:
        hyperparameters = json.loads(_read(path, str(path)))
    except json.JSONDecodeError as err:
        raise ConfigError(f"{path}: not valid JSON ({err}).") from None
    value = hyperparameters.get(CONFIG_HYPERPARAMETER) or join_pieces(hyperparameters)
    if not value:
        raise ConfigError(
            f"{path} has no {CONFIG_HYPERPARAMETER!r} hyperparameters; set them to the plan's runtime JSON."
        )
    return parse(value, f"{path} [{CONFIG_HYPERPARAMETER}]")


def join_pieces(hyperparameters: dict[str, str]) -> str:
    """``cloudtrain_config_0``, ``_1``, ... joined in numeric order (``_10`` after ``_9``).

    Example:
    >>> join_pieces({"cloudtrain_config_1": "world", "cloudtrain_config_0": "hello ", "epochs": "3"})
    'hello world'
    """
    prefix = f"{CONFIG_HYPERPARAMETER}_"
    pieces = {int(k.removeprefix(prefix)): v for k, v in hyperparameters.items() if k.startswith(prefix)}
    return "".join(pieces[i] for i in sorted(pieces))


def _read(path: Path, source: str) -> str:
    try:
        return path.read_text()
    except OSError as err:
        raise ConfigError(f"{source}: cannot read {str(path)!r} ({err.strerror}).") from None
