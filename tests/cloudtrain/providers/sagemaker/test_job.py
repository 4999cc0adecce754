"""The pure parts of a job's handle: DescribeTrainingJob words to neutral states, log stream names to hosts."""

from __future__ import annotations

from typing import Any

import pytest

from cloudtrain.providers.sagemaker import job as sagemaker_job
from cloudtrain.providers.sagemaker import logs as sagemaker_logs


def described(primary: str, secondary: str, **extra: Any) -> dict[str, Any]:
    return {"TrainingJobStatus": primary, "SecondaryStatus": secondary, **extra}


@pytest.mark.parametrize(
    ("primary", "secondary", "ours", "state"),
    [
        ("InProgress", "Starting", False, "pending"),  # instances launching
        ("InProgress", "DownloadingTrainingImage", False, "pending"),  # still before the first step
        ("InProgress", "Training", False, "running"),
        ("InProgress", "Interrupted", False, "pending"),  # spot capacity reclaimed, will resume
        ("InProgress", "Restarting", False, "pending"),  # spot capacity back
        ("InProgress", "SomethingNew", False, "running"),  # unknown words keep wait() waiting
        ("Completed", "Completed", False, "succeeded"),
        ("Failed", "Failed", False, "failed"),
        ("Stopping", "Stopping", True, "cancelling"),
        ("Stopped", "Stopped", True, "cancelled"),  # stopped through cloudtrain
        ("Stopped", "Stopped", False, "failed"),  # stopped by someone else
        ("Stopped", "MaxRuntimeExceeded", True, "failed"),  # a timeout is never a success
        ("Stopped", "MaxWaitTimeExceeded", False, "failed"),  # no spot capacity in time
    ],
)
def test_job_status(primary: str, secondary: str, ours: bool, state: str) -> None:
    status = sagemaker_job.job_status(described(primary, secondary), lambda: ours)
    assert (status.state, status.provider_state) == (state, f"{primary}/{secondary}")


def test_detail_has_the_latest_message_and_the_failure_reason_on_one_line() -> None:
    status = sagemaker_job.job_status(
        described(
            "Failed",
            "Failed",
            SecondaryStatusTransitions=[
                {"StatusMessage": "Starting"},
                {"StatusMessage": "Training job failed"},
            ],
            FailureReason="AlgorithmError: Traceback\n  File train.py\nValueError: bad",
        ),
        lambda: False,
    )
    assert status.detail == "Training job failed AlgorithmError: Traceback File train.py ValueError: bad"


def test_stop_tags_are_read_only_for_stopped_jobs() -> None:
    def forbidden() -> bool:
        raise AssertionError("list_tags costs a call; only a Stopped job needs it")

    assert sagemaker_job.job_status(described("Completed", "Completed"), forbidden).state == "succeeded"


@pytest.mark.parametrize(
    ("stream", "host"),
    [
        ("churn-0123456789/algo-1-1712345678", "algo-1"),  # SageMaker's <job>/algo-N-<epoch>
        ("churn-0123456789/algo-12-1712345678", "algo-12"),  # two-digit host numbers
    ],
)
def test_log_stream_host(stream: str, host: str) -> None:
    assert sagemaker_logs.stream_host(stream) == host
