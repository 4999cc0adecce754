"""The provider interface: one module per provider, the same four functions in each.

``render(plan) -> dict`` is pure: the exact request body, golden-tested and printed by
``--dry-run``. ``submit(plan, request, bundle, clients=None) -> Job`` is the only place
a job is created. ``attach(job_id, clients=None) -> Job`` reconnects to a job for
``status``/``logs``/``cancel``; ``owns(job_id)`` says whether an ID belongs to the
provider, so ``cloudtrain status ID`` needs no ``--provider``. Cloud SDKs are imported
inside those functions only, so importing a provider module is cheap.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol

from cloudtrain.errors import CloudtrainError, did_you_mean

NAMES = ("local", "vertex", "sagemaker")

# Neutral job states, shared by every provider's Job.status().
TERMINAL_STATES = ("succeeded", "failed", "cancelled")


@dataclass(frozen=True)
class JobStatus:
    """A job's state in neutral words, the provider's own word, and a detail line."""

    state: str
    provider_state: str
    detail: str = ""

    @property
    def done(self) -> bool:
        return self.state in TERMINAL_STATES


class Job(Protocol):
    """A submitted job, whatever the provider."""

    id: str
    provider: str
    request: dict[str, Any] | None

    def status(self) -> JobStatus: ...

    def logs(self, follow: bool = False) -> Iterator[str]: ...

    def cancel(self) -> None: ...

    def wait(
        self, poll_s: float = 30.0, on_status: Callable[[JobStatus], None] | None = None
    ) -> JobStatus: ...


def poll_until_done(
    status: Callable[[], JobStatus],
    sleep: Callable[[float], None],
    poll_s: float,
    on_status: Callable[[JobStatus], None] | None = None,
) -> JobStatus:
    """``Job.wait`` for any provider: poll ``status`` every ``poll_s`` until it is terminal.

    ``on_status`` sees the first status and then every change, not every poll.
    """
    last = None
    while True:
        current = status()
        if on_status is not None and current != last:
            on_status(current)
        if current.done:
            return current
        last = current
        sleep(poll_s)


def backend(name: str) -> ModuleType:
    """The provider module ``cloudtrain.providers.<name>``."""
    if name not in NAMES:
        raise CloudtrainError(f"Unknown provider {name!r}.{did_you_mean(name, NAMES)}")
    return importlib.import_module(f"cloudtrain.providers.{name}")


def backend_for_job(job_id: str) -> ModuleType:
    """The provider that owns ``job_id`` (Vertex resource name, SageMaker ARN or name, local ID)."""
    for name in NAMES:
        module = backend(name)
        if module.owns(job_id):
            return module
    raise CloudtrainError(
        f"Cannot tell which provider job {job_id!r} belongs to. Pass --provider vertex|sagemaker|local."
    )
