"""SageMaker's quota preflight: boto3's Service Quotas client against the fake Service Quotas, and
the SageMaker client against the fake SageMaker for the instances running jobs hold."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from cloudtrain import api, catalog
from cloudtrain.provider import registry
from cloudtrain.provider.quotas import BUSY, OK, OVER, UNKNOWN
from cloudtrain.providers import sagemaker
from cloudtrain.providers.sagemaker import quotas
from tests.cloudtrain.providers.fakes.sagemaker_aws import LoopbackAws
from tests.cloudtrain.providers.sagemaker.test_submit import EXAMPLE
from tests.conftest import Result

# The Service Quotas names of SageMaker's training quotas (docs.aws.amazon.com/general/latest/gr/sagemaker.html).
QUOTA_NAME = re.compile(r"ml\.[a-z0-9]+\.[a-z0-9]+ for (spot )?training job usage")


def readings(aws: LoopbackAws, *overrides: str) -> list:  # type: ignore[type-arg]
    plan = api.plan(api.as_spec(EXAMPLE, ("resources.hosts=2", *overrides)), "sagemaker")
    provider = registry.get("sagemaker")
    return provider.read_quotas(plan, provider.quota_needs(plan), clients=aws.clients())


def running(aws: LoopbackAws, run_id: str) -> None:
    """A one-instance training job of run ``run_id``, in progress."""
    planned, packed = api.pack_code(
        api.plan(api.as_spec(EXAMPLE, ("resources.hosts=1",)), "sagemaker").with_run(run_id)
    )
    sagemaker.submit(planned, sagemaker.provider.render(planned), packed, clients=aws.clients())


def test_every_gpu_instance_type_of_the_catalog_has_its_training_quotas() -> None:
    gpu_types = {
        machine.machine_type
        for machine in catalog.machines("sagemaker")
        if catalog.accelerators()[machine.accelerator].kind == "gpu"
    }
    assert gpu_types
    for instance_type in sorted(gpu_types):
        for spot in (False, True):
            [need] = quotas.needs(instance_type, 2, spot=spot, region="us-east-1")
            assert QUOTA_NAME.fullmatch(need.name), need.name
            assert (need.amount, need.unit) == (2, "instances")
            assert need.name.startswith(f"{instance_type} for ")


@pytest.mark.parametrize(
    ("limit", "applied", "verdict"),
    [
        (0, False, OVER),  # a new account: AWS's default is 0 and nothing was applied
        (1, True, OVER),  # fewer than the job's 2 instances
        (4, True, OK),
    ],
)
def test_the_limit_is_the_accounts_value_else_awss_default(
    aws: LoopbackAws, limit: float, applied: bool, verdict: str
) -> None:
    name = "ml.g4dn.xlarge for training job usage"
    for number in range(3):  # other quotas on the pages before: the reader pages through
        aws.quotas.set_quota(
            f"ml.m5.{number}xlarge for training job usage", 10, code=f"L-OTHER{number}", applied=applied
        )
    aws.quotas.set_quota(name, limit, code="L-G4DNX", applied=applied)
    [reading] = readings(aws)
    assert (reading.need.name, reading.limit, reading.used, reading.verdict) == (name, limit, 0, verdict)
    assert reading.need.increase == (
        "aws service-quotas request-service-quota-increase --service-code sagemaker "
        "--quota-code L-G4DNX --desired-value 2 --region us-east-1"
    )


def test_the_instances_of_jobs_in_progress_count_against_it(aws: LoopbackAws) -> None:
    aws.quotas.set_quota("ml.g4dn.xlarge for training job usage", 3, code="L-G4DNX")
    aws.sagemaker.script([("InProgress", "Training", "Training")])
    running(aws, "r1")  # one instance of ml.g4dn.xlarge, in progress
    [reading] = readings(aws)
    assert (reading.used, reading.headroom, reading.verdict) == (1, 2, OK)
    running(aws, "r2")  # another run, another instance
    [reading] = readings(aws)
    assert (reading.used, reading.verdict) == (2, BUSY)


def test_spot_reads_the_spot_quota(aws: LoopbackAws) -> None:
    aws.quotas.set_quota("ml.g4dn.xlarge for spot training job usage", 8, code="L-SPOT")
    [reading] = readings(aws, "resources.spot=true")
    assert (reading.need.name, reading.verdict) == ("ml.g4dn.xlarge for spot training job usage", OK)


def test_a_read_aws_refuses_is_unknown_and_says_why(aws: LoopbackAws) -> None:
    aws.quotas.fail("ListServiceQuotas", "AccessDeniedException")
    [reading] = readings(aws)
    assert reading.verdict == UNKNOWN
    assert "AccessDeniedException" in reading.problem


def test_a_quota_service_quotas_does_not_list_is_unknown(aws: LoopbackAws) -> None:
    [reading] = readings(aws)
    assert (reading.verdict, reading.problem) == (
        UNKNOWN,
        "Service Quotas lists no such quota in this region",
    )
    assert reading.need.increase.startswith(quotas.CONSOLE)


def test_the_quotas_command_reads_them_and_check_adds_a_line(
    aws: LoopbackAws, run_cli: Callable[..., Result]
) -> None:
    aws.quotas.set_quota("ml.g4dn.xlarge for training job usage", 0, code="L-G4DNX")
    shown = run_cli("quotas", str(EXAMPLE), "--provider", "sagemaker")
    assert shown.code == 0
    assert (
        "ml.g4dn.xlarge for training job usage in us-east-1: needs 2 instances, the limit is 0, 0 in use: over the limit."
        in shown.out
    )
    document = json.loads(run_cli("quotas", str(EXAMPLE), "--provider", "sagemaker", "--json").out)
    assert [(q["name"], q["verdict"]) for q in document[0]["quotas"]] == [
        ("ml.g4dn.xlarge for training job usage", OVER)
    ]
    checked = run_cli("check", str(EXAMPLE), "--provider", "sagemaker", "--json")
    [quota] = [line for line in json.loads(checked.out) if line["check"] == "quota"]
    assert (quota["status"], quota["fix"]) == (
        "fail",
        "aws service-quotas request-service-quota-increase --service-code sagemaker --quota-code L-G4DNX "
        "--desired-value 2 --region us-east-1",
    )


def test_a_dry_run_reads_nothing(aws: LoopbackAws, run_cli: Callable[..., Result]) -> None:
    document = json.loads(
        run_cli("quotas", str(EXAMPLE), "--provider", "sagemaker", "--dry-run", "--json").out
    )
    assert [(q["name"], q["amount"], q["verdict"]) for q in document[0]["quotas"]] == [
        ("ml.g4dn.xlarge for training job usage", 2, UNKNOWN)
    ]
    assert aws.quotas.calls == []
