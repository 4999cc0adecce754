"""The Airflow operator in a real Airflow 3: the example DAG parses, and jobs train on the local provider.

Airflow's dependencies are not the main environment's: the ``pipelines-airflow`` lane
(``tests/lanes/pipelines-airflow.txt``) runs this file; elsewhere it is skipped. Airflow
reads its configuration when first imported, so nothing here imports it before the
``airflow_home`` fixture has pointed it at a fresh folder and migrated a SQLite database.

``dag.test()`` runs each task in this process and, when a task defers, runs its trigger
inline before resuming the task (``airflow.sdk.definitions.dag._run_task``), so these runs
go through the deferral a scheduler and triggerer would.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cloudtrain import api
from cloudtrain.errors import CloudtrainError, SpecError
from cloudtrain.pipelines.airflow import run_id_for, submit

if importlib.util.find_spec("airflow") is None:
    pytest.skip(
        "Airflow is not installed here; the pipelines-airflow lane runs these tests", allow_module_level=True
    )

REPO = Path(__file__).resolve().parents[3]
EXAMPLE_DAGS = REPO / "examples" / "pipelines"
EXAMPLE_JOB = REPO / "examples" / "binary_classifier" / "job.yaml"
# The binary classifier, as small as it trains: one host, one epoch of four steps.
TINY = ["resources.hosts=1", "training.epochs=1", "training.examples_per_epoch=64"]
LOGICAL_DATE = datetime(2026, 12, 3, tzinfo=UTC)
TEST_DAGS = """
from airflow.sdk import DAG
from cloudtrain.pipelines.airflow import CloudtrainTrainingOperator

for dag_id, spec, overrides in {runs!r}:
    with DAG(dag_id, schedule=None) as dag:
        CloudtrainTrainingOperator(task_id="train", spec=spec, overrides=overrides, poll_s=0.5)
    globals()[dag_id] = dag
"""
FAILING_SCRIPT = 'raise SystemExit("the training data is gone")\n'
FAILING_JOB = """name: doomed
code: {script: train.py}
resources: {accelerator: cpu, per_host: 1, hosts: 1}
storage: {root: ./outputs}
"""

pytestmark = pytest.mark.filterwarnings(
    # Airflow 3.3's own imports; nothing of cloudtrain's.
    "ignore::DeprecationWarning:airflow",
    "ignore::DeprecationWarning:sqlalchemy",
    "ignore::PendingDeprecationWarning",
    # Airflow's in-process execution API (dag.test) imports starlette's test client.
    "ignore:Using `httpx` with `starlette.testclient` is deprecated",
)


@pytest.fixture(scope="module")
def airflow_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh AIRFLOW_HOME with a migrated SQLite database and a DAGs folder of test DAGs.

    Written before Airflow is imported, because it reads its configuration then.
    """
    home = tmp_path_factory.mktemp("airflow")
    storage = tmp_path_factory.mktemp("outputs")
    dags = home / "dags"
    dags.mkdir()
    doomed = _failing_project(tmp_path_factory.mktemp("doomed"))
    runs = [
        ("train_tiny", str(EXAMPLE_JOB), [*TINY, f"storage.root={storage}"]),
        ("train_doomed", str(doomed), []),
    ]
    (dags / "cloudtrain_test_dags.py").write_text(TEST_DAGS.format(runs=runs))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("AIRFLOW_HOME", str(home))
        env.setenv("AIRFLOW__CORE__DAGS_FOLDER", str(dags))
        env.setenv("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
        migrate = [str(Path(sys.executable).parent / "airflow"), "db", "migrate"]
        done = subprocess.run(migrate, capture_output=True, text=True, env=os.environ, timeout=240)
        assert done.returncode == 0, done.stderr[-2000:]
        yield dags


def _failing_project(folder: Path) -> Path:
    """A script-mode project whose script exits at once with an error: a job that fails."""
    (folder / "train.py").write_text(FAILING_SCRIPT)
    (folder / "job.yaml").write_text(FAILING_JOB)
    return folder / "job.yaml"


def _dag(folder: Path, dag_id: str) -> Any:
    """A DAG as the scheduler loads it: parsed from its file by a DagBag, with no import error."""
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(folder))
    assert bag.import_errors == {}
    return bag.dags[dag_id]


