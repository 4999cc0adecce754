"""Train the bundled binary classifier in Vertex AI Pipelines, then upload the model it made.

``train`` is cloudtrain's CustomJob for ``examples/binary_classifier/job.yaml``, run by
Google Cloud Pipeline Components' ``CustomTrainingJobOp``: its worker pools and every other
field are exactly what ``cloudtrain render --provider vertex`` prints, and no pipeline VM
waits on it. ``upload`` registers the exported SavedModel in the Vertex AI Model Registry
from the typed ``UnmanagedContainerModel`` artifact ``train`` produces.

Install ``pip install 'cloudtrain[kfp]'``, set the project and bucket in job.yaml to yours,
then compile (this uploads the code bundle to the spec's storage root, once per content):

    python examples/pipelines/kfp_pipeline.py --out pipeline.yaml

and run pipeline.yaml with ``google.cloud.aiplatform.PipelineJob(template_path="pipeline.yaml", ...)``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from cloudtrain.pipelines.kfp import training_job

if TYPE_CHECKING:
    from cloudtrain import JobSpec

JOB = Path(__file__).resolve().parents[1] / "binary_classifier" / "job.yaml"


def compile_pipeline(out: str | Path, spec: str | Path | JobSpec = JOB, *, run_id: str | None = None) -> Path:
    """Compile the train-then-upload pipeline for ``spec`` (a job.yaml or a JobSpec) to ``out`` (KFP IR YAML)."""
    from google_cloud_pipeline_components.v1.model import ModelUploadOp
    from kfp import compiler, dsl

    # No return annotation: kfp reads it as the pipeline's output type.
    @dsl.pipeline(name="cloudtrain-binary-classifier")
    def pipeline():
        train = training_job(spec, run_id=run_id)
        ModelUploadOp(display_name="binary-classifier", unmanaged_container_model=train.model)

    compiler.Compiler().compile(pipeline, str(out))
    return Path(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="Where to write the compiled pipeline (YAML).")
    parser.add_argument("--spec", default=str(JOB), help="The job spec (default: the bundled example).")
    parser.add_argument("--run-id", default=None, help="The run id of the job (see cloudtrain.stage).")
    args = parser.parse_args()
    print(f"Wrote {compile_pipeline(args.out, args.spec, run_id=args.run_id)}")


if __name__ == "__main__":
    main()
