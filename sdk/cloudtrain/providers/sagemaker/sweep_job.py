"""Create and control SageMaker hyperparameter tuning jobs through boto3.

Idempotency as for training jobs: the tuning job's name holds a hash of the request, and
a name SageMaker already knows (``ResourceInUse``) is attached to, not created twice.
A tuning job's ID is its ARN, ``arn:aws:sagemaker:REGION:ACCOUNT:hyper-parameter-tuning-job/NAME``.

The trials are the tuning job's training jobs (ListTrainingJobsForHyperParameterTuningJob):
their tuned values (``TunedHyperParameters``), state, and the objective SageMaker read
from their logs (``FinalHyperParameterTuningJobObjectiveMetric``). A trial's own logs are
its training job's: ``cloudtrain logs`` with its ARN.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from cloudtrain.errors import ProviderError
from cloudtrain.outputs import Outputs
from cloudtrain.provider.base import JobStatus, JobSummary, Usage
from cloudtrain.provider.jobs import WaitsByPolling
from cloudtrain.provider.sweeps import STOPPED, Trial, TrialEventLogs, best_of
from cloudtrain.providers.sagemaker import failures, sweep
from cloudtrain.providers.sagemaker.clients import AwsCallError, AwsClients
from cloudtrain.providers.sagemaker.job import upload_bundle
from cloudtrain.providers.sagemaker.listing import accelerator_of
from cloudtrain.providers.sagemaker.render import JOB_TAG, estimate_from_tags
from cloudtrain.providers.sagemaker.settings import SageMakerSettings

if TYPE_CHECKING:
    from cloudtrain.bundle import Bundle
    from cloudtrain.planning import Plan
    from cloudtrain.progress import OnProgress

SWEEP_ARN = re.compile(
    r"\Aarn:aws[a-z-]*:sagemaker:(?P<region>[a-z0-9-]+):(?P<account>[0-9]{12}):"
    r"hyper-parameter-tuning-job/(?P<name>[a-zA-Z0-9-]{1,32})\Z"
)
# HyperParameterTuningJobStatus -> neutral state (botocore sagemaker model).
STATES = {
    "InProgress": "running",
    "Completed": "succeeded",
    "Failed": "failed",
    "Stopping": "cancelling",
    "Stopped": "cancelled",
    "Deleting": "cancelled",
    "DeleteFailed": "failed",
}
# TrainingJobStatus of a trial; a Stopped trial with no stop of ours was early-stopped by the tuner.
TRIAL_STATES = {
    "InProgress": "running",
    "Completed": "succeeded",
    "Failed": "failed",
    "Stopping": STOPPED,
    "Stopped": STOPPED,
}


def owns(job_id: str) -> bool:
    return SWEEP_ARN.match(job_id) is not None


def submit(
    plan: Plan,
    request: dict[str, Any],
    bundle: Bundle,
    clients: AwsClients | None = None,
    progress: OnProgress | None = None,
) -> SageMakerSweep:
    """Upload the code bundle once and create the tuning job, or attach to the one of the same name."""
    aws = clients or AwsClients(region=SageMakerSettings.of(plan.spec).region)
    upload_bundle(plan, bundle, aws, progress)
    name = request["HyperParameterTuningJobName"]
    try:
        arn = aws.call("sagemaker", "create_hyper_parameter_tuning_job", **request)[
            "HyperParameterTuningJobArn"
        ]
    except AwsCallError as exc:
        if exc.code != "ResourceInUse" and "already exists" not in str(exc):
            raise
        arn = aws.call("sagemaker", "describe_hyper_parameter_tuning_job", HyperParameterTuningJobName=name)[
            "HyperParameterTuningJobArn"
        ]
    return SageMakerSweep(str(arn), aws, request=request)


def attach(job_id: str, clients: AwsClients | None = None) -> SageMakerSweep:
    match = SWEEP_ARN.match(job_id)
    if match is None:
        raise ProviderError(f"{job_id!r} is not a SageMaker hyperparameter tuning job ARN.")
    return SageMakerSweep(job_id, clients or AwsClients(region=match["region"]))


def list_sweeps(clients: AwsClients, *, limit: int | None) -> list[JobSummary]:
    """cloudtrain's tuning jobs in the clients' region (the ``cloudtrain:job`` tag exists), newest first."""
    query = {
        "Resource": "HyperParameterTuningJob",
        "SearchExpression": {"Filters": [{"Name": f"Tags.{JOB_TAG}", "Operator": "Exists"}]},
        "SortBy": "CreationTime",
        "SortOrder": "Descending",
        "MaxResults": min(limit or 100, 100),
    }
    page = clients.call("sagemaker", "search", **query)
    found = [r["HyperParameterTuningJob"] for r in page.get("Results", []) if "HyperParameterTuningJob" in r]
    return [summary(job, job.get("Tags", []), _ended_trials(job, clients)) for job in found[:limit]]


def _ended_trials(job: dict[str, Any], clients: AwsClients) -> list[dict[str, Any]]:
    """An ended tuning job's training jobs (for its cost); none asked for one still running."""
    if not job.get("HyperParameterTuningEndTime"):
        return []
    return SageMakerSweep(job["HyperParameterTuningJobArn"], clients)._training_jobs()


