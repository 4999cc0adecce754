"""Listing and describing cloudtrain's training jobs: the real boto3 client's Search and Describe, on loopback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cloudtrain import api
from cloudtrain.errors import ProviderError
from cloudtrain.planning import WORST_CASE
from cloudtrain.providers import sagemaker
from cloudtrain.providers.sagemaker import listing
from cloudtrain.spec import JobSpec
from cloudtrain.specfile import load_spec
from tests.cloudtrain.providers.fakes.sagemaker_aws import LoopbackAws

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "binary_classifier" / "job.yaml"
NOBODY = JobSpec(name="demo", code={"module": "trainer.task"})


def create(aws: LoopbackAws, *overrides: str, tags: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """Create the example's training job (as cloudtrain renders it) through boto3; its request."""
    request = api.prepare(load_spec(EXAMPLE, overrides), "sagemaker").request
    if tags is not None:
        request = {**request, "Tags": tags}
    aws.client("sagemaker").create_training_job(**request)
    return request


def finish(aws: LoopbackAws, request: dict[str, Any], *, training_s: int, billable_s: int) -> None:
    """Move the job to Completed, as many describes do, with the seconds SageMaker will report."""
    job = aws.sagemaker.jobs[request["TrainingJobName"]]
    job.training_s, job.billable_s = training_s, billable_s
    while job.step[0] != "Completed":
        job.advance()


def test_lists_only_tagged_jobs_newest_first(aws: LoopbackAws) -> None:
    first = create(aws, "name=first")
    create(aws, "name=other", tags=[{"Key": "team", "Value": "x"}])
    second = create(aws, "name=second")
    aws.sagemaker.jobs[second["TrainingJobName"]].created += 10
    found = listing.list_jobs(aws.clients(), limit=None)
    assert [job.name for job in found] == ["second", "first"]
    assert found[1].id == aws.sagemaker.jobs[first["TrainingJobName"]].arn
    query = next(params for operation, params in aws.sagemaker.calls if operation == "Search")
    assert query["SearchExpression"] == {"Filters": [{"Name": "Tags.cloudtrain:job", "Operator": "Exists"}]}
    assert (query["SortBy"], query["SortOrder"], query["Resource"]) == (
        "CreationTime",
        "Descending",
        "TrainingJob",
    )


def test_pages_until_the_limit(aws: LoopbackAws) -> None:
    for index in range(5):
        create(aws, f"name=job{index}")
    assert len(listing.list_jobs(aws.clients(), limit=3)) == 3
    assert [query["MaxResults"] for name, query in aws.sagemaker.calls if name == "Search"] == [3]
    assert len(listing.list_jobs(aws.clients(), limit=None)) == 5


def test_pages_follow_the_next_token(aws: LoopbackAws, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(listing, "PAGE_SIZE", 2)
    for index in range(5):
        create(aws, f"name=job{index}")
    assert len(listing.list_jobs(aws.clients(), limit=None)) == 5
    searches = [query for name, query in aws.sagemaker.calls if name == "Search"]
    assert [query.get("NextToken") for query in searches] == [None, "2", "4"]


def test_a_completed_job_has_its_times_shape_estimate_and_billed_seconds(aws: LoopbackAws) -> None:
    request = create(aws)
    finish(aws, request, training_s=700, billable_s=700)
    (job,) = listing.list_jobs(aws.clients(), limit=None)
    assert (job.state, job.shape) == ("succeeded", "2 × ml.g4dn.xlarge")
    assert job.estimate is not None and job.estimate.basis == WORST_CASE
    assert job.started is not None and job.ended is not None and job.ended >= job.started
    assert job.usage is not None
    assert (job.usage.region, job.usage.machine_type, job.usage.accelerator) == (
        "us-east-1",
        "ml.g4dn.xlarge",
        "t4",
    )
    assert (job.usage.hosts, job.usage.seconds, job.usage.spot) == (2, 700.0, False)
    assert job.usage.measure == "BillableTimeInSeconds"


def test_a_spot_job_says_what_managed_spot_saved(aws: LoopbackAws) -> None:
    request = create(aws, "resources.spot=true")
    finish(aws, request, training_s=500, billable_s=100)
    (job,) = listing.list_jobs(aws.clients(), limit=None)
    assert job.usage is not None and job.usage.seconds == 100.0
    assert job.usage.spot is False  # the saving is in the billable seconds already
    assert job.usage.measure == "BillableTimeInSeconds, managed spot saved 80%"


def test_a_running_job_has_no_usage_and_search_moves_no_job(aws: LoopbackAws) -> None:
    request = create(aws)
    listing.list_jobs(aws.clients(), limit=None)
    (job,) = listing.list_jobs(aws.clients(), limit=None)
    assert job.usage is None and job.ended is None
    assert aws.sagemaker.jobs[request["TrainingJobName"]].position == -1


def test_summary_through_attach_reads_the_tags(aws: LoopbackAws) -> None:
    request = create(aws, "name=demo")
    arn = aws.sagemaker.jobs[request["TrainingJobName"]].arn
    described = sagemaker.attach(arn, aws.clients()).summary()
    assert (described.id, described.name, described.provider) == (arn, "demo", "sagemaker")
    assert described.estimate is not None
    assert aws.sagemaker.count("ListTags") == 1


def test_a_refused_search_is_one_provider_error(aws: LoopbackAws) -> None:
    aws.sagemaker.fail("Search", "AccessDeniedException")
    with pytest.raises(ProviderError, match="search failed: AccessDeniedException"):
        listing.list_jobs(aws.clients(), limit=None)


def test_configured_when_credentials_are_findable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    why = sagemaker.provider.configured(NOBODY)
    assert why is not None and "aws configure" in why
    credentials = tmp_path / "credentials"
    credentials.write_text("[default]\naws_access_key_id = x\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    assert sagemaker.provider.configured(NOBODY) is None


def test_configured_by_a_variable_or_a_role(monkeypatch: pytest.MonkeyPatch) -> None:
    with_role = JobSpec(
        name="demo", code={"module": "trainer.task"}, sagemaker={"role": "arn:aws:iam::123456789012:role/R"}
    )
    assert sagemaker.provider.configured(with_role) is None
    monkeypatch.setenv("AWS_PROFILE", "dev")
    assert sagemaker.provider.configured(NOBODY) is None
