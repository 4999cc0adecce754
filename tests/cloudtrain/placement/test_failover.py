"""Failover against the clouds' loopback fakes: the real JobServiceClient and boto3 clients, each failure
in its provider's own wire form, read through the shared failure vocabulary.

The candidates: Vertex AI us-central1, SageMaker us-east-1, Vertex AI europe-west4. The
clock and the sleeps are the test's, so waiting out ``limits.max_pending`` takes no time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from cloudtrain import api
from cloudtrain.placement.failover import Failover, PlacementFailed
from cloudtrain.placement.resolve import Resolved, resolve
from cloudtrain.placement.trail import Attempt, Trail
from cloudtrain.provider.jobs import Job
from cloudtrain.providers import vertex
from tests.cloudtrain.providers.fakes.sagemaker_aws import LoopbackAws
from tests.cloudtrain.providers.fakes.vertex_jobservice import FakeJobService
from tests.cloudtrain.providers.vertex.test_failures import EXITED, STOCKOUT

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "binary_classifier" / "job.yaml"
CANDIDATES = (
    "placement=[{provider: vertex, region: us-central1}, {provider: sagemaker, region: us-east-1},"
    " {provider: vertex, region: europe-west4}]"
)
OVER_LIMIT = (
    "The account-level service limit 'ml.g4dn.xlarge for training job usage' is 0 Instances, with current "
    "utilization of 0 Instances and a request delta of 2 Instances. Please use AWS Service Quotas to request "
    "an increase for this quota."
)


class Clock:
    """A clock that moves only when the placement sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def candidates(fake_gcs: str, fake_vertex: FakeJobService, aws: LoopbackAws) -> list[Resolved]:
    fake_vertex.clock = int(time.time())  # a job created now has waited no time
    return resolve(api.as_spec(EXAMPLE, (CANDIDATES, "limits.max_cost_usd=1000")))


def failover(
    candidates: list[Resolved],
    aws: LoopbackAws,
    tmp_path: Path,
    sleep: Callable[[float], None] | None = None,
    **options: Any,
) -> Failover:
    """The placement of run-1; the jobs wait on its clock too, or on ``sleep`` when given."""
    clock = Clock()
    sleep = sleep or clock.sleep
    clients = {"vertex": vertex.VertexClients(sleep=sleep), "sagemaker": aws.clients(sleep=sleep)}

    def submit(candidate: Resolved) -> Job:
        provider = candidate.plan.provider
        return api.submit(candidate.spec, provider, run_id="run-1", clients=clients[provider])

    return Failover(
        candidates=candidates,
        submit=submit,
        attach=lambda job_id, provider: api.attach(job_id, provider, clients=clients[provider]),
        trail=Trail("run-1", tmp_path / "run-1.json"),
        max_pending_s=60,
        clock=clock,
        sleep=sleep,
        **options,
    )


def outcomes(trail: Trail) -> list[tuple[int, str, str, str]]:
    """Each attempt's candidate, outcome, reason and code, but the submits before each."""
    return [(a.candidate, a.outcome, a.reason, a.code) for a in trail.attempts if a.outcome != "submitted"]


def test_a_job_that_waits_too_long_is_cancelled_before_the_next_candidate_is_created(
    candidates: list[Resolved], fake_vertex: FakeJobService, aws: LoopbackAws, tmp_path: Path
) -> None:
    fake_vertex.states = ("JOB_STATE_QUEUED",)  # us-central1's quota is held by other jobs
    aws.sagemaker.fail("CreateTrainingJob", "ResourceLimitExceeded", message=OVER_LIMIT)
    placing = failover(candidates, aws, tmp_path)

    def europe_runs(job: Any) -> None:
        if "europe-west4" in job.name:
            fake_vertex.set_state(job.name, "JOB_STATE_RUNNING")

    fake_vertex.on_create = europe_runs
    job = placing.run()
    assert "locations/europe-west4/customJobs/" in job.id
    assert outcomes(placing.trail) == [
        (0, "cancelled", "capacity", "limits.max_pending"),
        (1, "refused", "quota", "ResourceLimitExceeded"),
        (2, "started", "", ""),
    ]
    methods = [name for name, _ in fake_vertex.requests if name in ("CreateCustomJob", "CancelCustomJob")]
    assert methods == ["CreateCustomJob", "CancelCustomJob", "CreateCustomJob"]  # never two live jobs
    first = next(j for name, j in fake_vertex.jobs.items() if "us-central1" in name)
    assert first.state.name == "JOB_STATE_CANCELLED"


