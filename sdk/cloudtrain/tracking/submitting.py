"""Before each attempt: the MLflow run of this cloudtrain run, found by its tag or made, and its id.

The run is found by the tag ``cloudtrain.run_id`` (the runtime's ``RUN_TAG``), so a retry,
a resubmit on another provider or a resume continues it. A run made here gets the spec
and the first attempt's plan as flattened parameters (MLflow parameters cannot change
once logged); every attempt adds the tag ``cloudtrain.attempt.<n>`` with its provider,
region, machine and expected cost, and the metric ``cost.estimated_usd`` at step ``n``.

A sweep's run is found or made the same way, once per submit of the sweep, with the tag
``cloudtrain.sweep`` (its objective and trial count); its id goes to every trial as the
parent of the trial's own run (``cloudtrain_runtime.tracking.PARENT_ENV``), and the
trials' attempts are recorded in their own runs, by their chiefs.

No credential reaches MLflow: the spec refuses them where they enter
(``cloudtrain.sections``, ``cloudtrain.tracker``), and ``env`` values are logged as
``<set>`` all the same, as every value ``cloudtrain.secrets`` recognises is.

Example:
>>> flattened({"training": {"epochs": 3, "learning_rate": {"base": 0.1}}, "data": {}}, "spec")
{'spec.training.epochs': '3', 'spec.training.learning_rate.base': '0.1'}
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from cloudtrain.secrets import value_kind
from cloudtrain.tracking import store
from cloudtrain_runtime.tracking import PARENT_ENV, RUN_ID_ENV, RUN_TAG

if TYPE_CHECKING:
    from cloudtrain.planning import Plan

ATTEMPT_TAG = "cloudtrain.attempt."
SWEEP_TAG = "cloudtrain.sweep"
ESTIMATE_METRIC = "cost.estimated_usd"
# MLflow's limits (mlflow/utils/validation.py): a parameter value of at most 6000 characters.
MAX_PARAM_CHARS = 6000
HIDDEN = "<set>"


def tracked(
    plan: Plan,
    request: dict[str, Any],
    env: Callable[[Plan], dict[str, str]],
    render: Callable[[Plan], dict[str, Any]],
) -> tuple[Plan, dict[str, Any]]:
    """``plan`` with ``env(plan)`` added (``run_env`` or ``parent_env``) and ``render``'s request for it.

    A store that cannot be reached leaves the plan and request as they were: tracking
    never stops a job or a sweep. A job's chief then finds or makes the run itself, or
    warns once and trains on; a sweep's trials each log a run of their own, not nested.
    """
    try:
        found = plan.with_env(env(plan))
    except Exception:  # whatever MLflow raises for its store; the chief tries again and says why
        return plan, request
    return found, render(found)


def run_env(plan: Plan) -> dict[str, str]:
    """The environment that hands the replicas this run's MLflow run: ``MLFLOW_RUN_ID``.

    Finds the MLflow run by its tag, or makes it, and records this attempt on it.

    Raises:
        Exception: whatever MLflow raises for a store it cannot reach; the caller decides.
    """
    client, run = _open(plan, {})
    _record_attempt(client, run, plan)
    return {RUN_ID_ENV: run.info.run_id}


def parent_env(plan: Plan) -> dict[str, str]:
    """The environment that hands a sweep's trials the sweep's MLflow run, their parent: ``PARENT_ENV``.

    Finds the sweep's MLflow run by its tag, or makes it with the tag ``cloudtrain.sweep``.

    Raises:
        Exception: whatever MLflow raises for a store it cannot reach; the caller decides.
    """
    tuning = plan.spec.tuning
    assert tuning is not None, "only a spec with tuning: is a sweep"
    sweep = {
        "metric": tuning.objective.metric,
        "goal": tuning.objective.goal,
        "max_trials": tuning.max_trials,
    }
    _, run = _open(plan, {SWEEP_TAG: json.dumps(sweep, sort_keys=True)})
    return {PARENT_ENV: run.info.run_id}


def _open(plan: Plan, tags: Mapping[str, str]) -> tuple[Any, Any]:
    """MLflow's client, and the MLflow run of ``plan``'s run: found by its tag, or made with ``tags`` too."""
    assert plan.spec.tracking is not None and plan.spec.tracking.uri, "tracking is on, with a URI"
    client = store.client(plan.spec.tracking.uri)
    experiment = plan.spec.tracking.experiment_for(plan.name)
    found = client.get_experiment_by_name(experiment)
    experiment_id = found.experiment_id if found else client.create_experiment(experiment)
    runs = store.tagged(client, [experiment_id], str(plan.run_id))
    return client, runs[0] if runs else _create(client, experiment_id, plan, tags)


def _create(client: Any, experiment_id: str, plan: Plan, tags: Mapping[str, str]) -> Any:
    tracking = plan.spec.tracking
    assert tracking is not None
    tags = {**tracking.tags, **tags, RUN_TAG: str(plan.run_id), "mlflow.runName": str(plan.run_id)}
    run = client.create_run(experiment_id, tags=tags, run_name=str(plan.run_id))
    from mlflow.entities import Param

    params = {**flattened(plan.spec.model_dump(mode="json"), "spec"), **flattened(plan.to_dict(), "plan")}
    names = sorted(params)
    for start in range(0, len(names), 100):  # log_batch takes at most 100 parameters a call
        batch = [Param(name, params[name]) for name in names[start : start + 100]]
        client.log_batch(run.info.run_id, params=batch)
    return run


def _record_attempt(client: Any, run: Any, plan: Plan) -> None:
    attempt = 1 + sum(1 for tag in run.data.tags if tag.startswith(ATTEMPT_TAG))
    where = {
        "provider": plan.provider,
        "region": plan.region,
        "machine": plan.machine.machine_type if plan.machine else None,
        "hosts": plan.hosts,
        "devices_per_host": plan.devices_per_host,
        "capacity": plan.capacity.mode,
        "estimated_cost_usd": plan.estimate.usd if plan.estimate else None,
    }
    client.set_tag(run.info.run_id, f"{ATTEMPT_TAG}{attempt}", json.dumps(where, sort_keys=True))
    if plan.estimate is not None:
        client.log_metric(run.info.run_id, ESTIMATE_METRIC, plan.estimate.usd, step=attempt)


def flattened(data: Mapping[str, Any], prefix: str) -> dict[str, str]:
    """``data`` as MLflow parameters: dotted names, text values, no empty sections, no secrets."""
    found: dict[str, str] = {}
    for key, value in data.items():
        name = f"{prefix}.{key}"
        if isinstance(value, Mapping):
            found.update(flattened(value, name))
        elif value is not None:
            text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
            hidden = name.startswith("spec.env.") or value_kind(text)
            found[name] = HIDDEN if hidden else text[:MAX_PARAM_CHARS]
    return found