class SageMakerSweep(TrialEventLogs, WaitsByPolling):
    """A SageMaker tuning job, by ARN: status, trials, best, stop and wait."""

    provider = "sagemaker"

    def __init__(self, arn: str, aws: AwsClients, *, request: dict[str, Any] | None = None) -> None:
        self.id, self.request, self._aws = arn, request, aws
        self.name = arn.rsplit("/", 1)[-1]
        self.region = arn.split(":")[3]

    @property
    def console_url(self) -> str:
        return (
            f"https://{self.region}.console.aws.amazon.com/sagemaker/home?region={self.region}"
            f"#/hyper-tuning-jobs/{self.name}"
        )

    def describe(self) -> dict[str, Any]:
        return dict(
            self._aws.call(
                "sagemaker", "describe_hyper_parameter_tuning_job", HyperParameterTuningJobName=self.name
            )
        )

    def _training_jobs(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        token = None
        while True:
            page = self._aws.call(
                "sagemaker",
                "list_training_jobs_for_hyper_parameter_tuning_job",
                HyperParameterTuningJobName=self.name,
                SortBy="CreationTime",
                SortOrder="Ascending",
                **({"NextToken": token} if token else {}),
            )
            found += page.get("TrainingJobSummaries", [])
            token = page.get("NextToken")
            if not token:
                return found

    def status(self) -> JobStatus:
        described = self.describe()
        state = described["HyperParameterTuningJobStatus"]
        detail = described.get("FailureReason", "")
        failure = failures.job_failure(detail) if STATES[state] == "failed" else None
        return JobStatus(STATES[state], state, detail, failure)

    @property
    def goal(self) -> str:
        return str(
            self.describe()["HyperParameterTuningJobConfig"]["HyperParameterTuningJobObjective"]["Type"]
        ).lower()

    @property
    def metric(self) -> str:
        return str(
            self.describe()["HyperParameterTuningJobConfig"]["HyperParameterTuningJobObjective"]["MetricName"]
        )

    def trials(self) -> list[Trial]:
        described = self.describe()
        return trials_of(self._training_jobs(), described["TrainingJobDefinition"])

    def best(self) -> Trial | None:
        return best_of(self.trials(), self.goal)

    @property
    def outputs(self) -> Outputs:
        """The best training job's artifacts; ``{trial}`` for its name until one has ended."""
        described = self.describe()
        best = described.get("BestTrainingJob", {}).get("TrainingJobName", sweep.TRIAL)
        found = sweep.job_outputs.of_request(
            {**described["TrainingJobDefinition"], "TrainingJobName": best}, region=self.region
        )
        return Outputs(**{**found.to_dict(), "tensorboard": ""})

    def cancel(self) -> None:
        self._aws.call("sagemaker", "stop_hyper_parameter_tuning_job", HyperParameterTuningJobName=self.name)

    def _sleep(self, seconds: float) -> None:
        self._aws.sleep(seconds)

    def summary(self) -> JobSummary:
        tags = self._aws.call("sagemaker", "list_tags", ResourceArn=self.id).get("Tags", [])
        return summary(self.describe(), tags, self._training_jobs())

    def __repr__(self) -> str:
        return f"SageMakerSweep(id={self.id!r})"


def trials_of(jobs: list[dict[str, Any]], definition: dict[str, Any]) -> list[Trial]:
    """The tuning job's training jobs, oldest first, as trials."""
    output = definition["OutputDataConfig"]["S3OutputPath"].rstrip("/")
    found = []
    for number, job in enumerate(sorted(jobs, key=lambda j: j["CreationTime"]), start=1):
        final = job.get("FinalHyperParameterTuningJobObjectiveMetric")
        found.append(
            Trial(
                number=number,
                id=job["TrainingJobName"],
                state=TRIAL_STATES.get(job["TrainingJobStatus"], "failed"),
                values={name: _plain(value) for name, value in job["TunedHyperParameters"].items()},
                objective=float(final["Value"]) if final else None,
                epochs=0,
                job=job["TrainingJobArn"],
                model=f"{output}/{job['TrainingJobName']}/output/model.tar.gz",
                detail=job.get("FailureReason", ""),
            )
        )
    return found


def _plain(text: str) -> int | float | str:
    """A tuned value as SageMaker reports it (a string): a number where it reads as one."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def summary(job: dict[str, Any], tags: list[dict[str, str]], trials: list[dict[str, Any]]) -> JobSummary:
    """A tuning job as ``list`` shows it; once ended, its trials' training time on every instance."""
    definition = job["TrainingJobDefinition"]
    resources = definition.get("ResourceConfig", {})
    hosts, machine = resources.get("InstanceCount", 0), resources.get("InstanceType", "")
    values = {tag.get("Key"): tag.get("Value") for tag in tags}
    counters = job.get("TrainingJobStatusCounters", {})
    state = STATES[job["HyperParameterTuningJobStatus"]]
    ended = job.get("HyperParameterTuningEndTime")
    limit = job["HyperParameterTuningJobConfig"]["ResourceLimits"].get("MaxNumberOfTrainingJobs", "?")
    return JobSummary(
        id=job["HyperParameterTuningJobArn"],
        name=values.get(JOB_TAG) or job["HyperParameterTuningJobName"],
        provider="sagemaker",
        state=state,
        created=job["CreationTime"],
        started=job["CreationTime"],
        ended=ended,
        shape=f"sweep of {sum(int(v) for v in counters.values())}/{limit} trials × {hosts} × {machine}",
        estimate=estimate_from_tags(tags),
        usage=_usage(job, trials, hosts, machine) if ended and trials else None,
    )


def _usage(job: dict[str, Any], trials: list[dict[str, Any]], hosts: int, machine: str) -> Usage:
    """Each trial from its training start to its end, on every instance (ListTrainingJobsFor... gives no billed time)."""
    seconds = sum(
        (t["TrainingEndTime"] - t["TrainingStartTime"]).total_seconds()
        for t in trials
        if t.get("TrainingStartTime") and t.get("TrainingEndTime")
    )
    match = SWEEP_ARN.match(job["HyperParameterTuningJobArn"])
    spot = bool(job["TrainingJobDefinition"].get("EnableManagedSpotTraining"))
    return Usage(
        region=match["region"] if match else "",
        machine_type=machine,
        accelerator=accelerator_of(machine),
        hosts=hosts,
        seconds=max(seconds, 0.0),
        spot=spot,
        measure="each trial's training start to end",
    )
