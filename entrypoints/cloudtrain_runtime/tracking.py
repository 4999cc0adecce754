"""The chief logs the run to MLflow: one MLflow run per cloudtrain run, over every attempt.

Only the chief logs (the other replicas train the same epochs: their metrics would be
copies), and only when the plan turned ``tracking:`` on; ``mlflow`` is imported then and
not before. The MLflow run is the one ``MLFLOW_RUN_ID`` names (the submitting side made
it, ``cloudtrain.tracking``), else the one whose tag ``cloudtrain.run_id`` holds this run,
else a new one with that tag: a retry, a provider's restart, a reclaimed spot job or a run
resumed on another provider continues the same MLflow run.

What is logged comes from the run's history (``cloudtrain_runtime.history``), after the
epoch's backup is written, sent from a thread of the tracker's own so training never waits for it, at most every
``SEND_INTERVAL_S`` and at the end of ``fit``: each epoch's metrics as Keras' ``History`` has them, at step =
the epoch number (1 for the first), with the metric ``cloudtrain.epoch`` in the same batch.
MLflow keeps every value logged at a step (``log_batch`` inserts, it never replaces), so an
attempt logs only the epochs after the last ``cloudtrain.epoch`` of the run: a restarted
epoch is never logged twice, and one whose backup was lost before it was logged is logged
by the attempt that trains it again. At the end: the throughput, the export's URI, the
history and result files as artifacts (``cloudtrain compare --from mlflow`` reads them), and
the run's status.

A sweep's trial is a run of its own (``environments.trial_of``: the provider tells the trials
apart), so each trial has its own MLflow run, made with the tag ``cloudtrain.trial`` (the
provider's trial id), its values as parameters and, where the submitting side made the
sweep's run (``PARENT_ENV``), MLflow's own ``mlflow.parentRunId``, which nests it under
the sweep's run in MLflow's UI.

An unreachable tracking server never fails the training: the first failure prints one
warning, the epochs wait in the history and go with the next epoch's call, and after
``MAX_FAILURES`` calls in a row the attempt stops logging.

Example:
>>> epoch_metrics({"epoch": 2, "metrics": {"loss": 0.5}, "wall_s": 3.0}, started_at=100.0)
[('loss', 0.5, 103000, 2), ('cloudtrain.epoch', 2.0, 103000, 2)]
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from cloudtrain_runtime.replica import HISTORY_FILE, RESULT_FILE

RUN_ID_ENV = "MLFLOW_RUN_ID"
RUN_TAG = "cloudtrain.run_id"
# The sweep's MLflow run, handed to every trial by the submitting side (``cloudtrain.tracking``).
PARENT_ENV = "CLOUDTRAIN_MLFLOW_PARENT_RUN_ID"
TRIAL_TAG = "cloudtrain.trial"
# MLflow's tag of a nested run's parent (mlflow/utils/mlflow_tags.py: MLFLOW_PARENT_RUN_ID).
PARENT_TAG = "mlflow.parentRunId"
EPOCH_METRIC = "cloudtrain.epoch"
SPEED_METRIC = "examples_per_sec"
MODEL_TAG = "cloudtrain.model_uri"
MAX_FAILURES = 3
# What one log_batch call takes (mlflow/utils/validation.py: MAX_METRICS_PER_BATCH).
MAX_METRICS_PER_CALL = 1000
# At most one send of epochs this often: the example's 30 ms epochs would otherwise make a
# call each, whose CPU (here and in a server on the same host) slows the steps.
SEND_INTERVAL_S = 10.0
# MLflow's HTTP client retries a failed call 7 times with exponential backoff by default
# (mlflow/environment_variables.py: MLFLOW_HTTP_REQUEST_MAX_RETRIES=7, backoff factor 2,
# MLFLOW_HTTP_REQUEST_TIMEOUT=120 s): minutes of a stalled epoch. The chief waits less,
# unless the job's environment says otherwise.
HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10"}

Metric = tuple[str, float, int, int]  # key, value, timestamp (ms), step


def epoch_metrics(record: Mapping[str, Any], *, started_at: float) -> list[Metric]:
    """One history record as MLflow metrics: each value as recorded, at step = its epoch.

    The timestamp is when the epoch ended (the run's start plus the record's ``wall_s``).
    """
    stamp = round((started_at + record["wall_s"]) * 1000)
    step = int(record["epoch"])
    found = [(name, float(value), stamp, step) for name, value in record["metrics"].items()]
    return [*found, (EPOCH_METRIC, float(step), stamp, step)]


class Tracker:
    """The chief's MLflow run of this cloudtrain run, and what of the history it has already.

    Args:
        uri: the tracking URI; ``experiment`` the experiment's name, made when missing.
        run: the cloudtrain run id, kept in the MLflow run's tag ``cloudtrain.run_id``.
        tags: the spec's tags, set on a run made here.
        log_model: also copy the export into the run's artifacts (``tracking.log_model``).
        trial: the provider's id of the sweep trial ``run`` is (``environments.trial_of``); None outside a sweep.
        values: the trial's values, the parameters of a run made here.
        env: the environment: ``MLFLOW_RUN_ID``, the sweep's run (``PARENT_ENV``), the HTTP client's settings.
        say: where the one warning goes.
        clock, interval_s: the least time between two sends of epochs (``sync``).
    """

    def __init__(
        self,
        *,
        uri: str,
        experiment: str,
        run: str,
        tags: Mapping[str, str],
        log_model: bool = False,
        trial: str | None = None,
        values: Mapping[str, object] | None = None,
        env: MutableMapping[str, str],
        say: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
        interval_s: float = SEND_INTERVAL_S,
    ) -> None:
        self.uri, self.experiment, self.run, self.tags = uri, experiment, run, tags
        self.env, self.say, self.log_model = env, say, log_model
        self.trial, self.values = trial, dict(values or {})
        self._sender = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cloudtrain-mlflow")
        self._mlflow: Any = None
        self._sent_at: float | None = None
        self.clock, self.interval_s = clock, interval_s
        self.run_id: str | None = None
        self.logged = 0  # the last epoch the MLflow run has
        self.ended = False  # whether the MLflow run has the run's throughput already
        self.failures = 0

    def __repr__(self) -> str:
        return f"Tracker(uri={self.uri!r}, experiment={self.experiment!r}, run={self.run!r}, run_id={self.run_id!r})"

    @property
    def stopped(self) -> bool:
        """Whether this attempt gave up logging after ``MAX_FAILURES`` failed calls in a row."""
        return self.failures >= MAX_FAILURES

    def start(self) -> None:
        """Load the MLflow client now, before the first epoch, and find or make the run in the background.

        Importing ``mlflow`` takes a second or two of CPU: done during an epoch, it would
        slow that epoch's steps.
        """
        self._attempt(self._client)
        self._sender.submit(self._attempt, self._open)
        self._sent_at = self.clock()  # the first epochs go an interval later, or at the end of fit

    def sync(self, history: Mapping[str, Any] | None, *, now: bool = False) -> None:
        """Send the epochs of ``history`` the MLflow run lacks, in the background; a failure is kept
        for the next call.

        The call returns at once: the request goes from the tracker's one thread, so the
        next epoch trains meanwhile (a history is never changed, only replaced, so it can go).
        At most one send every ``interval_s`` unless ``now``: epochs shorter than that go
        together, and the ones not sent yet wait in the history.
        """
        if history is None:
            return
        moment = self.clock()
        if not now and self._sent_at is not None and moment - self._sent_at < self.interval_s:
            return
        self._sent_at = moment
        self._sender.submit(self._attempt, lambda: self._log_epochs(history))

    def finish(self, history: Mapping[str, Any] | None, result: Mapping[str, Any]) -> None:
        """Log what is left of ``history``, the throughput, the export's URI, the history and result
        files (what ``cloudtrain compare --from mlflow`` reads back); mark the run finished.

        Waits for every call sent so far: bounded by the HTTP client's timeout and retries
        (``HTTP_DEFAULTS``) times ``MAX_FAILURES``, since a tracker that failed that often sends nothing.
        """
        self.sync(history, now=True)
        self._sender.submit(self._attempt, lambda: self._log_end(history, result))
        self.drain()

    def fail(self, history: Mapping[str, Any] | None) -> None:
        """Log what is left of ``history`` and mark the run failed: this attempt ended in an error.

        The next attempt of the run sets it running again (``_open``).
        """
        self.sync(history, now=True)
        self._sender.submit(self._attempt, lambda: self._set_status("FAILED"))
        self.drain()

    def _set_status(self, status: str) -> None:
        client, run_id = self._open()
        client.set_terminated(run_id, status=status)

    def drain(self) -> None:
        """Wait until every call sent so far has been made (or has failed)."""
        self._sender.submit(lambda: None).result()

    def _attempt(self, call: Callable[[], object]) -> None:
        if self.stopped:
            return
        try:
            call()
        except Exception as err:  # tracking never fails the training, whatever MLflow raises
            self.failures += 1
            if self.failures == 1:
                self.say(
                    f"Warning: MLflow at {self.uri} failed ({type(err).__name__}: {_first_line(err)}); "
                    f"training goes on, the epochs are logged with the next call, up to {MAX_FAILURES} "
                    "calls in a row, then not by this attempt."
                )
            return
        self.failures = 0

    def _client(self) -> Any:
        """MLflow's client for the URI, made once, with the chief's HTTP settings (``HTTP_DEFAULTS``)."""
        if self._mlflow is not None:
            return self._mlflow
        for name, value in HTTP_DEFAULTS.items():
            self.env.setdefault(name, value)
        os.environ.update({name: self.env[name] for name in HTTP_DEFAULTS})
        try:
            from mlflow.tracking import MlflowClient
        except ImportError:
            raise ImportError(
                "mlflow is not installed in this image; add mlflow-skinny to the code's requirements.txt, "
                "or use the cloudtrain image (containers/)"
            ) from None
        self._mlflow = MlflowClient(tracking_uri=self.uri)
        return self._mlflow

    def _open(self) -> tuple[Any, str]:
        """The client, and the MLflow run of this cloudtrain run: named, found by its tag, or made."""
        client = self._client()
        if self.run_id is not None:
            return client, self.run_id
        named = self.env.get(RUN_ID_ENV)
        found = client.get_run(named) if named else self._find(client) or self._create(client)
        self.run_id = found.info.run_id
        if found.info.status != "RUNNING":
            client.update_run(self.run_id, status="RUNNING")
        # An attempt of a run that ended trains nothing and exports again: nothing to add.
        self.ended = SPEED_METRIC in found.data.metrics
        last = found.data.metrics.get(EPOCH_METRIC)
        self.logged = int(last) if last is not None else 0
        return client, self.run_id

    def _experiment_id(self, client: Any) -> str:
        found = client.get_experiment_by_name(self.experiment)
        return str(found.experiment_id if found else client.create_experiment(self.experiment))

    def _find(self, client: Any) -> Any:
        runs = client.search_runs(
            [self._experiment_id(client)], filter_string=tag_filter(RUN_TAG, self.run), max_results=1
        )
        return runs[0] if runs else None

    def _create(self, client: Any) -> Any:
        tags = {**self.tags, RUN_TAG: self.run, "mlflow.runName": self.run, **self._trial_tags()}
        run = client.create_run(self._experiment_id(client), tags=tags, run_name=self.run)
        if self.values:
            from mlflow.entities import Param

            params = [Param(name, str(value)) for name, value in sorted(self.values.items())]
            client.log_batch(run.info.run_id, params=params)
        return run

    def _trial_tags(self) -> dict[str, str]:
        """A trial's tags: its id, and its sweep's run where the submitting side made one."""
        if self.trial is None:
            return {}
        parent = self.env.get(PARENT_ENV)
        return {TRIAL_TAG: self.trial, **({PARENT_TAG: parent} if parent else {})}

    def _log_epochs(self, history: Mapping[str, Any]) -> None:
        client, run_id = self._open()
        records = [record for record in history["epochs"] if record["epoch"] > self.logged]
        if not records:
            return
        from mlflow.entities import Metric as MlflowMetric

        batch: list[Any] = []
        for record in records:  # whole epochs a call, each call's last epoch counted as logged
            metrics = [
                MlflowMetric(*metric) for metric in epoch_metrics(record, started_at=history["started_at"])
            ]
            if batch and len(batch) + len(metrics) > MAX_METRICS_PER_CALL:
                client.log_batch(run_id, metrics=batch)
                self.logged = batch[-1].step
                batch = []
            batch += metrics
        client.log_batch(run_id, metrics=batch)
        self.logged = batch[-1].step

    def _log_end(self, history: Mapping[str, Any] | None, result: Mapping[str, Any]) -> None:
        client, run_id = self._open()
        speed = result["throughput"].get("examples_per_sec")
        if isinstance(speed, int | float) and not self.ended:
            client.log_metric(run_id, SPEED_METRIC, float(speed), step=self.logged)
        client.set_tag(run_id, MODEL_TAG, result["export"])
        for name, document in ((HISTORY_FILE, history), (RESULT_FILE, result)):
            if document is not None:
                client.log_dict(run_id, dict(document), name)
        if self.log_model:
            client.log_artifacts(run_id, result["export"], "model")
        self._set_status("FINISHED")


def tag_filter(tag: str, value: str) -> str:
    """The MLflow search for the runs whose ``tag`` is ``value``, whatever ``value`` holds.

    MLflow takes a value between single or double quotes as it stands, with no escapes
    (mlflow/utils/search_utils.py ``SearchUtils._strip_quotes``, mlflow-skinny 3.18), so the
    quote is the one the value lacks. A trial's run holds what its provider set
    (``environments.trial_of``), so the value is not always a run id.

    Raises:
        ValueError: ``value`` holds both quotes, which no MLflow search can name.

    Example:
    >>> tag_filter(RUN_TAG, "run-1")
    "tags.`cloudtrain.run_id` = 'run-1'"
    >>> print(tag_filter(RUN_TAG, "it's"))
    tags.`cloudtrain.run_id` = "it's"
    """
    for quote in ("'", '"'):
        if quote not in value:
            return f"tags.`{tag}` = {quote}{value}{quote}"
    raise ValueError(f"no MLflow search can name {value[:80]!r}: it holds both ' and \"")


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0][:200] if text else ""


class LogEpochs:
    """The Keras callback that hands the history to the ``Tracker`` after each epoch's backup.

    It comes after the backup callback, so no epoch is logged that a restart would train
    again (``cloudtrain_runtime.tracking``).
    """

    def __init__(self, tracker: Tracker, history: Callable[[], Mapping[str, Any] | None]) -> None:
        super().__init__()
        self.tracker, self.history = tracker, history

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        self.tracker.start()

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self.tracker.sync(self.history())

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        self.tracker.sync(self.history(), now=True)
