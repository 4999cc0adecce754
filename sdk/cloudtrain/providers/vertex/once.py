"""One Vertex AI job per request, however many submits race: look, create, then reconcile.

The caller cannot choose a job's ID, which would make a second create fail:
``CreateCustomJobRequest`` and ``CreateHyperparameterTuningJobRequest`` hold only
``parent`` and the job, and a job's ``name`` is output only (google-cloud-aiplatform
2.7.0, ``aiplatform_v1/types/job_service.py``, ``types/custom_job.py`` and
``types/hyperparameter_tuning_job.py``; ``aiplatform_v1beta1`` is the same, and the REST
``projects.locations.customJobs.create`` takes no ID either). So every submit of a kind
of job (``Kind``) does the same three steps, keyed by the request's hash label
(``cloudtrain_request``, which ``render`` stamps):

1. **Look.** The newest job made from the request that is queued, running or succeeded
   is the one to attach to; a failed, cancelled or expired one does not count, so a
   submit after a failure retries.
2. **Create**, retrying transient errors; a create whose answer was lost may have made
   the job, so every retry looks again first.
3. **Reconcile.** Two submits that both looked before either created both create. Each
   lists the request's jobs again after its own create, and all agree on the earliest
   (by ``create_time``, then name): every racer lists after its own create, so the one
   that lists last sees every job, and the earliest is the same in every answer that
   holds it. A racer whose job is not the earliest cancels its own at once, while it
   still queues, and returns the earliest. The cancelled duplicate stays listed as
   cancelled; it never ran.

Example:
>>> CUSTOM_JOB.method("Create"), TUNING_JOB.method("List")
('CreateCustomJob', 'ListHyperparameterTuningJobs')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cloudtrain.providers.vertex.clients import with_retries
from cloudtrain.providers.vertex.names import REUSABLE_STATES, STATES, api_call
from cloudtrain.providers.vertex.render import REQUEST_LABEL

Sleep = Callable[[float], None]


@dataclass(frozen=True)
class Kind:
    """A kind of Vertex AI job: its ``JobServiceClient`` calls, the create request's field, its RPC names."""

    noun: str
    field: str
    create: str
    list: str
    cancel: str
    rpc: str

    def method(self, verb: str) -> str:
        """The RPC's name, as errors and the fake JobService name it: ``CreateCustomJob``, ``ListCustomJobs``."""
        return f"{verb}{self.rpc}{'s' if verb == 'List' else ''}"


CUSTOM_JOB = Kind(
    "custom job", "custom_job", "create_custom_job", "list_custom_jobs", "cancel_custom_job", "CustomJob"
)
TUNING_JOB = Kind(
    "tuning job",
    "hyperparameter_tuning_job",
    "create_hyperparameter_tuning_job",
    "list_hyperparameter_tuning_jobs",
    "cancel_hyperparameter_tuning_job",
    "HyperparameterTuningJob",
)


@dataclass(frozen=True)
class Submitted:
    """The job a submit returns, and whether an earlier submit had made it."""

    name: str
    attached: bool


def submit_once(service: Any, parent: str, key: str, message: Any, kind: Kind, sleep: Sleep) -> Submitted:
    """The one job of request ``key`` under ``parent``: found, or created and reconciled (module docstring).

    Args:
        service: the region's ``JobServiceClient``.
        parent: ``projects/P/locations/L``.
        key: the request's ``cloudtrain_request`` label.
        message: the job to create (an ``aiplatform_v1`` message of ``kind``).
        kind: which kind of job.
        sleep: how retries wait.

    Raises:
        GoogleCallError: a call failed for good.
    """
    existing = find(service, parent, key, kind, sleep)
    if existing is not None:
        return Submitted(existing, attached=True)
    created = _create(service, parent, key, message, kind, sleep)
    return Submitted(_keep_earliest(service, parent, key, created, kind, sleep), attached=False)


def find(service: Any, parent: str, key: str, kind: Kind, sleep: Sleep) -> str | None:
    """The newest job of ``kind`` under ``parent`` made from request ``key`` that is not failed or cancelled."""
    newest = max(_reusable(service, parent, key, kind, sleep), key=lambda job: job.create_time, default=None)
    return newest.name if newest is not None else None


def _create(service: Any, parent: str, key: str, message: Any, kind: Kind, sleep: Sleep) -> str:
    """Create the job, retrying transient errors, looking for it again before each retry."""
    tried = False

    def create_once() -> str:
        nonlocal tried
        earlier = find(service, parent, key, kind, sleep) if tried else None
        tried = True
        return earlier or str(getattr(service, kind.create)(parent=parent, **{kind.field: message}).name)

    return with_retries(
        create_once, api_call(kind.method("Create"), f"create a {kind.noun} in {parent}", parent), sleep=sleep
    )


def _keep_earliest(service: Any, parent: str, key: str, created: str, kind: Kind, sleep: Sleep) -> str:
    """The job to keep after creating ``created``: the earliest made from request ``key``."""
    earliest = min(
        _reusable(service, parent, key, kind, sleep),
        key=lambda job: (job.create_time, job.name),
        default=None,
    )
    if earliest is None or earliest.name == created:
        return created
    with_retries(
        lambda: getattr(service, kind.cancel)(name=created),
        api_call(kind.method("Cancel"), f"cancel the duplicate {kind.noun} {created}", parent),
        sleep=sleep,
    )
    return str(earliest.name)


def _reusable(service: Any, parent: str, key: str, kind: Kind, sleep: Sleep) -> list[Any]:
    """The jobs of ``kind`` under ``parent`` made from request ``key`` that are queued, running or succeeded."""
    query = {"parent": parent, "filter": f'labels.{REQUEST_LABEL}="{key}"'}
    jobs = with_retries(
        lambda: list(getattr(service, kind.list)(request=query)),
        api_call(kind.method("List"), f"list {kind.noun}s in {parent}", parent),
        sleep=sleep,
    )
    return [job for job in jobs if STATES[job.state.name] in REUSABLE_STATES]
