"""The environments a replica can run in, in one open registry, and the one place that tells which applies.

Each environment (``cloudtrain_runtime.replica.Environment``) owns what is particular to
it: how it is recognised, this replica's place in the cluster, the storage schemes its
containers open as folders, and where its artifacts go. They are asked in this order,
and the first that recognises the environment describes the replica:

- the built-ins (``cloudtrain_runtime.providers.BUILTIN``), imported here, so a stock
  TensorFlow image that holds only the bundled runtime finds them without any package
  metadata;
- the environments of installed packages, through the entry-point group
  ``cloudtrain.runtime_environments`` (none where the image has no such package)::

      [project.entry-points."cloudtrain.runtime_environments"]
      mycloud = "mycloud_cloudtrain.runtime:ENVIRONMENT"

- environments registered at run time (``register``);
- the neutral ones: any TF_CONFIG (the local provider, and any launcher that writes
  one), then the bare machine, which always matches: one host, rank 0.

Example:
>>> detect({"TF_CONFIG": '{"cluster": {}, "task": {"type": "worker"}}'}, "/").provider
'tf_config'
>>> detect({}, "/").provider
'bare'
>>> mounts()["gs://"]
'/gcs/'
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

from cloudtrain_runtime import entry_points, tfconfig
from cloudtrain_runtime.errors import ConfigError
from cloudtrain_runtime.providers import BUILTIN
from cloudtrain_runtime.replica import ClusterInfo, Environment, single_replica

ENTRY_POINT_GROUP = "cloudtrain.runtime_environments"
# Set by a launcher that gives each trial a run id of its own (the local sweep's driver:
# ``<sweep run id>-t<N>``): the trial's id, and a sign that the run id names the trial already.
TRIAL_RUN_ENV = "CLOUDTRAIN_TRIAL"
_registered: dict[str, Environment] = {}


class BareMachine(Environment):
    """No cluster described anywhere: a single replica, the chief, on this machine."""

    provider = "bare"
    label = "bare machine"

    def detects(self, env: Mapping[str, str], root: str) -> bool:
        return True

    def cluster(self, env: Mapping[str, str], root: str) -> ClusterInfo:
        return single_replica(self.provider, self.mount(root))


NEUTRAL: tuple[Environment, ...] = (tfconfig.ENVIRONMENT, BareMachine())


def every() -> tuple[Environment, ...]:
    """Every environment, in the order they are asked (see the module docstring)."""
    own = {environment.provider for environment in BUILTIN}
    installed = [environment for name, environment in _installed().items() if name not in own]
    return (*BUILTIN, *installed, *_registered.values(), *NEUTRAL)


def detect(env: Mapping[str, str], root: str) -> Environment:
    """The first environment that recognises ``env`` and the files under ``root``."""
    return next(environment for environment in every() if environment.detects(env, root))


def named(provider: str) -> Environment:
    """The environment that reports ``provider`` as ``ClusterInfo.provider``.

    Raises:
        ValueError: when no environment reports ``provider``.
    """
    found = {environment.provider: environment for environment in every()}
    if provider not in found:
        raise ValueError(f"No environment adapter reports provider {provider!r}; known: {sorted(found)}")
    return found[provider]


@dataclass(frozen=True)
class TrialRun:
    """A sweep trial as its MLflow run knows it: the trial's run id, and the provider's id of the trial."""

    run: str
    trial: str


def trial_of(run: str, env: Mapping[str, str], provider: str) -> TrialRun | None:
    """Which trial of a sweep this replica of ``run`` trains; None where nothing names one.

    Ask only in a sweep's trial (a config with ``hparams``). Where the launcher named the
    trial's run (``TRIAL_RUN_ENV``), ``run`` is the trial's already. Elsewhere every trial runs
    under the sweep's run id, and the environment of ``provider`` tells the trials apart
    (``Environment.trial``): the trial's run is ``<run>-t<trial>``, as the local sweep names its trials.

    Example:
    >>> trial_of("sweep-1-t2", {"CLOUDTRAIN_TRIAL": "sweep-1-t2"}, "tf_config")
    TrialRun(run='sweep-1-t2', trial='sweep-1-t2')
    >>> trial_of("sweep-1", {}, "bare") is None
    True
    """
    if env.get(TRIAL_RUN_ENV):
        return TrialRun(run, env[TRIAL_RUN_ENV])
    trial = named(provider).trial(env)
    return TrialRun(f"{run}-t{trial}", trial) if trial else None


def mounts() -> dict[str, str]:
    """Where each storage scheme opens under the root, from every environment (the first to declare it wins).

    The local provider keeps a stand-in bucket of each scheme at the same place, so a
    URI means the same folder whichever environment a replica finds itself in.
    """
    found: dict[str, str] = {}
    for environment in every():
        for scheme, folder in environment.mounts.items():
            found.setdefault(scheme, folder)
    return found


def hyperparameter_files() -> list[tuple[str, str]]:
    """``(label, fixed path)`` of each environment that can carry the runtime config as hyperparameters."""
    return [(e.label, file) for e in every() if (file := e.hyperparameters_file)]


def register(environment: Environment) -> None:
    """Add ``environment`` for the rest of this process, before the neutral ones (tests, hand-loaded plugins)."""
    _registered[environment.provider] = environment


def unregister(provider: str) -> None:
    """Undo ``register``."""
    _registered.pop(provider, None)


def forget_entry_points() -> None:
    """Read the entry points again on next use (after installing or removing a package in-process)."""
    entry_points.forget()
    _installed.cache_clear()


@functools.cache
def _installed() -> dict[str, Environment]:
    """The environments of installed packages, by entry point name; none without package metadata."""
    found: dict[str, Environment] = {}
    for entry in entry_points.group(ENTRY_POINT_GROUP):
        try:
            environment = entry.load()
        except Exception as exc:
            raise ConfigError(
                f"The runtime environment {entry.name!r} ({entry.value}) failed to load: {exc}. "
                "Reinstall the package that provides it in the image, or uninstall it."
            ) from exc
        if not isinstance(environment, Environment):
            raise ConfigError(
                f"The runtime environment {entry.name!r} ({entry.value}) is a {type(environment).__name__}, "
                "not a cloudtrain_runtime.replica.Environment. Fix the package's entry point."
            )
        found[entry.name] = environment
    return found
