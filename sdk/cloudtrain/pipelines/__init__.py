"""cloudtrain as a native step of a pipeline: Vertex Pipelines (KFP), SageMaker Pipelines, Airflow.

Each module adapts ``cloudtrain.stage`` (plan, pack and upload the code once, render the
exact provider request) to one orchestrator, and imports that orchestrator's library only
when used: install the matching extra (``cloudtrain[kfp]``, ``cloudtrain[sagemaker-pipelines]``,
``cloudtrain[airflow]``).
"""