def _xcom(run: Any, key: str) -> Any:
    """What the ``train`` task of ``run`` pushed under ``key``."""
    return run.get_task_instance("train").xcom_pull(task_ids="train", key=key)


def test_the_example_dag_imports_cleanly_and_retrains_weekly(airflow_home: Path) -> None:
    dag = _dag(EXAMPLE_DAGS, "cloudtrain_weekly_retrain")

    train = dag.get_task("train")
    assert type(train).__name__ == "CloudtrainTrainingOperator"
    assert (train.spec, train.run_id) == (str(EXAMPLE_JOB), "{{ run_id }}")  # a fresh run id each run
    assert dag.get_task("publish").upstream_task_ids == {"train"}
    assert dag.timetable.expression == "0 0 * * 0"  # @weekly: Sunday midnight


def test_the_operator_trains_deferred_and_pushes_the_job_id_and_model(
    airflow_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``execute`` only defers: a return value exists only if the trigger fired and the task resumed."""
    with caplog.at_level(logging.INFO, logger="airflow.sdk.definitions.dag"):
        run = _dag(airflow_home, "train_tiny").test(logical_date=LOGICAL_DATE)

    assert run.state == "success"
    assert "[DAG TEST] running trigger in line" in caplog.text  # the task deferred
    job_id, outputs = _xcom(run, "job_id"), _xcom(run, "return_value")
    assert job_id.startswith("local:binary-classifier-")
    assert api.attach(job_id).status().state == "succeeded"
    assert (Path(outputs["model"]) / "saved_model.pb").is_file()
    assert Path(outputs["result"]).is_file()


def test_a_failed_job_fails_the_task_with_its_detail(airflow_home: Path) -> None:
    from cloudtrain.pipelines.airflow import CloudtrainJobTrigger, CloudtrainTrainingOperator

    run = _dag(airflow_home, "train_doomed").test(logical_date=LOGICAL_DATE)

    assert (run.state, run.get_task_instance("train").state) == ("failed", "failed")
    job_id = _xcom(run, "job_id")
    assert api.attach(job_id).status().state == "failed"
    event = asyncio.run(anext(CloudtrainJobTrigger(job_id, poll_s=0.1).run()))
    operator = CloudtrainTrainingOperator(task_id="again", spec="unused.yaml")
    with pytest.raises(CloudtrainError) as failure:
        operator.execute_complete({}, event.payload)
    assert str(failure.value).startswith(f"cloudtrain job {job_id} ended failed (")
    assert "Logs: " in str(failure.value)


def test_a_rerun_of_the_same_dag_run_attaches_instead_of_training_again(airflow_home: Path) -> None:
    """The same Airflow run id is the same cloudtrain run id, hence the same job."""
    dag = _dag(airflow_home, "train_tiny")
    first = _xcom(dag.test(logical_date=LOGICAL_DATE, run_after=LOGICAL_DATE), "job_id")

    second = _xcom(dag.test(logical_date=LOGICAL_DATE, run_after=LOGICAL_DATE), "job_id")

    assert second == first


@pytest.mark.parametrize(
    ("airflow_run_id", "expected"),
    [
        ("2026-12-03", "2026-12-03"),  # already a run id: kept as it is
        (
            "scheduled__2026-12-03T00:00:00+00:00",
            "scheduled__2026-12-03t00-00-00-00-00-1e0bafca",
        ),  # scheduler's
        ("Retrain", "retrain-386cffe6"),  # upper case: changed, so hashed apart from 'retrain'
        ("::", "71546855"),  # nothing readable left: the hash alone
    ],
)
def test_airflow_run_ids_become_valid_stable_run_ids(airflow_run_id: str, expected: str) -> None:
    assert run_id_for(airflow_run_id) == expected
    assert api.plan(api.as_spec(EXAMPLE_JOB)).with_run(run_id_for(airflow_run_id)).run_id == expected


def test_overrides_with_a_jobspec_are_refused_before_anything_is_staged() -> None:
    spec = api.as_spec(EXAMPLE_JOB)

    with pytest.raises(SpecError) as refused:
        submit(spec, None, run_id=None, overrides=["training.epochs=1"])

    assert str(refused.value).startswith("overrides: ['training.epochs=1'] apply to a job.yaml path")


def test_cloudtrain_help_imports_no_airflow() -> None:
    """The operator's module is imported by DAG files only: no CLI start-up path loads Airflow."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "cloudtrain", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert " airflow" not in done.stderr
