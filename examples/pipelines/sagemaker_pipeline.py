"""Train the bundled binary classifier in a SageMaker pipeline, then register the model it made.

``train`` is cloudtrain's ``TrainingStep`` for ``examples/binary_classifier/job.yaml``:
its CreateTrainingJob arguments are exactly what
``cloudtrain render --provider sagemaker`` prints. ``register`` adds the model to a
Model Registry group, taking the artifact from ``train``'s property
``ModelArtifacts.S3ModelArtifacts``, so it runs after ``train`` and on that run's model.

Install ``pip install 'cloudtrain[sagemaker-pipelines]'``, set the role and buckets in
job.yaml to yours, then write the definition (this uploads the code bundle to the spec's
``storage_root``, once per content):

    python examples/pipelines/sagemaker_pipeline.py --out definition.json

Create or update the pipeline from the same objects with ``pipeline.upsert(role_arn=...)``,
or hand definition.json to ``aws sagemaker create-pipeline --pipeline-definition``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from cloudtrain import api
from cloudtrain.pipelines.sagemaker import pipeline_session, training_step

JOB = Path(__file__).resolve().parents[1] / "binary_classifier" / "job.yaml"
# The TensorFlow Serving image the registered model is served with (the SDK's image table).
SERVING = {"framework": "tensorflow", "version": "2.19.0", "image_scope": "inference"}
SERVING_INSTANCE = "ml.m5.large"


def build(spec: str | Path = JOB, *, run_id: str | None = None, session: Any = None) -> Any:
    """The pipeline: ``train`` (cloudtrain's request), then ``register`` (its model artifact)."""
    from sagemaker import image_uris
    from sagemaker.model import Model
    from sagemaker.workflow.model_step import ModelStep
    from sagemaker.workflow.pipeline import Pipeline

    settings = api.as_spec(spec).sagemaker
    region = settings.region
    session = session or pipeline_session(region, telemetry=False)
    train = training_step(spec, name="train", run_id=run_id, session=session)
    model = Model(
        image_uri=image_uris.retrieve(region=region, instance_type=SERVING_INSTANCE, **SERVING),
        model_data=train.properties.ModelArtifacts.S3ModelArtifacts,
        role=settings.role,
        sagemaker_session=session,
    )
    registration = model.register(
        content_types=["application/json"],
        response_types=["application/json"],
        inference_instances=[SERVING_INSTANCE],
        model_package_group_name="binary-classifier",
    )
    register = ModelStep(name="register", step_args=registration)
    return Pipeline(name="binary-classifier", steps=[train, register], sagemaker_session=session)


def main(argv: list[str] | None = None) -> None:
    """Write the pipeline definition JSON to ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="where to write the definition JSON")
    parser.add_argument(
        "--spec", type=Path, default=JOB, help="the job.yaml (default: the binary classifier)"
    )
    parser.add_argument("--run-id", help="the run this definition trains (cloudtrain:run tag)")
    args = parser.parse_args(argv)
    definition = json.loads(build(args.spec, run_id=args.run_id).definition())
    args.out.write_text(json.dumps(definition, indent=2) + "\n")
    steps = ", ".join(step["Name"] for step in definition["Steps"])
    print(f"Wrote {args.out}: steps {steps}")


if __name__ == "__main__":
    main()
