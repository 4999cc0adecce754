"""What an environment tells this replica, and the adapter that reads it.

An ``Environment`` adapter recognises one kind of environment (a provider's container,
a plain TF_CONFIG, a bare machine) and translates it into neutral answers: this
replica's place in the job (``ClusterInfo``), the paths it reads and writes
(``Locations``) and where durable storage is mounted. ``cloudtrain_runtime.environments``
asks the adapters in order; the rest of the runtime sees only the answers.

Example:
>>> info = single_replica("bare", Path("/"))
>>> info.rank, info.is_chief, info.task_id, info.num_hosts
(0, True, 'chief_0', 1)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from cloudtrain_runtime.paths import storage_path

if TYPE_CHECKING:
    from cloudtrain_runtime.config import RuntimeConfig

RESULT_FILE = "cloudtrain-result.json"
THROUGHPUT_FILE = "cloudtrain-throughput.json"
HISTORY_FILE = "cloudtrain-history.json"
PROGRESS_FILE = "cloudtrain-progress.json"
COMPLETE_FILE = "cloudtrain-complete.json"


@dataclass(frozen=True)
class ClusterInfo:
    """This replica's place in the job, whatever the provider.

    Attributes:
        provider: the adapter that described it: ``vertex``, ``sagemaker``, ``tf_config`` or ``bare``.
        task_type: the TF_CONFIG task type (``chief``, ``worker``); ``worker`` when bare.
        task_index: index within ``task_type``.
        rank: 0..num_hosts-1, the chief first.
        is_chief: whether this replica writes the export, logs and results.
        hosts: every host's ``address:port`` in rank order.
        devices_per_host: local accelerators (or emulated CPU devices) per host.
        device_kind: ``gpu``, ``tpu`` or ``cpu``, as found on this host.
        storage_mount: where durable storage is mounted in this container.
        tf_config: the TF_CONFIG the runtime must set itself (SageMaker), else None.
    """

    provider: str
    task_type: str
    task_index: int
    rank: int
    is_chief: bool
    hosts: tuple[str, ...]
    storage_mount: Path
    devices_per_host: int = 1
    device_kind: str = "cpu"
    tf_config: Mapping[str, Any] | None = None

    @property
    def num_hosts(self) -> int:
        return len(self.hosts)

    @property
    def task_id(self) -> str:
        """A stable, filesystem-safe name for this task, e.g. ``worker_1``."""
        return f"{self.task_type}_{self.task_index}"

    def with_devices(self, devices_per_host: int, device_kind: str) -> ClusterInfo:
        return replace(self, devices_per_host=devices_per_host, device_kind=device_kind)

    def __repr__(self) -> str:
        return (
            f"ClusterInfo(provider={self.provider!r}, task={self.task_id!r}, rank={self.rank}, "
            f"num_hosts={self.num_hosts}, devices_per_host={self.devices_per_host})"
        )


def single_replica(provider: str, mount: Path) -> ClusterInfo:
    """A job of one replica, its chief."""
    return ClusterInfo(provider, "chief", 0, 0, True, ("localhost",), mount)


@dataclass(frozen=True)
class Locations:
    """Absolute paths this replica uses; only the chief writes export, logs and results.

    Attributes:
        latest: where the pointer to the storage root's newest verified export goes; None
            where this replica cannot reach the storage root.
        keep_backups: why the run's backup must outlive its verified export here; None
            where the export is durable once written, and the backup is emptied then.
        progress_in_backup: the progress record goes into the backup folder, beside the
            durable history, rather than beside the result: where the provider copies the
            results out only when the job ends, and the backup folder while it runs (SageMaker).
    """

    backup: Path
    tensorboard: Path
    export: Path
    results: Path
    channels: Mapping[str, Path]
    latest: Path | None = None
    keep_backups: str | None = None
    progress_in_backup: bool = False

    @property
    def result_file(self) -> Path:
        return self.results / RESULT_FILE

    @property
    def throughput_file(self) -> Path:
        return self.results / THROUGHPUT_FILE

    @property
    def history_file(self) -> Path:
        """The run's per-epoch history beside the result (``cloudtrain_runtime.history``)."""
        return self.results / HISTORY_FILE

    @property
    def progress_file(self) -> Path:
        """Where the chief keeps the latest step of training (``cloudtrain_runtime.progress``): beside the
        history, or the durable history (``progress_in_backup``)."""
        return (self.backup if self.progress_in_backup else self.results) / PROGRESS_FILE

    @property
    def durable_history_file(self) -> Path:
        """The history's copy a restarted attempt reads: in the backup folder, beside the stamp."""
        return self.backup / HISTORY_FILE

    @property
    def completion_file(self) -> Path:
        """The completion marker, next to the export (``cloudtrain_runtime.backups``)."""
        return self.export.parent / COMPLETE_FILE

    @classmethod
    def from_uris(
        cls,
        config: RuntimeConfig,
        root: str,
        mounts: Mapping[str, str],
        overrides: Mapping[str, str] | None = None,
    ) -> Locations:
        """The config's storage URIs as paths (``mounts``: where each scheme opens), ``overrides`` (by role) replacing them.

        The roles are ``export``, ``backup`` and ``tensorboard``; the results go next to
        the export, in its parent folder.
        """
        uris = {
            "export": config.export_dir,
            "backup": config.backup_dir,
            "tensorboard": config.tensorboard_dir,
        }
        uris.update(overrides or {})
        paths = {role: storage_path(uri, root, mounts) for role, uri in uris.items()}
        return cls(
            backup=paths["backup"],
            tensorboard=paths["tensorboard"],
            export=paths["export"],
            results=paths["export"].parent,
            channels={name: storage_path(uri, root, mounts) for name, uri in config.data.items()},
            latest=storage_path(config.latest_file, root, mounts) if config.latest_file else None,
        )