def test_a_stockout_blocks_the_region_and_permission_blocks_the_provider(
    candidates: list[Resolved], fake_vertex: FakeJobService, aws: LoopbackAws, tmp_path: Path
) -> None:
    fake_vertex.on_create = lambda job: fake_vertex.set_state(
        job.name, "JOB_STATE_FAILED", error=(8, STOCKOUT)
    )
    aws.sagemaker.fail(
        "CreateTrainingJob",
        "AccessDeniedException",
        message="not authorized to perform sagemaker:CreateTrainingJob",
    )
    with pytest.raises(PlacementFailed) as failed:
        failover(candidates, aws, tmp_path).run()
    assert [(c, o, r) for c, o, r, _ in outcomes(failed.value.trail)] == [
        (0, "failed", "capacity"),
        (1, "refused", "permission"),
        (2, "failed", "capacity"),  # another region: capacity in one says nothing of another
    ]


def test_a_provider_that_refused_the_caller_is_not_asked_again(
    candidates: list[Resolved], fake_vertex: FakeJobService, aws: LoopbackAws, tmp_path: Path
) -> None:
    fake_vertex.fail(
        "CreateCustomJob",
        grpc.StatusCode.PERMISSION_DENIED,
        times=5,
        message="Permission 'aiplatform.customJobs.create' denied",
    )
    aws.sagemaker.script([("InProgress", "Training", "Training")])
    job = failover(candidates, aws, tmp_path).run()
    assert job.provider == "sagemaker"
    placing_trail = Trail.of_run("run-1", tmp_path)
    assert [
        (a.candidate, a.outcome, a.reason) for a in placing_trail.attempts if a.outcome != "submitted"
    ] == [
        (0, "refused", "permission"),
        (1, "started", ""),
    ]


def test_a_broken_trainer_stops_the_placement_at_once(
    candidates: list[Resolved], fake_vertex: FakeJobService, aws: LoopbackAws, tmp_path: Path
) -> None:
    fake_vertex.on_create = lambda job: fake_vertex.set_state(job.name, "JOB_STATE_FAILED", error=(9, EXITED))
    with pytest.raises(PlacementFailed) as failed:
        failover(candidates, aws, tmp_path).run()
    assert "placement.candidates[0] failed with user_code, which another candidate would meet too" in str(
        failed.value
    )
    assert aws.sagemaker.count("CreateTrainingJob") == 0  # never sent elsewhere to fail again
    assert len(fake_vertex.jobs) == 1


def test_an_interrupted_placement_attaches_to_the_job_it_left_live(
    candidates: list[Resolved], fake_vertex: FakeJobService, aws: LoopbackAws, tmp_path: Path
) -> None:
    fake_vertex.states = ("JOB_STATE_QUEUED",)

    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt

    first = failover(candidates, aws, tmp_path, sleep=interrupted)
    with pytest.raises(KeyboardInterrupt):
        first.run()
    # Ctrl-C while it waited: the job was cancelled, and the trail says so
    assert [(a.outcome, a.job_id is not None) for a in first.trail.attempts] == [
        ("submitted", True),
        ("cancelled", True),
    ]
    assert [job.state.name for job in fake_vertex.jobs.values()] == ["JOB_STATE_CANCELLED"]


def test_a_crashed_placement_resumes_on_the_job_its_trail_names(
    candidates: list[Resolved], fake_vertex: FakeJobService, aws: LoopbackAws, tmp_path: Path
) -> None:
    fake_vertex.states = ("JOB_STATE_QUEUED", "JOB_STATE_RUNNING")
    live = api.submit(
        candidates[0].spec, "vertex", run_id="run-1", clients=vertex.VertexClients(sleep=lambda s: None)
    )
    trail = Trail("run-1", tmp_path / "run-1.json")
    trail.add(
        Attempt(0, "vertex", "us-central1", "n1-standard-8", "submitted", job_id=live.id)
    )  # then the crash
    placing = failover(candidates, aws, tmp_path)
    placing.trail = Trail.of_run("run-1", tmp_path)
    job = placing.run()
    assert job.id == live.id
    assert len(fake_vertex.calls("CreateCustomJob")) == 1  # attached, not created again


def test_a_create_whose_answer_was_lost_is_attached_to_not_doubled(
    candidates: list[Resolved], fake_vertex: FakeJobService, aws: LoopbackAws, tmp_path: Path
) -> None:
    """The create is carried out but its answer lost, then the service keeps failing: the client's retries
    give up with INTERNAL, and the placement submits the candidate once more, which finds the job."""
    fake_vertex.lose_response("CreateCustomJob", grpc.StatusCode.INTERNAL)
    fake_vertex.fail("CreateCustomJob", grpc.StatusCode.INTERNAL, times=4)
    fake_vertex.on_create = lambda job: fake_vertex.set_state(job.name, "JOB_STATE_RUNNING")
    job = failover(candidates, aws, tmp_path).run()
    assert "locations/us-central1/" in job.id
    assert len(fake_vertex.jobs) == 1  # one live job of the run, whatever the lost answer
    assert aws.sagemaker.count("CreateTrainingJob") == 0
