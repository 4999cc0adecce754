"""cloudtrain as an Airflow task: stage and submit in ``execute``, wait in the triggerer, not a worker.

``CloudtrainTrainingOperator`` stages the job (``cloudtrain.stage``: plan, pack and upload
the code once, render the provider's request), submits it, pushes the job ID to XCom
and defers to ``CloudtrainJobTrigger``, which polls the job's neutral status from the
triggerer. A deferred task holds no worker slot ("Deferrable Operators & Triggers",
https://airflow.apache.org/docs/apache-airflow/3.3.2/authoring-and-scheduling/deferring.html).
When the job ends the task resumes in ``execute_complete``: it returns the job's outputs
(model, backup, TensorBoard, logs, result, throughput URIs) as its XCom return value, or
fails with the job's state and detail.

Retries and reruns: the idempotency key is (request, run id), and the run id defaults to
Airflow's run id, so a retry of the task stages the same request under the same run id
and attaches to the job it made (unless that job failed or was cancelled), while the
next scheduled run is a new job. Airflow's run ids (``scheduled__2026-12-03T00:00:00+00:00``)
are not run ids cloudtrain accepts; ``run_id_for`` maps them onto one, the same each time.

The classes are built on first use (``from cloudtrain.pipelines.airflow import
CloudtrainTrainingOperator``), so this module imports without Airflow; their work is in
the plain functions below. Operators come from the Task SDK (``airflow.sdk``); triggers still live in airflow-core
(``airflow.triggers.base``), which is where the Task SDK's own ``BaseOperator.defer`` takes
them from (apache-airflow-task-sdk 1.3, ``airflow/sdk/bases/operator.py``).

Example:
>>> train = CloudtrainTrainingOperator(task_id="train", spec="job.yaml")  # doctest: +SKIP
>>> run_id_for("scheduled__2026-12-03T00:00:00+00:00")
'scheduled__2026-12-03t00-00-00-00-00-1e0bafca'
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import os
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cloudtrain import api
from cloudtrain.errors import CloudtrainError, SpecError, require
from cloudtrain.runs import RUN_ID

if TYPE_CHECKING:
    from cloudtrain.provider import Job, Provider
    from cloudtrain.spec import JobSpec

    # Built by ``_classes`` on first use; declared for type checkers and ``__all__``.
    CloudtrainJobTrigger: type
    CloudtrainTrainingOperator: type

__all__ = ["CloudtrainJobTrigger", "CloudtrainTrainingOperator", "run_id_for"]

# What a run id keeps of Airflow's before the hash that keeps it unique (63 at most).
_KEPT = 54
_NOT_RUN_ID = re.compile(r"[^a-z0-9_-]+")
_CLASSES = ("CloudtrainJobTrigger", "CloudtrainTrainingOperator")


def run_id_for(airflow_run_id: str) -> str:
    """The cloudtrain run id of an Airflow run id: itself when valid, else a readable form plus a hash.

    The hash is of the original text, so two Airflow run ids that read the same once
    lower-cased and stripped of ``:`` and ``+`` still make two jobs, and a retry of one
    always maps to the same run id.

    Example:
    >>> run_id_for("2026-12-03"), run_id_for("manual__2026-12-03T10:00:00+00:00")
    ('2026-12-03', 'manual__2026-12-03t10-00-00-00-00-7eb23003')
    """
    if RUN_ID.fullmatch(airflow_run_id):
        return airflow_run_id
    readable = _NOT_RUN_ID.sub("-", airflow_run_id.lower()).strip("-_")[:_KEPT]
    digest = hashlib.sha256(airflow_run_id.encode()).hexdigest()[:8]
    return f"{readable}-{digest}" if readable else digest


def submit(
    spec: str | os.PathLike[str] | JobSpec,
    provider: str | Provider | None,
    *,
    run_id: str | None,
    overrides: Sequence[str] = (),
) -> Job:
    """``cloudtrain.stage`` then submit under the run id of ``run_id`` (an Airflow run id or None).

    Raises:
        SpecError: the spec is invalid, or overrides were given with a JobSpec, which they
            cannot change.
    """
    if not isinstance(spec, str | os.PathLike):
        if overrides:
            raise SpecError(
                f"overrides: {list(overrides)!r} apply to a job.yaml path, not to a JobSpec. "
                "Build the JobSpec with those values, or pass the path of its job.yaml."
            )
    else:
        spec = api.as_spec(spec, tuple(overrides))
    key = None if run_id is None else run_id_for(run_id)
    return api.stage(spec, provider, run_id=key).submit()


async def wait_for(job_id: str, provider: str | None, poll_s: float) -> dict[str, Any]:
    """Poll the job until it is done, each call in a thread; its end as a trigger event's payload.

    The provider's clients block, and a trigger must not block the triggerer's event loop
    (Airflow: "Deferrable Operators & Triggers"), hence ``asyncio.to_thread``.
    """
    job = await asyncio.to_thread(api.attach, job_id, provider)
    while not (status := await asyncio.to_thread(job.status)).done:
        await asyncio.sleep(poll_s)
    outputs = await asyncio.to_thread(lambda: job.outputs.to_dict())
    return {"job_id": job_id, **status.to_dict(), "outputs": outputs}


def outputs_of(event: dict[str, Any]) -> dict[str, str]:
    """The outputs of a job that succeeded, from the trigger's event.

    Raises:
        CloudtrainError: the job ended failed or cancelled; the message has the provider's
            detail and where the logs are.
    """
    if event["state"] != "succeeded":
        detail = f": {event['detail']}" if event["detail"] else "."
        raise CloudtrainError(
            f"cloudtrain job {event['job_id']} ended {event['state']} ({event['provider_state']}){detail} "
            f"Logs: {event['outputs']['logs']}"
        )
    outputs: dict[str, str] = event["outputs"]
    return outputs


def __getattr__(name: str) -> Any:
    """The operator and the trigger, built (and Airflow imported) on first use (PEP 562)."""
    if name in _CLASSES:
        return _classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _classes() -> dict[str, type]:
    """Define the trigger and the operator on Airflow's base classes, once.

    Raises:
        MissingDependencyError: Airflow is not installed; the message has the pip command.
    """
    require("airflow", "airflow")
    from airflow.sdk import BaseOperator  # type: ignore[import-not-found]
    from airflow.triggers.base import BaseTrigger, TriggerEvent  # type: ignore[import-not-found]

    class CloudtrainJobTrigger(BaseTrigger):
        """Polls a cloudtrain job in the triggerer until it ends, then fires one event with its end.

        Args:
            job_id: the ID ``submit`` returned (``local:...``, a provider's resource name).
            provider: the provider's name; None asks the registry which provider owns the ID.
            poll_s: seconds between status checks.
        """

        __module__ = __name__
        __qualname__ = "CloudtrainJobTrigger"

        def __init__(self, job_id: str, provider: str | None = None, poll_s: float = 60.0) -> None:
            super().__init__()
            self.job_id, self.provider, self.poll_s = job_id, provider, poll_s

        def __repr__(self) -> str:
            return f"CloudtrainJobTrigger(job_id={self.job_id!r}, provider={self.provider!r}, poll_s={self.poll_s})"

        def serialize(self) -> tuple[str, dict[str, Any]]:
            """The class path and arguments the triggerer rebuilds this trigger from."""
            arguments = {"job_id": self.job_id, "provider": self.provider, "poll_s": self.poll_s}
            return f"{__name__}.CloudtrainJobTrigger", arguments

        async def run(self) -> Any:
            """One event, once the job is done: state, the provider's word, detail and outputs."""
            yield TriggerEvent(await wait_for(self.job_id, self.provider, self.poll_s))

    class CloudtrainTrainingOperator(BaseOperator):
        """Train a cloudtrain job spec on any provider; the task waits deferred, holding no worker slot.

        XCom: ``job_id`` (pushed as soon as the job exists, so a running job can be found
        from the UI) and the return value, the job's outputs by name (``model``, ``backup``,
        ``tensorboard``, ``logs``, ``result``, ``throughput``). The task fails when the job
        ends failed or cancelled, with the provider's detail.

        Args:
            spec: the path of a job.yaml (templated), or a ``cloudtrain.JobSpec``. Give a path
                absolute, e.g. built from the DAG file's ``__file__``: a worker's working folder
                is not the DAG's.
            provider: a provider name (default: the spec's), or a configured provider object.
            run_id: which run this is (templated). Default: Airflow's run id, so each DAG run
                trains once and a retry of the task attaches to its job;
                None keys the job on the request alone.
            overrides: ``KEY=VALUE`` overrides of a job.yaml's fields (templated), as ``--set``.
            poll_s: seconds between the trigger's status checks.
            **kwargs: ``BaseOperator`` arguments (``task_id``, ``retries``, ...).
        """

        __module__ = __name__
        __qualname__ = "CloudtrainTrainingOperator"
        template_fields: Sequence[str] = ("spec", "run_id", "overrides")

        def __init__(
            self,
            *,
            spec: str | os.PathLike[str] | JobSpec,
            provider: str | Provider | None = None,
            run_id: str | None = "{{ run_id }}",
            overrides: Sequence[str] = (),
            poll_s: float = 60.0,
            **kwargs: Any,
        ) -> None:
            super().__init__(**kwargs)
            self.spec, self.provider, self.run_id = spec, provider, run_id
            self.overrides, self.poll_s = overrides, poll_s

        def execute(self, context: Any) -> None:
            """Stage and submit the job, push its ID, and defer to the trigger until it ends."""
            job = submit(self.spec, self.provider, run_id=self.run_id, overrides=self.overrides)
            context["ti"].xcom_push(key="job_id", value=job.id)
            self.log.info("Submitted cloudtrain job %s; waiting for it in the triggerer.", job.id)
            trigger = CloudtrainJobTrigger(job_id=job.id, provider=job.provider, poll_s=self.poll_s)
            self.defer(trigger=trigger, method_name="execute_complete")

        def execute_complete(self, context: Any, event: dict[str, Any]) -> dict[str, str]:
            """Resume after the trigger: the job's outputs, or the job's failure as the task's."""
            outputs = outputs_of(event)
            self.log.info("cloudtrain job %s succeeded; model at %s", event["job_id"], outputs["model"])
            return outputs

    return {cls.__qualname__: cls for cls in (CloudtrainJobTrigger, CloudtrainTrainingOperator)}
