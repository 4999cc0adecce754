"""When the SDK sees a tracked run's job end: what it cost, and the MLflow run's final status.

Only the SDK can tell either. The actual cost is what the provider says it billed
(``cloudtrain.cost.actual``), known once the job has ended, and only a job that ended
on its own has a chief that set a status: one cancelled, killed or that never started
leaves its MLflow run ``RUNNING``. So ``wait``, ``submit --wait`` (and the blocking local
submit) and ``status`` of an ended job close the run here, for a job this machine
submitted with ``tracking:`` on (``cloudtrain.tracking.record``):

- the metric ``cost.actual_usd``: what the run's ended jobs cost together, at step N
  after its N-th ended job (none where nothing is billed: the local provider);
- the metric ``cost.estimated_usd``, where the run has none (submitted while MLflow was out
  of reach, say): the estimate the job carries (``cloudtrain.provider.jobs.JobSummary``);
- the tag ``cloudtrain.job.<digest of the job id>``: the job's id, final state and cost;
- the MLflow status from the job's state (``STATUSES``), only for the run's newest job:
  an older attempt's end is not the run's;
- for a sweep (a job that ``HasTrials``), its best trial: the tag ``cloudtrain.best_trial``
  on the sweep's run (the trial's number, id, objective and values) and on the best
  trial's own run, the child whose ``cloudtrain.trial`` is its id
  (``cloudtrain_runtime.tracking``).

Each job is closed once: its tag says it was, and the cost and tag go in one
``log_batch``, so a second ``status`` of the same job logs nothing. A store out of reach
costs one warning, never the command.

Example:
>>> STATUSES["cancelled"]
'KILLED'
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cloudtrain.provider.jobs import HasSummary
from cloudtrain.provider.sweeps import HasTrials
from cloudtrain.tracking import record, store
from cloudtrain.tracking.submitting import ESTIMATE_METRIC

if TYPE_CHECKING:
    from cloudtrain.provider.jobs import Job, JobStatus, JobSummary
    from cloudtrain.tracking.record import TrackedJob

ACTUAL_METRIC = "cost.actual_usd"
JOB_TAG = "cloudtrain.job."
BEST_TAG = "cloudtrain.best_trial"
# A cloudtrain state as MLflow's RunStatus (mlflow/entities/run_status.py, mlflow-skinny 3.18).
STATUSES = {"succeeded": "FINISHED", "failed": "FAILED", "cancelled": "KILLED"}


def close(job: Job, final: JobStatus, *, say: Callable[[str], None]) -> None:
    """Log ``job``'s cost and, for its run's newest job, the MLflow run's final status; once per job.

    Nothing for a job that has not ended, was not tracked, or was submitted elsewhere.
    ``say`` takes the one warning a store out of reach gives.
    """
    tracked = record.recall(job.id) if final.done else None
    if tracked is None or not isinstance(job, HasSummary):
        return
    try:
        _close(tracked, job, job.summary(), final)
    except Exception as err:  # MLflow raises its own errors per store: one warning for all
        first = str(err).strip().splitlines()[:1]
        said = f"{type(err).__name__}: {first[0][:200]}" if first else type(err).__name__
        say(
            f"Warning: MLflow at {tracked.uri} failed ({said}); the end of {job.id} is not logged there. "
            f"`cloudtrain status {job.id}` tries again."
        )


def _close(tracked: TrackedJob, job: Job, summary: JobSummary, final: JobStatus) -> None:
    client = store.client(tracked.uri)
    found = client.get_experiment_by_name(tracked.experiment)
    runs = store.tagged(client, [found.experiment_id], tracked.run) if found else []
    if not runs:
        return  # no attempt reached MLflow: nothing to close
    run = runs[0]
    tag = f"{JOB_TAG}{record.job_digest(job.id)}"
    if tag in run.data.tags:
        return
    if record.newest_job(tracked.run) == job.id:
        if isinstance(job, HasTrials):
            _mark_best(client, run, job)
        client.set_terminated(run.info.run_id, status=STATUSES[final.state])
    step = 1 + sum(1 for name in run.data.tags if name.startswith(JOB_TAG))
    metrics, ended = _costs(job, summary, run.data.metrics, step)
    from mlflow.entities import RunTag

    ended.update(id=job.id, state=final.state, provider_state=final.provider_state)
    client.log_batch(run.info.run_id, metrics=metrics, tags=[RunTag(tag, json.dumps(ended, sort_keys=True))])


def _mark_best(client: Any, run: Any, sweep: HasTrials) -> None:
    """Tag the sweep's best trial on the sweep's run and on the trial's own; nothing where none succeeded."""
    best = sweep.best()
    if best is None:
        return
    said = {"number": best.number, "id": best.id, "objective": best.objective, "values": dict(best.values)}
    client.set_tag(run.info.run_id, BEST_TAG, json.dumps(said, sort_keys=True))
    child = store.trial_run(client, run, best.id)
    if child is not None:
        client.set_tag(child.info.run_id, BEST_TAG, json.dumps({"objective": best.objective}))


def _costs(
    job: Job, summary: JobSummary, logged: dict[str, float], step: int
) -> tuple[list[Any], dict[str, Any]]:
    """The cost metrics to log for ``job`` at ``step``, and its cost for the job's tag."""
    from mlflow.entities import Metric

    stamp = round(time.time() * 1000)
    metrics = []
    ended: dict[str, Any] = {"actual_usd": None, "billed": None}
    if summary.usage is not None:
        from cloudtrain.cost.actual import actual_cost

        spent = actual_cost(job.provider, summary.usage)
        ended.update(actual_usd=spent.usd, billed=spent.describe())
        if spent.usd is not None:
            metrics.append(Metric(ACTUAL_METRIC, logged.get(ACTUAL_METRIC, 0.0) + spent.usd, stamp, step))
    if summary.estimate is not None and ESTIMATE_METRIC not in logged:
        metrics.append(Metric(ESTIMATE_METRIC, summary.estimate.usd, stamp, step))
    return metrics, ended
