"""Where a SageMaker training job's artifacts are: read off the request's own fields.

What SageMaker uploads, and where (https://docs.aws.amazon.com/sagemaker/latest/dg/model-checkpoints.html; "How Amazon SageMaker AI
Provides Training Information",
https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-training-algo-output.html):

- ``/opt/ml/model`` of every host, as ``<S3OutputPath>/<job>/output/model.tar.gz``;
  the runtime exports to ``<name>/1/`` in it, the layout SageMaker's TensorFlow Serving
  container serves;
- ``/opt/ml/output/data`` as ``<S3OutputPath>/<job>/output/output.tar.gz``, which holds
  the result, throughput and history files;
- ``CheckpointConfig.LocalPath`` synced to ``CheckpointConfig.S3Uri``: the backups;
- ``TensorBoardOutputConfig.LocalPath`` to ``TensorBoardOutputConfig.S3OutputPath``,
  only when the request has that field (API_TensorBoardOutputConfig);
- the container's output to CloudWatch Logs, group ``/aws/sagemaker/TrainingJobs``,
  streams ``<job>/algo-N-...``.

A field missing from the request means the artifact is not delivered: its URI is ``""``.

Example:
>>> request = {"TrainingJobName": "churn-1a2b", "OutputDataConfig": {"S3OutputPath": "s3://b/run/output"},
...            "CheckpointConfig": {"S3Uri": "s3://b/run/checkpoints/"}}
>>> outputs = of_request(request, region="us-east-1")
>>> outputs.model, outputs.backup, outputs.tensorboard
('s3://b/run/output/churn-1a2b/output/model.tar.gz', 's3://b/run/checkpoints', '')
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cloudtrain.outputs import JOB, Outputs
from cloudtrain.providers.sagemaker.render import delivery, training_of
from cloudtrain_runtime.replica import HISTORY_FILE, RESULT_FILE, THROUGHPUT_FILE

if TYPE_CHECKING:
    from cloudtrain.planning import Plan

LOGS_URL = (
    "https://console.aws.amazon.com/cloudwatch/home?region={region}"
    "#logStream:group=/aws/sagemaker/TrainingJobs;prefix={job};streamFilter=typeLogStreamPrefix"
)


def of_plan(plan: Plan, request: dict[str, Any] | None = None) -> Outputs:
    """The outputs of the job ``render(plan)`` (or ``request``, a queued one's payload) creates; ``{job}``: its TrainingJobName."""
    return of_request(
        training_of(request) if request else {"TrainingJobName": JOB, **delivery(plan)}, region=plan.region
    )


def of_request(request: dict[str, Any], *, region: str) -> Outputs:
    """The outputs of ``request`` (CreateTrainingJob arguments, or a DescribeTrainingJob answer)."""
    job = request["TrainingJobName"]
    output = f"{request['OutputDataConfig']['S3OutputPath'].rstrip('/')}/{job}/output"
    return Outputs(
        model=f"{output}/model.tar.gz",
        backup=request.get("CheckpointConfig", {}).get("S3Uri", "").rstrip("/"),
        tensorboard=request.get("TensorBoardOutputConfig", {}).get("S3OutputPath", "").rstrip("/"),
        logs=LOGS_URL.format(region=region, job=job),
        result=f"{output}/output.tar.gz#{RESULT_FILE}",
        throughput=f"{output}/output.tar.gz#{THROUGHPUT_FILE}",
        history=f"{output}/output.tar.gz#{HISTORY_FILE}",
    )
