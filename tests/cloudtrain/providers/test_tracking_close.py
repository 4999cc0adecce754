"""A tracked run's end, as the SDK sees it: the actual cost and the final status in its MLflow run, once.

The example is submitted by the real CLI to the loopback SageMaker with ``--tracking`` a
real SQLite store; the fake then reports the job's end and billable seconds, and ``status``
and ``wait`` close the MLflow run. No chief runs here, so whatever the MLflow run says of
the end, the SDK wrote.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from cloudtrain.cost.inputs import prices
from cloudtrain.provider.sweeps import HasTrials
from cloudtrain.providers import sagemaker
from cloudtrain.tracking.closing import ACTUAL_METRIC, BEST_TAG, JOB_TAG
from cloudtrain.tracking.submitting import ESTIMATE_METRIC
from cloudtrain_runtime.tracking import PARENT_ENV, PARENT_TAG, RUN_TAG, TRIAL_TAG
from tests.cloudtrain.providers.fakes.sagemaker_aws import LoopbackAws
from tests.cloudtrain.providers.fakes.sagemaker_service import FakeJob
from tests.cloudtrain.providers.sagemaker.test_sweep import play_trial
from tests.cloudtrain_runtime.harness import free_ports
from tests.conftest import Result

pytest.importorskip("mlflow", reason="the tracking extra: pip install 'cloudtrain[tracking]'")
from mlflow.tracking import MlflowClient

# MLflow 3.18's SQL store declares a relationship with ``noload``, which SQLAlchemy 2.1
# deprecates: the store's warning, not ours.
pytestmark = pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy is deprecated")

EXAMPLE = str(Path(__file__).resolve().parents[3] / "examples" / "binary_classifier" / "job.yaml")
FAILED_SCRIPT = [("InProgress", "Training", "Training in progress."), ("Failed", "Failed", "AlgorithmError")]
Run = Callable[..., Result]


def submitted(run_cli: Run, aws: LoopbackAws, uri: str, run_id: str, billable_s: int) -> tuple[str, FakeJob]:
    """The example submitted to SageMaker as ``run_id``, tracked at ``uri``; its id and the fake's job."""
    result = run_cli(
        "submit", EXAMPLE, "--provider", "sagemaker", "--tracking", uri, "--run-id", run_id, "--no-wait"
    )
    assert result.code == 0, result.err
    job_id = result.out.strip()
    fake = aws.sagemaker.jobs[job_id.rsplit("/", 1)[1]]
    fake.training_s = fake.billable_s = billable_s
    return job_id, fake


def ended(fake: FakeJob) -> None:
    while fake.step[0] == "InProgress":
        fake.advance()


def dollars(billable_s: int) -> float:
    """What the example's 2 × ml.g4dn.xlarge cost for ``billable_s`` each, at the catalog's on-demand rate."""
    price = prices().lookup("sagemaker", "us-east-1", "ml.g4dn.xlarge", "t4")
    assert price is not None and price.on_demand is not None
    return 2 * billable_s / 3600 * price.on_demand


def mlflow_run(uri: str, run_id: str) -> tuple[MlflowClient, str]:
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("binary-classifier")
    [run] = client.search_runs([experiment.experiment_id], filter_string=f"tags.`{RUN_TAG}` = '{run_id}'")
    return client, run.info.run_id


def history(client: MlflowClient, run: str, key: str) -> list[tuple[int, float]]:
    return sorted((m.step, m.value) for m in client.get_metric_history(run, key))


def test_status_of_an_ended_job_logs_its_cost_and_status_once(
    run_cli: Run, aws: LoopbackAws, tmp_path: Path
) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    job_id, fake = submitted(run_cli, aws, uri, "costed", billable_s=400)
    client, run = mlflow_run(uri, "costed")
    assert client.get_run(run).info.status == "RUNNING"
    ended(fake)
    for _ in range(2):  # seeing the end twice logs it once
        assert run_cli("status", job_id).code == 0

    found = client.get_run(run)
    assert found.info.status == "FINISHED"
    assert history(client, run, ACTUAL_METRIC) == [(1, pytest.approx(dollars(400)))]
    [(step, estimate)] = history(client, run, ESTIMATE_METRIC)  # logged at submit, not again
    assert step == 1 and estimate > dollars(400)
    [tag] = [name for name in found.data.tags if name.startswith(JOB_TAG)]
    said = json.loads(found.data.tags[tag])
    assert (said["id"], said["state"], said["provider_state"]) == (job_id, "succeeded", "Completed/Completed")


