"""``logs --since/--tail`` on SageMaker: ``since`` is GetLogEvents' startTime, honoured by moto's CloudWatch."""

from __future__ import annotations

from collections.abc import Callable

from cloudtrain.providers.sagemaker.job import SageMakerJob
from tests.cloudtrain.providers.fakes.sagemaker_aws import LoopbackAws
from tests.cloudtrain.providers.sagemaker.test_submit import submit
from tests.conftest import Result


def two_hosts(aws: LoopbackAws) -> SageMakerJob:
    job = submit(aws)
    aws.put_logs(f"{job.name}/algo-1-1700000000", [(1000, "epoch 1"), (3000, "epoch 2")])
    aws.put_logs(f"{job.name}/algo-2-1700000000", [(2000, "worker ready")])
    return job


def test_since_drops_earlier_events_of_every_stream(aws: LoopbackAws) -> None:
    job = two_hosts(aws)
    assert list(job.logs(since=aws.at(2000))) == ["[algo-2] worker ready", "[algo-1] epoch 2"]
    assert list(job.logs(since=aws.at(3001))) == []


def test_tail_keeps_the_last_lines_across_hosts(aws: LoopbackAws) -> None:
    job = two_hosts(aws)
    assert list(job.logs(tail=2)) == ["[algo-2] worker ready", "[algo-1] epoch 2"]


def test_the_cli_passes_both(aws: LoopbackAws, run_cli: Callable[..., Result]) -> None:
    job = two_hosts(aws)
    result = run_cli("logs", job.id, "--since", aws.at(1500).isoformat(), "--tail", "5")
    assert (result.code, result.out) == (0, "[algo-2] worker ready\n[algo-1] epoch 2\n")
