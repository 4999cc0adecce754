"""A trial's hyperparameters: where each provider hands them over, what they override, the objective.

A sweep (the spec's ``tuning:`` section) runs the same job many times with other values.
The configuration of a trial says which parameters are tuned (``tuned``: name -> ``int``,
``float`` or ``str``) and which metric is the objective; the values themselves arrive
the way the provider hands them to a trial:

- **Vertex AI**: command-line arguments appended to the container's own. "Vertex AI
  passes hyperparameter values to your training application as command-line arguments"
  and starts a trial as ``python3 -m my_trainer --learning_rate learning-rate-in-this-trial``
  (https://cloud.google.com/vertex-ai/docs/training/using-hyperparameter-tuning,
  "Handle command-line arguments for the hyperparameters you want to tune"); both
  ``--name value`` and ``--name=value`` are read.
- **SageMaker**: ``/opt/ml/input/config/hyperparameters.json``, one string per tuned
  parameter beside the static ones (CreateHyperParameterTuningJob's
  ``StaticHyperParameters``, which carry the runtime configuration).
- **Here** (the local provider): the configuration's own ``hparams``, filled in by the
  SDK for each trial.

User code reads the values as ``config.hparams["name"]`` (``build_model(config)``,
``compile_args(config)``) and ``context.hparams`` (``make_dataset(context)``). Three names
also set the spec's own fields, applied here so every provider trains alike (``OVERRIDES``):
``learning_rate`` is the base rate of one replica, scaled as the plan scaled it;
``per_replica_batch``; ``epochs``.

Example:
>>> from_flags(["--learning_rate", "0.01", "--width=32"], {"learning_rate": "float", "width": "int"})
({'learning_rate': 0.01, 'width': 32}, [])
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cloudtrain_runtime import config as config_lib
from cloudtrain_runtime import environments
from cloudtrain_runtime.config import RuntimeConfig, Value
from cloudtrain_runtime.errors import ConfigError
from cloudtrain_runtime.inputs import loads, shown
from cloudtrain_runtime.paths import under_root

# The spec's fields a tuned parameter of the same name sets, and the kind it must be.
OVERRIDES = {
    "learning_rate": ("training.learning_rate.base", "float"),
    "per_replica_batch": ("training.per_replica_batch", "int"),
    "epochs": ("training.epochs", "int"),
}
# Names a parameter may not take: the runtime's own flags (--config, --help).
RESERVED = ("config", "help")


def parse_value(name: str, kind: str, text: str) -> Value:
    """``text`` as the parameter's kind: ``16`` and ``16.0`` are the int 16; floats are finite.

    Raises:
        ConfigError: naming the parameter, its kind and the text received.
    """
    if kind == "str":
        return text
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or (kind == "int" and not number.is_integer()):
        what = "a whole number" if kind == "int" else "a finite number"
        raise ConfigError(f"tuned parameter {name!r} must be {what}. Received: {name}={shown(text)}")
    return int(number) if kind == "int" else number


def from_flags(argv: Sequence[str], tuned: Mapping[str, str]) -> tuple[dict[str, Value], list[str]]:
    """The tuned values among command-line arguments, and the arguments that are not theirs.

    Example:
    >>> from_flags(["--units", "8", "--other"], {"units": "int"})
    ({'units': 8}, ['--other'])
    """
    values: dict[str, Value] = {}
    rest: list[str] = []
    words = list(argv)
    while words:
        word = words.pop(0)
        name, equals, text = word.removeprefix("--").partition("=")
        if not word.startswith("--") or name not in tuned:
            rest.append(word)
            continue
        if not equals:
            if not words:
                raise ConfigError(f"tuned parameter {name!r} has no value: --{name} ends the command line.")
            text = words.pop(0)
        values[name] = parse_value(name, tuned[name], text)
    return values, rest


def from_hyperparameters(hyperparameters: Mapping[str, Any], tuned: Mapping[str, str]) -> dict[str, Value]:
    """The tuned values in a hyperparameters.json object (strings, as SageMaker writes them)."""
    return {
        name: parse_value(name, kind, str(hyperparameters[name]))
        for name, kind in tuned.items()
        if name in hyperparameters
    }


def for_trial(config: RuntimeConfig, argv: Sequence[str], root: str) -> RuntimeConfig:
    """``config`` with the trial's values from the command line or a hyperparameters file.

    Outside a sweep there are none, and a word on the command line is an error.

    Raises:
        ConfigError: an argument the runtime does not know, or a value of the wrong kind.
    """
    values, rest = from_flags(argv, config.tuned)
    if rest:
        raise ConfigError(
            f"unrecognized arguments: {shown(' '.join(rest))}. The runtime takes --config FILE"
            + (f" and the tuned parameters ({', '.join(sorted(config.tuned))})." if config.tuned else ".")
        )
    if not config.tuned:
        return config
    for environment in environments.ALL:
        file = environment.hyperparameters_file
        if file and under_root(root, file).is_file():
            values = {**from_hyperparameters(_read_object(under_root(root, file)), config.tuned), **values}
    return apply(config, values)


def _read_object(path: Any) -> Mapping[str, Any]:
    try:
        found = loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ConfigError(f"{path}: cannot read the trial's hyperparameters ({err}).") from None
    if not isinstance(found, dict):
        raise ConfigError(f"{path} must be a JSON object of hyperparameters. Received: {shown(found)}")
    return found


def apply(config: RuntimeConfig, values: Mapping[str, Value]) -> RuntimeConfig:
    """``config`` for the trial: ``values`` over its ``hparams``, and the spec fields they set.

    Every tuned parameter must have a value by now.

    Raises:
        ConfigError: a tuned parameter has no value, or an override is out of range.
    """
    hparams = {**config.hparams, **values}
    missing = sorted(set(config.tuned) - set(hparams))
    if missing:
        raise ConfigError(
            f"tuned parameter {missing[0]!r} has no value for this trial: the provider passes each "
            f"tuned parameter as --{missing[0]}=VALUE or in the hyperparameters file."
        )
    changes: dict[str, Any] = {"hparams": hparams}
    if "learning_rate" in hparams:
        scale = config.learning_rate / config.base_learning_rate
        changes["base_learning_rate"] = float(hparams["learning_rate"])
        changes["learning_rate"] = round(float(hparams["learning_rate"]) * scale, 12)
    for name in ("per_replica_batch", "epochs"):
        if name in hparams:
            changes[name] = hparams[name]
    trial = dataclasses.replace(config, **changes)
    return config_lib.from_dict(dataclasses.asdict(trial), "the trial's hyperparameters")


class ObjectiveReport:
    """Hands the objective to the provider after every epoch (chief only), as its service reads it.

    ``report(epoch, value)`` is the environment's (``Environment.report_objective``): Vertex
    AI reads a metrics file, SageMaker and this machine the ``epoch N/M name=value`` log
    line the progress callback prints anyway.
    """

    def __init__(self, metric: str, report: Callable[[int, float], None]) -> None:
        super().__init__()
        self.metric, self.report = metric, report

    def on_epoch_end(self, epoch: int, logs: Mapping[str, Any] | None = None) -> None:
        logs = logs or {}
        if self.metric not in logs:
            raise ConfigError(
                f"tuning.objective.metric {self.metric!r} is not among the metrics of epoch {epoch + 1} "
                f"({', '.join(sorted(logs)) or 'none'}). Name one of them, e.g. val_loss."
            )
        self.report(epoch + 1, float(logs[self.metric]))