def test_an_older_attempt_adds_its_cost_and_leaves_the_status_to_the_newest(
    run_cli: Run, aws: LoopbackAws, tmp_path: Path
) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    aws.sagemaker.script(FAILED_SCRIPT, failure_reason="AlgorithmError: exit 1")
    first, failing = submitted(run_cli, aws, uri, "retried", billable_s=100)
    ended(failing)  # nobody looks: the retry is submitted
    aws.sagemaker.script([("Completed", "Completed", "Training job completed")])
    retry, succeeding = submitted(run_cli, aws, uri, "retried", billable_s=300)
    assert retry != first
    ended(succeeding)

    assert run_cli("wait", retry, "--poll", "0").code == 0
    assert run_cli("status", first).code == 0  # the failed attempt, seen last

    client, run = mlflow_run(uri, "retried")
    assert client.get_run(run).info.status == "FINISHED"  # the run's end is its newest job's
    assert history(client, run, ACTUAL_METRIC) == [
        (1, pytest.approx(dollars(300))),
        (2, pytest.approx(dollars(300) + dollars(100))),
    ]
    states = sorted(
        json.loads(v)["state"] for k, v in client.get_run(run).data.tags.items() if k.startswith(JOB_TAG)
    )
    assert states == ["failed", "succeeded"]


def test_a_cancelled_job_kills_its_mlflow_run(run_cli: Run, aws: LoopbackAws, tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    job_id, _ = submitted(run_cli, aws, uri, "cancelled", billable_s=60)
    assert run_cli("cancel", job_id).code == 0
    assert run_cli("wait", job_id, "--poll", "0").code == 1
    client, run = mlflow_run(uri, "cancelled")
    assert client.get_run(run).info.status == "KILLED"


def test_a_store_out_of_reach_warns_once_and_status_succeeds(
    run_cli: Run, aws: LoopbackAws, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "2")
    closed = f"http://127.0.0.1:{free_ports(1)[0]}"
    job_id, fake = submitted(run_cli, aws, closed, "unlogged", billable_s=60)
    ended(fake)
    result = run_cli("status", job_id)
    assert result.code == 0 and result.out.startswith("succeeded")
    warnings = [line for line in result.err.splitlines() if line.startswith("Warning: MLflow")]
    assert len(warnings) == 1 and f"at {closed} failed" in warnings[0]


def test_an_untracked_job_touches_no_store(run_cli: Run, aws: LoopbackAws, tmp_path: Path) -> None:
    result = run_cli("submit", EXAMPLE, "--provider", "sagemaker", "--run-id", "untracked", "--no-wait")
    job_id = result.out.strip()
    ended(aws.sagemaker.jobs[job_id.rsplit("/", 1)[1]])
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")  # alone, never turns it on
        assert run_cli("status", job_id).code == 0
    assert not (tmp_path / "mlflow.db").exists()


SWEEP = str(Path(__file__).resolve().parents[3] / "examples" / "tuning" / "job.yaml")
SWEEP_IMAGE = "image=123456789012.dkr.ecr.us-east-1.amazonaws.com/cloudtrain-cpu:1"


def test_a_sweeps_end_closes_its_run_and_tags_its_best_trial_once(
    run_cli: Run, aws: LoopbackAws, tmp_path: Path
) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    aws.sagemaker.on_trial = play_trial
    submit = ("submit", SWEEP, "--provider", "sagemaker", "--set", SWEEP_IMAGE, "--tracking", uri)
    result = run_cli(*submit, "--run-id", "swept", "--no-wait")
    assert result.code == 0, result.err
    sweep_id = result.out.strip()
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("tuning-example").experiment_id
    [parent] = client.search_runs([experiment], filter_string=f"tags.`{RUN_TAG}` = 'swept'")
    [tuning] = aws.sagemaker.tuning_jobs.values()
    assert tuning["request"]["TrainingJobDefinition"]["Environment"][PARENT_ENV] == parent.info.run_id

    handle = sagemaker.provider.attach(sweep_id, clients=aws.clients())
    assert (
        isinstance(handle, HasTrials) and handle.wait(poll_s=0).state == "succeeded"
    )  # nobody closed it yet
    best = handle.best()
    assert best is not None and len(handle.trials()) == 3
    for trial in handle.trials():  # each trial's run, as its chief makes it (cloudtrain_runtime.tracking)
        client.create_run(experiment, tags={TRIAL_TAG: trial.id, PARENT_TAG: parent.info.run_id})
    for _ in range(2):  # seeing the end twice closes it once
        assert run_cli("status", sweep_id).code == 0

    closed = client.get_run(parent.info.run_id)
    assert closed.info.status == "FINISHED"
    said = json.loads(closed.data.tags[BEST_TAG])
    assert (said["id"], said["objective"], said["values"]) == (best.id, best.objective, dict(best.values))
    children = [run for run in client.search_runs([experiment]) if TRIAL_TAG in run.data.tags]
    assert [run.data.tags[TRIAL_TAG] for run in children if BEST_TAG in run.data.tags] == [best.id]
    assert len(history(client, parent.info.run_id, ACTUAL_METRIC)) == 1  # the trials' billed time, once
