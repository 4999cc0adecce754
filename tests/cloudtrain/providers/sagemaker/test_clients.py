"""The boto3 clients the backend builds: botocore's retry settings, the user's where they set any."""

from __future__ import annotations

from pathlib import Path

import pytest

from cloudtrain import api
from cloudtrain.errors import ProviderError
from cloudtrain.planning import plan
from cloudtrain.providers import sagemaker
from cloudtrain.specfile import load_spec
from tests.cloudtrain.providers.fakes.sagemaker_aws import LoopbackAws

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "binary_classifier" / "job.yaml"


@pytest.mark.parametrize(
    ("environment", "config_file", "retries"),
    [
        ({}, "", {"mode": "standard", "total_max_attempts": 4}),  # nothing set: standard, 4 tries
        ({"AWS_MAX_ATTEMPTS": "2"}, "", {"mode": "standard", "total_max_attempts": 2}),  # the user's count
        ({"AWS_RETRY_MODE": "adaptive"}, "", {"mode": "adaptive", "total_max_attempts": 4}),  # their mode
        ({}, "retry_mode = adaptive\nmax_attempts = 3\n", {"mode": "adaptive", "total_max_attempts": 3}),
    ],
)
def test_clients_retry_as_the_user_set_else_in_standard_mode(
    aws: LoopbackAws,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    environment: dict[str, str],
    config_file: str,
    retries: dict[str, object],
) -> None:
    config = tmp_path / "config"
    config.write_text(f"[default]\n{config_file}")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    client = aws.clients(attempts=4, session=None).client("sagemaker")  # a new session reads the config
    assert client.meta.config.retries == retries


def test_the_users_attempt_count_bounds_a_throttled_create(
    aws: LoopbackAws, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")
    aws.sagemaker.fail("CreateTrainingJob", "ThrottlingException", times=10)
    planned, packed = api.pack_code(plan(load_spec(EXAMPLE), "sagemaker").with_run("r1"))
    with pytest.raises(ProviderError, match="ThrottlingException"):
        sagemaker.submit(planned, sagemaker.render(planned), packed, clients=aws.clients(attempts=6))
    assert aws.sagemaker.count("CreateTrainingJob") == 2
    assert len(aws.sleeps) == 1