class Environment(ABC):
    """One kind of environment a replica can run in; the adapters are asked in order.

    Attributes:
        provider: the ``ClusterInfo.provider`` this adapter reports.
        label: how messages name the environment.
        peer_hint: set where peers' host names resolve only some time after start-up:
            the runtime then waits for them, and ends its error with this hint when one
            never resolves. None where names resolve before the container starts.
        hyperparameters_file: the fixed path of a JSON object of hyperparameters that
            can carry the runtime configuration, or None.
        mounts: the storage schemes this environment's containers open as folders, and
            the folder under the root each opens at (``{"gs://": "/gcs/"}``).
        grace_s: the seconds between the provider's SIGTERM and its SIGKILL, where the
            environment fixes them (``cloudtrain_runtime.notice``); None: ``CLOUDTRAIN_GRACE_S``
            or the shortest default.
    """

    provider: ClassVar[str]
    label: ClassVar[str]
    peer_hint: ClassVar[str | None] = None
    hyperparameters_file: ClassVar[str | None] = None
    mounts: ClassVar[Mapping[str, str]] = MappingProxyType({})
    grace_s: ClassVar[float | None] = None

    @abstractmethod
    def detects(self, env: Mapping[str, str], root: str) -> bool:
        """Whether ``env`` and the files under ``root`` look like this environment."""

    @abstractmethod
    def cluster(self, env: Mapping[str, str], root: str) -> ClusterInfo:
        """This replica's place in the job.

        Raises:
            ClusterError: when the environment describes a cluster the runtime cannot join.
        """

    def mount(self, root: str) -> Path:
        """Where durable storage is mounted: the root itself unless the environment mounts it."""
        return Path(root)

    def locations(
        self, config: RuntimeConfig, env: Mapping[str, str], root: str, mounts: Mapping[str, str]
    ) -> Locations:
        """The paths this replica uses: the config's storage URIs unless the environment fixes them.

        ``mounts`` says where each scheme opens (``cloudtrain_runtime.environments.mounts``).
        """
        return Locations.from_uris(config, root, mounts)

    def objective_reporter(
        self, env: Mapping[str, str], root: str
    ) -> Callable[[str, int, float], None] | None:
        """How a sweep trial hands its objective to the provider, ``report(metric, epoch, value)``.

        None where the ``epoch N/M name=value`` log line, printed anyway, is the report
        (SageMaker's MetricDefinitions, the local provider's search).
        """
        return None

    def trial(self, env: Mapping[str, str]) -> str | None:
        """The provider's id of the sweep trial this replica trains, from what the provider sets; None
        where it sets none.

        Asked only in a sweep's trial whose run id is the sweep's (``environments.trial_of``):
        the provider's trials share their tuning job's configuration, so only the
        environment tells them apart.
        """
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(provider={self.provider!r})"
