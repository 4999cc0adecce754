"""SageMaker's capacity modes: AWS Batch queues, training plans, fallback shapes, warm pools.

The queued request is checked against botocore's ``batch`` model and its payload against
the request botocore would send to CreateTrainingJob, byte for byte; the queue runs on
the loopback Batch (``fakes/batch_service``), which hands the payload to the loopback
SageMaker as CreateTrainingJob.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from botocore.serialize import create_serializer

from cloudtrain import api
from cloudtrain.api import plan
from cloudtrain.errors import SpecError
from cloudtrain.planning import Plan
from cloudtrain.provider.failures import Reason
from cloudtrain.provider.pending import wait_to_start
from cloudtrain.providers import sagemaker
from cloudtrain.providers.sagemaker.batch import BatchJob
from cloudtrain.providers.sagemaker.render import training_of
from cloudtrain.specfile import load_settings, load_spec
from tests.cloudtrain.providers.fakes import sagemaker_model
from tests.cloudtrain.providers.fakes.sagemaker_aws import LoopbackAws

ROOT = Path(__file__).resolve().parents[4]
EXAMPLE = ROOT / "examples" / "binary_classifier" / "job.yaml"
GOLDEN = ROOT / "tests" / "golden" / "sagemaker" / "binary_classifier-queue.json"
QUEUE = "resources.capacity={mode: queue, name: ml-training}"
PLAN_ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p4d-week"


def planned(*overrides: str) -> Plan:
    p = plan(load_spec(EXAMPLE, list(overrides)), "sagemaker")
    return p.with_bundle(f"{p.storage.code}/0123456789abcdef.tar.gz").with_run("r1")


def botocore_body(operation: str, params: dict[str, Any]) -> bytes:
    """The HTTP body botocore itself builds for ``operation(**params)`` (its JSON serializer)."""
    model = sagemaker_model.operation(operation)
    body: bytes = create_serializer("json").serialize_to_request(params, model)["body"]
    return body


def test_a_queued_request_matches_its_golden_file_and_botocores_batch_model() -> None:
    request = sagemaker.provider.render(planned(QUEUE))
    if os.environ.get("CLOUDTRAIN_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(json.dumps(request, indent=2) + "\n")
    assert request == json.loads(GOLDEN.read_text())
    assert sagemaker_model.problems("SubmitServiceJob", request, service="batch") == []
    assert request["serviceJobType"] == "SAGEMAKER_TRAINING"


def test_the_queued_payload_is_the_direct_request_byte_for_byte() -> None:
    direct = sagemaker.provider.render(planned())
    queued = sagemaker.provider.render(planned(QUEUE))
    assert queued["serviceRequestPayload"].encode() == botocore_body("CreateTrainingJob", direct)
    assert sagemaker_model.problems("CreateTrainingJob", training_of(queued)) == []
    assert queued["jobName"] == direct["TrainingJobName"]  # the queue is no part of the job's identity


def test_the_queue_comes_from_the_capacity_then_the_section() -> None:
    named = sagemaker.provider.render(planned("resources.capacity=queue", "sagemaker.queue=ml-training"))
    assert named["jobQueue"] == "ml-training"
    with pytest.raises(SpecError, match=r"resources.capacity: capacity: queue on SageMaker goes through"):
        api.validate(load_spec(EXAMPLE, ["resources.capacity=queue"]), "sagemaker")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (  # flex: the issue's own example of a refusal with the alternative
            ["resources.capacity=flex"],
            "resources.capacity: SageMaker has no flex-start; use a Training Plan (capacity: plan) or spot.",
        ),
        (  # warm pools are refused with spot (train-warm-pools, 2023 guide)
            ["resources.capacity=spot", "sagemaker.keep_alive=10m"],
            "sagemaker.keep_alive: SageMaker keeps no warm pool for managed spot training",
        ),
        (  # a plan reserves capacity in its own region
            [
                "resources.capacity={mode: plan, arn: 'arn:aws:sagemaker:us-west-2:123456789012:training-plan/x'}"
            ],
            "resources.capacity.arn: the training plan is in us-west-2, the job in sagemaker.region us-east-1.",
        ),
        (  # InstancePreferences are exclusive with EnableManagedSpotTraining: shapes are on-demand only
            ["resources.capacity={mode: spot, shapes: [ml.g5.xlarge]}"],
            "shapes applies to capacity mode on_demand, not 'spot'",
        ),
        (  # a fallback that would train with another precision than the render's runtime config
            ["resources.capacity={shapes: [ml.g5.xlarge]}"],
            "resources.capacity.shapes: ml.g5.xlarge has 1 × a10g (bf16); it must train as the planned "
            "ml.g4dn.xlarge does",
        ),
        (  # a fallback with other devices per host would change the replicas and the global batch
            ["resources.capacity={shapes: [ml.g4dn.12xlarge]}"],
            "resources.capacity.shapes: ml.g4dn.12xlarge has 4 × t4",
        ),
        (  # the planned shape comes first already
            ["resources.capacity={shapes: [ml.g4dn.xlarge]}"],
            "resources.capacity.shapes: each instance type once",
        ),
    ],
)
def test_what_sagemaker_refuses_names_the_field_and_the_fix(overrides: list[str], message: str) -> None:
    with pytest.raises(SpecError) as refused:
        api.validate(load_spec(EXAMPLE, overrides), "sagemaker")
    assert message in str(refused.value)


def submit_queued(aws: LoopbackAws, *overrides: str) -> BatchJob:
    planned_, packed = api.pack_code(
        plan(load_spec(EXAMPLE, [QUEUE, *overrides]), "sagemaker").with_run("r1")
    )
    job = sagemaker.provider.submit(
        planned_, sagemaker.provider.render(planned_), packed, clients=aws.clients()
    )
    assert isinstance(job, BatchJob)
    return job


def test_a_queued_job_waits_in_the_queue_then_runs_its_payload_as_the_training_job(aws: LoopbackAws) -> None:
    aws.batch.hold = True
    job = submit_queued(aws)
    waiting = job.status()
    assert (waiting.state, waiting.provider_state) == ("queued", "RUNNABLE")
    assert waiting.pending_reason.startswith("waiting in AWS Batch job queue ml-training")
    assert waiting.pending_since is not None
    assert aws.sagemaker.count("CreateTrainingJob") == 0  # nothing exists on SageMaker while it waits
    aws.batch.release()
    final = job.wait(poll_s=0)
    assert final.state == "succeeded"
    [created] = aws.sagemaker.jobs.values()
    assert created.request == json.loads(job.request["serviceRequestPayload"])  # what the queue sent
    assert job.outputs.model.endswith(f"/{created.request['TrainingJobName']}/output/model.tar.gz")


def test_a_repeated_submit_attaches_to_the_queued_job(aws: LoopbackAws) -> None:
    aws.batch.hold = True
    first = submit_queued(aws)
    second = submit_queued(aws)
    assert second.id == first.id and second.attached
    assert aws.batch.count("SubmitServiceJob") == 1


def test_cancel_ends_a_queued_job_and_nothing_is_created(aws: LoopbackAws) -> None:
    aws.batch.hold = True
    job = submit_queued(aws)
    job.cancel()
    assert job.status().state == "cancelled"
    assert aws.sagemaker.count("CreateTrainingJob") == 0


def test_list_shows_the_job_queued_in_sagemaker_queue(aws: LoopbackAws, tmp_path: Path) -> None:
    aws.batch.hold = True
    job = submit_queued(aws)
    settings = load_settings(None)[0].model_copy(
        update={"sagemaker": load_settings(None)[0].sagemaker.model_copy(update={"queue": "ml-training"})}
    )
    found = {
        listed.id: listed
        for listed in sagemaker.provider.list_jobs(settings, limit=None, clients=aws.clients())
    }
    assert found[job.id].state == "queued"
    assert found[job.id].shape == "queued in ml-training"


def test_the_pending_limit_cancels_a_job_still_queued_with_reason_capacity(aws: LoopbackAws) -> None:
    aws.batch.hold = True
    job = submit_queued(aws)
    ticks = iter(range(0, 10_000, 60))  # each status read: a minute later
    final = wait_to_start(job, limit_s=120, poll_s=0, clock=lambda: next(ticks))
    assert final.state == "cancelled"
    assert final.failure is not None and final.failure.reason == Reason.CAPACITY
    assert "waiting in AWS Batch job queue ml-training" in final.failure.message
    assert aws.batch.count("TerminateServiceJob") == 1
    assert aws.sagemaker.count("CreateTrainingJob") == 0  # nothing ran, nothing is billed


def test_a_job_pending_on_its_training_plan_says_so(aws: LoopbackAws) -> None:
    aws.sagemaker.script(
        [
            ("InProgress", "Pending", "Waiting for the training plan's reserved capacity"),
            ("InProgress", "Training", "Training in progress."),
            ("Completed", "Completed", "Training job completed"),
        ]
    )
    planned_, packed = api.pack_code(
        plan(
            load_spec(
                EXAMPLE,
                [
                    "resources.accelerator=a100-40gb",
                    "resources.per_host=8",
                    f"resources.capacity={{mode: plan, arn: '{PLAN_ARN}'}}",
                ],
            ),
            "sagemaker",
        ).with_run("r1")
    )
    job = sagemaker.provider.submit(
        planned_, sagemaker.provider.render(planned_), packed, clients=aws.clients()
    )
    waiting = job.status()
    assert (waiting.state, waiting.provider_state) == ("pending", "InProgress/Pending")
    assert waiting.pending_reason.startswith("waiting for its training plan's capacity")
    assert job.status().pending_since is None  # training: not waiting any more


def cost_plan_offers(run_cli: Any) -> Any:
    """``cost --plan-offers`` for the example on 2 × p4d (8 × A100 each), on SageMaker."""
    return run_cli(
        "cost", str(EXAMPLE), "--provider", "sagemaker", "--plan-offers",
        "--set", "resources.accelerator=a100-40gb", "--set", "resources.per_host=8",
    )  # fmt: skip


def test_cost_plan_offers_lists_the_training_plans_upfront_fees(aws: LoopbackAws, run_cli: Any) -> None:
    result = cost_plan_offers(run_cli)
    assert result.code == 0, result.err
    # limits.max_runtime 1h, 2 × ml.p4d.24xlarge: 19.5 and 22.0 per instance-hour, cheapest first
    assert "Capacity bought ahead for 1 h (limits.max_runtime), paid upfront:" in result.out
    assert result.out.index("39.00 USD") < result.out.index("44.00 USD")
    searched = [params for name, params in aws.sagemaker.calls if name == "SearchTrainingPlanOfferings"]
    # each shape of a type sold as a plan (the operation's InstanceType enum), and no other
    assert {params["InstanceType"] for params in searched} == {
        "ml.p4d.24xlarge", "ml.p4de.24xlarge", "ml.p5.48xlarge", "ml.p5e.48xlarge"
    }  # fmt: skip
    [call] = [params for params in searched if params["InstanceType"] == "ml.p4d.24xlarge"]
    assert call == {
        "InstanceType": "ml.p4d.24xlarge",
        "InstanceCount": 2,
        "DurationHours": 1,
        "TargetResources": ["training-job"],
    }  # and the fake checked it against botocore's model, as every call
    assert sagemaker_model.problems("SearchTrainingPlanOfferings", call) == []


def test_cost_plan_offers_without_credentials_is_a_note_not_a_failure(
    run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    result = cost_plan_offers(run_cli)
    assert result.code == 0, result.err
    assert "No plan offerings for these shapes." in result.out
    assert "Note: SageMaker plan offerings: skipped: " in result.out
