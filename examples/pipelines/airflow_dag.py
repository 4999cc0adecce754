"""Retrain the bundled binary classifier every week with Airflow, then hand the model on.

``train`` stages and submits ``examples/binary_classifier/job.yaml`` and waits for it in
Airflow's triggerer, holding no worker slot. Its run id is Airflow's run id, so each
weekly run trains a new model while a retry of the task attaches to the job it started. ``publish`` reads the model's URI from the
XCom that ``train`` returns.

Install ``pip install 'cloudtrain[airflow,runtime]'`` (``runtime``: the local provider
trains on this machine), put this file in your DAGs folder (it finds job.yaml from its
own path), and try one run without a scheduler:

    airflow dags test cloudtrain_weekly_retrain

For Vertex AI or SageMaker, set ``provider`` below: nothing else changes.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from airflow.sdk import dag, task

from cloudtrain.pipelines.airflow import CloudtrainTrainingOperator

# A worker's working folder is not this file's, so the spec's path is built from it.
JOB = Path(__file__).resolve().parents[1] / "binary_classifier" / "job.yaml"


@dag(schedule="@weekly", start_date=datetime(2026, 1, 1), catchup=False, tags=["cloudtrain"])
def cloudtrain_weekly_retrain() -> None:
    """Train, then publish the model the run produced."""
    train = CloudtrainTrainingOperator(task_id="train", spec=str(JOB), provider="local", poll_s=30)

    @task
    def publish(outputs: dict[str, str]) -> str:
        """Hand the new model on: here, its URI becomes this task's XCom for the next step."""
        print(f"New model: {outputs['model']}")
        return outputs["model"]

    publish(train.output)


cloudtrain_weekly_retrain()
