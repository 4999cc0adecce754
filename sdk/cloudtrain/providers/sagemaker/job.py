"""Create and control SageMaker training jobs through boto3: submit, attach, owns, and the job handle.

Idempotency. ``render`` names the job after the spec plus a hash of the request, which
holds the bundle's content hash, so rendering the same spec and code gives the same
name, and a retried or repeated submit asks SageMaker for a job that already exists.
SageMaker refuses it (``ResourceInUse``: names are unique per account and region,
forever) and ``submit`` attaches to that job instead of creating a second one. Any
change to the code or spec gives a new name. When the job with that name ended Failed
or Stopped, a re-submit is a retry: it creates ``<name>-r2`` (then ``-r3``, ...), as
Vertex creates a new CustomJob after a failed one. To run an identical job again after
a success, say so in the spec, e.g. ``--set sagemaker.tags.run=2``. Job IDs are
training-job ARNs.

Status words: ``states``. Logs come from CloudWatch Logs (``cloudtrain.providers.sagemaker.logs``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from cloudtrain.errors import ProviderError
from cloudtrain.provider.base import JobStatus, JobSummary, Stored
from cloudtrain.provider.follow import read_until_done
from cloudtrain.provider.jobs import WaitsByPolling, read_progress
from cloudtrain.provider.transfer import bundle_uri
from cloudtrain.providers.sagemaker import download, listing, outputs, upload
from cloudtrain.providers.sagemaker.clients import AwsCallError, AwsClients
from cloudtrain.providers.sagemaker.logs import LogReader
from cloudtrain.providers.sagemaker.settings import SageMakerSettings
from cloudtrain.providers.sagemaker.states import ARN, STOP_TAG, job_status
from cloudtrain_runtime.replica import PROGRESS_FILE

if TYPE_CHECKING:
    from datetime import datetime

    from cloudtrain.bundle import Bundle
    from cloudtrain.outputs import Outputs
    from cloudtrain.planning import Plan
    from cloudtrain.progress import OnProgress

# A job that ended like this is retried under the next attempt name; any other is reused.
RETRIED_STATUSES = ("Failed", "Stopped")
MAX_ATTEMPTS = 20


def submit(
    plan: Plan,
    request: dict[str, Any],
    bundle: Bundle,
    clients: AwsClients | None = None,
    progress: OnProgress | None = None,
) -> SageMakerJob:
    """Upload the code bundle (once) and create the training job; return its handle.

    A job with the request's name may already exist (a retried or repeated submit, see
    the module docstring): then this attaches to it and creates nothing. A queued request
    (``capacity: queue``) is ``batch.submit``'s. ``progress`` is
    called with the upload's ``cloudtrain.Progress``.

    Raises:
        ProviderError: SageMaker or S3 refused a call (one line, with the fix).
        CredentialsError: no usable AWS credentials.
    """
    aws = clients or AwsClients(region=SageMakerSettings.of(plan.spec).region)
    upload_bundle(plan, bundle, aws, progress)
    arn, existed = _create(aws, request)
    job = SageMakerJob(arn, aws, request=request)
    job.attached = existed
    return job


def upload_bundle(
    plan: Plan, bundle: Bundle, clients: AwsClients | None = None, progress: OnProgress | None = None
) -> None:
    """Upload the code bundle to ``plan.bundle`` unless it is there; creates no job."""
    aws = clients or AwsClients(region=SageMakerSettings.of(plan.spec).region)
    upload.upload_bundle(aws, bundle, bundle_uri(plan, scheme="s3://"), progress=progress)


def _create(aws: AwsClients, request: dict[str, Any]) -> tuple[str, bool]:
    """Create the job and return its ARN, and whether it already existed (a live or completed job of the same name).

    Raises:
        ProviderError: every attempt name up to ``MAX_ATTEMPTS`` already failed.
    """
    for attempt in range(1, MAX_ATTEMPTS + 1):
        name = attempt_name(request["TrainingJobName"], attempt)
        try:
            created = aws.call("sagemaker", "create_training_job", **{**request, "TrainingJobName": name})
            return str(created["TrainingJobArn"]), False
        except AwsCallError as exc:
            if exc.code != "ResourceInUse" and "already exists" not in str(exc):
                raise
        described = aws.call("sagemaker", "describe_training_job", TrainingJobName=name)
        if described["TrainingJobStatus"] not in RETRIED_STATUSES:
            return str(described["TrainingJobArn"]), True
    raise ProviderError(
        f"{MAX_ATTEMPTS} attempts of {request['TrainingJobName']} already failed on SageMaker. "
        "Fix the cause (cloudtrain logs ID) and change the spec before submitting again."
    )


def attempt_name(name: str, attempt: int) -> str:
    """The job name of the ``attempt``-th submit of the same request, within 63 characters.

    Example:
    >>> attempt_name("churn-297b63d7bb", 1), attempt_name("churn-297b63d7bb", 2)
    ('churn-297b63d7bb', 'churn-297b63d7bb-r2')
    """
    if attempt == 1:
        return name
    base, _, digest = name.rpartition("-")
    suffix = f"-{digest}-r{attempt}"
    return f"{base[: 63 - len(suffix)]}{suffix}"


def _objects(aws: AwsClients, bucket: str, prefix: str) -> Iterator[dict[str, Any]]:
    """Every object under ``prefix``, page by page (ListObjectsV2 answers at most 1,000 at a time)."""
    token: dict[str, str] = {}
    while True:
        page = aws.call("s3", "list_objects_v2", Bucket=bucket, Prefix=prefix, **token)
        yield from page.get("Contents", [])
        if not page.get("IsTruncated"):
            return
        token = {"ContinuationToken": page["NextContinuationToken"]}


def owns(job_id: str) -> bool:
    """Whether ``job_id`` is a SageMaker training-job ARN.

    Example:
    >>> owns("arn:aws:sagemaker:us-east-1:123456789012:training-job/churn-297b63d7bb")
    True
    """
    return bool(ARN.match(job_id))


def attach(job_id: str, clients: AwsClients | None = None) -> SageMakerJob:
    """The handle of an existing job, from its ARN (the region comes from the ARN)."""
    match = ARN.match(job_id)
    if match is None:
        raise ProviderError(
            f"{job_id!r} is not a SageMaker training-job ARN "
            "(arn:aws:sagemaker:REGION:ACCOUNT:training-job/NAME). Use the ID submit printed."
        )
    return SageMakerJob(job_id, clients or AwsClients(region=match["region"]))


class SageMakerJob(WaitsByPolling):
    """A SageMaker training job, by ARN. Every call goes through ``AwsClients.call``."""

    provider = "sagemaker"
    attached = (
        False  # True when submit found this job made by an earlier submit (cloudtrain.provider.jobs.attached)
    )

    def __init__(self, arn: str, aws: AwsClients, *, request: dict[str, Any] | None = None) -> None:
        self.id = arn
        self.name = arn.rsplit("/", 1)[-1]
        self.request = request
        self._aws = aws

    @property
    def console_url(self) -> str:
        """The job's page in the SageMaker console (its region from the ARN).

        The form the Kubeflow Pipelines SageMaker components log for a training job
        (kubeflow/pipelines, ``components/aws/sagemaker/common/_utils.py``, ``create_training_job``).
        """
        region = self.id.split(":")[3]
        return f"https://{region}.console.aws.amazon.com/sagemaker/home?region={region}#/jobs/{self.name}"

    def describe(self) -> dict[str, Any]:
        """The raw DescribeTrainingJob response."""
        return dict(self._aws.call("sagemaker", "describe_training_job", TrainingJobName=self.name))

    def mlflow_run(self) -> dict[str, str] | None:
        """The MLflow run SageMaker recorded for a job tracked on managed MLflow; None for any other job.

        DescribeTrainingJob answers ``MlflowDetails`` (``MlflowExperimentId``, ``MlflowRunId``;
        botocore 1.44.18 sagemaker service model, API_MlflowDetails) for a job created with
        ``MlflowConfig`` (``render.mlflow_config``).
        """
        details = self.describe().get("MlflowDetails") or {}
        if not details.get("MlflowRunId"):
            return None
        return {
            "experiment_id": str(details.get("MlflowExperimentId", "")),
            "run_id": str(details["MlflowRunId"]),
        }

    @property
    def outputs(self) -> Outputs:
        """Where this job's artifacts are: its request under its real name, or DescribeTrainingJob's answer."""
        request = {**self.request, "TrainingJobName": self.name} if self.request else self.describe()
        return outputs.of_request(request, region=self.id.split(":")[3])

    def status(self) -> JobStatus:
        return job_status(self.describe(), self._stop_requested)

    def progress_record(self) -> object:
        """The chief's progress record, read from the checkpoint folder in S3; None before its first write.

        The runtime writes it into the checkpoint folder, which SageMaker syncs to
        ``CheckpointConfig.S3Uri`` while the job runs (``cloudtrain_runtime.providers.sagemaker``);
        the results folder reaches S3 only when the job ends.
        """
        backup = self.outputs.backup
        if not backup:
            return None
        return read_progress(lambda: download.read_object(f"{backup}/{PROGRESS_FILE}", self._aws))

    def cancel(self) -> None:
        """Stop the job (SIGTERM, then 120 s to save a checkpoint), marking the stop as ours.

        The tag comes first so no reader sees Stopped without it. Whoever could submit can
        tag: creating a job with Tags already needs sagemaker:AddTags.
        """
        tag = {"Key": STOP_TAG, "Value": "true"}
        self._aws.call("sagemaker", "add_tags", ResourceArn=self.id, Tags=[tag])
        self._aws.call("sagemaker", "stop_training_job", TrainingJobName=self.name)

    def _sleep(self, seconds: float) -> None:
        self._aws.sleep(seconds)

    def logs(
        self, follow: bool = False, *, since: datetime | None = None, tail: int | None = None
    ) -> Iterator[str]:
        """The job's log lines so far, ``[algo-N] message``; with ``follow``, until it ends.

        ``since`` is sent to CloudWatch as ``startTime``; ``tail`` keeps the last lines read.
        """
        since_ms = None if since is None else int(since.timestamp() * 1000)
        return read_until_done(
            LogReader(self._aws, self.name, since_ms=since_ms).read_new,
            follow=follow,
            is_done=lambda: self.status().done,
            sleep=self._aws.sleep,
            poll_s=self._aws.log_poll_s,
            tail=tail,
        )

    def summary(self) -> JobSummary:
        """This job as ``list`` shows it: shape, times, the estimate in its tags, its billed time once ended."""
        return listing.summary(self.describe(), self._tags())

    def kept_backup(self) -> Stored | None:
        """The run's checkpoint objects in S3 (SageMaker itself never deletes them).

        The runtime keeps them after success too: SageMaker uploads the export only when the
        job ends, and a file deleted in ``/opt/ml/checkpoints`` is deleted in S3
        (``cloudtrain_runtime.providers.sagemaker``).
        """
        prefix = f"{self.outputs.backup}/"
        bucket, _, key = prefix.removeprefix("s3://").partition("/")
        sizes = [item["Size"] for item in _objects(self._aws, bucket, key)]
        return Stored(prefix, sum(sizes), len(sizes), f"aws s3 rm --recursive {prefix}") if sizes else None

    def _stop_requested(self) -> bool:
        return any(tag["Key"] == STOP_TAG for tag in self._tags())

    def _tags(self) -> list[dict[str, str]]:
        return list(self._aws.call("sagemaker", "list_tags", ResourceArn=self.id).get("Tags", []))

    def __repr__(self) -> str:
        return f"SageMakerJob(id={self.id!r})"
