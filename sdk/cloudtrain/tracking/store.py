"""The MLflow client the SDK's commands use, and finding a cloudtrain run's MLflow run by its tag.

A command waits for MLflow no longer than the chief does: MLflow's HTTP client would
retry a call to a server out of reach 7 times with exponential backoff, minutes of a
command that hangs (``cloudtrain_runtime.tracking.HTTP_DEFAULTS``); the user's own
``MLFLOW_HTTP_REQUEST_*`` variables still win. Nor does MLflow print to a command's
stdout, which holds the command's result alone (``QUIET``).

Example:
>>> run_filter("nightly-42")
"tags.`cloudtrain.run_id` = 'nightly-42'"
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from cloudtrain_runtime.tracking import HTTP_DEFAULTS, PARENT_TAG, RUN_TAG, TRIAL_TAG, tag_filter

# MLflow's client writes "View run ... at: URL" to sys.stdout when it ends a run on a
# tracking server, unless this is set (mlflow/tracking/_tracking_service/client.py
# ``_log_url``, mlflow/environment_variables.py, mlflow-skinny 3.18).
QUIET = {"MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true"}


def client(uri: str) -> Any:
    """MLflow's client for the store at ``uri``, with the chief's HTTP limits where the environment sets none."""
    for name, value in {**HTTP_DEFAULTS, **QUIET}.items():
        os.environ.setdefault(name, value)
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri)


def tagged(client: Any, experiment_ids: Sequence[str], run: str, *, limit: int = 1) -> list[Any]:
    """The MLflow runs of ``experiment_ids`` whose tag ``cloudtrain.run_id`` is ``run``, at most ``limit``."""
    return list(client.search_runs(list(experiment_ids), filter_string=run_filter(run), max_results=limit))


def trial_run(client: Any, sweep: Any, trial: str) -> Any:
    """The MLflow run of the sweep's trial ``trial`` (its tag ``cloudtrain.trial``), nested under the
    sweep's MLflow run ``sweep``; None where its chief made none."""
    nested = f"{tag_filter(PARENT_TAG, sweep.info.run_id)} AND {tag_filter(TRIAL_TAG, trial)}"
    found = client.search_runs([sweep.info.experiment_id], filter_string=nested, max_results=1)
    return found[0] if found else None


def run_filter(run: str) -> str:
    """The MLflow search that finds the runs tagged with cloudtrain run ``run``."""
    return tag_filter(RUN_TAG, run)
