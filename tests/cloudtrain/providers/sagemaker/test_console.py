"""After ``submit`` and in ``status``: the job's console page and the TensorBoard command, on loopback AWS."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from tests.cloudtrain.providers.fakes.sagemaker_aws import LoopbackAws
from tests.conftest import Result

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "binary_classifier" / "job.yaml"


def test_submit_and_status_show_the_console_page(aws: LoopbackAws, run_cli: Callable[..., Result]) -> None:
    submitted = run_cli("submit", str(EXAMPLE), "--provider", "sagemaker")
    assert submitted.code == 0, submitted.err
    arn = submitted.out.strip()
    name = arn.rsplit("/", 1)[-1]
    console = (
        f"Console: https://us-east-1.console.aws.amazon.com/sagemaker/home?region=us-east-1#/jobs/{name}"
    )
    assert console in submitted.err.splitlines()
    assert re.search(r"^TensorBoard: tensorboard --logdir s3://\S+$", submitted.err, re.MULTILINE)
    status = run_cli("status", arn)
    assert status.code == 0, status.err
    assert console in status.err.splitlines()
