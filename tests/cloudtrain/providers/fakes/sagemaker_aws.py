"""Loopback AWS for the SageMaker backend: moto (S3, CloudWatch Logs), the fake SageMaker,
Service Quotas and AWS Batch.

moto in server mode is faithful for S3 and Logs; SageMaker is ``sagemaker_service``, AWS
Batch's service jobs ``batch_service``.
Both listen on 127.0.0.1 and the real boto3 clients reach them through endpoint URLs,
the same ``AWS_ENDPOINT_URL_*`` variables botocore reads for any user.
"""

from __future__ import annotations

import functools
import time
import urllib.request
from datetime import UTC, datetime
from typing import Any

import boto3
import botocore.endpoint
import pytest
from botocore.config import Config
from moto.server import ThreadedMotoServer

from cloudtrain.providers.sagemaker.clients import AwsClients
from cloudtrain.providers.sagemaker.logs import LOG_GROUP

from .batch_service import FakeBatch
from .sagemaker_service import FakeSageMaker
from .service_quotas import FakeServiceQuotas

REGION = "us-east-1"
BUCKET = "my-bucket"
DUMMY_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "AKIDLOOPBACK", "AWS_SECRET_ACCESS_KEY": "loopback-secret"}


@functools.cache
def _session() -> boto3.session.Session:
    """One session for every client: it caches the service models (SageMaker's is large)."""
    return boto3.session.Session(
        aws_access_key_id=DUMMY_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=DUMMY_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        region_name=REGION,
    )


class LoopbackAws:
    """moto and the fake SageMaker on loopback; ``env`` points botocore at them.

    ``with LoopbackAws() as aws:`` starts both, empty, and stops them after the block.
    A test session can instead ``start()`` them once and ``reset()`` them before each
    test: stopping moto's server takes about a second.
    """

    def __init__(self) -> None:
        self.moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.sagemaker = FakeSageMaker(REGION)
        self.quotas = FakeServiceQuotas()
        self.batch = FakeBatch(self.sagemaker, REGION)
        self.sleeps: list[float] = []
        self.env: dict[str, str] = {}
        self._t0 = int(time.time() * 1000)

    def start(self) -> LoopbackAws:
        self.moto.start()
        host, port = self.moto.get_host_and_port()
        moto_url = f"http://{host}:{port}"
        self.env = {
            **DUMMY_CREDENTIALS,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ENDPOINT_URL_S3": moto_url,
            "AWS_ENDPOINT_URL_CLOUDWATCH_LOGS": moto_url,
            "AWS_ENDPOINT_URL_SAGEMAKER": self.sagemaker.serve(),
            "AWS_ENDPOINT_URL_SERVICE_QUOTAS": self.quotas.serve(),
            "AWS_ENDPOINT_URL_BATCH": self.batch.serve(),
        }
        return self

    def reset(self) -> None:
        """Empty every service and the recorded sleeps, then create ``BUCKET`` again."""
        # moto's backends live in this process and outlive a test: its reset endpoint empties them.
        moto_url = self.env["AWS_ENDPOINT_URL_S3"]
        urllib.request.urlopen(urllib.request.Request(f"{moto_url}/moto-api/reset", method="POST")).close()
        self.sagemaker.reset()
        self.quotas.reset()
        self.batch.reset()
        self.sleeps.clear()
        self._t0 = int(time.time() * 1000)
        self.client("s3").create_bucket(Bucket=BUCKET)

    def stop(self) -> None:
        self.sagemaker.shutdown()
        self.quotas.shutdown()
        self.batch.shutdown()
        self.moto.stop()

    def __enter__(self) -> LoopbackAws:
        self.start().reset()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Give the process a user's AWS environment pointing here, isolated from real config."""
        for name, value in self.env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
        monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
        for name in ("AWS_PROFILE", "AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE"):
            monkeypatch.delenv(name, raising=False)

    def record_retry_waits(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Record botocore's waits between retries in ``sleeps`` instead of sleeping them.

        botocore's endpoint waits with ``time.sleep`` of the ``time`` its module imported.
        """
        monkeypatch.setattr(botocore.endpoint, "time", _RecordingTime(self.sleeps))

    def client(self, service: str, endpoint_url: str | None = None) -> Any:
        """A real boto3 client for ``service`` on its loopback endpoint, no botocore retries."""
        name = "CLOUDWATCH_LOGS" if service == "logs" else service.upper().replace("-", "_")
        url = endpoint_url or self.env[f"AWS_ENDPOINT_URL_{name}"]
        return _session().client(service, endpoint_url=url, config=Config(retries={"total_max_attempts": 1}))

    def clients(self, **overrides: Any) -> AwsClients:
        """The backend's clients, built by cloudtrain from the installed environment.

        Polls and log reads record their sleeps in ``self.sleeps`` instead of sleeping.
        """
        defaults = {"session": _session(), "sleep": self.sleeps.append}
        return AwsClients(region=REGION, **(defaults | overrides))

    def at(self, offset_ms: int) -> datetime:
        """The time of a ``put_logs`` line written at ``offset_ms``."""
        return datetime.fromtimestamp((self._t0 + offset_ms) / 1000, tz=UTC)

    def put_logs(self, stream: str, lines: list[tuple[int, str]]) -> None:
        """Write ``(offset_ms, message)`` lines to a job's stream, as SageMaker would.

        Offsets count from the start of this test: CloudWatch refuses events older than 14 days.
        """
        logs = self.client("logs")
        if not logs.describe_log_groups(logGroupNamePrefix=LOG_GROUP)["logGroups"]:
            logs.create_log_group(logGroupName=LOG_GROUP)
        logs.create_log_stream(logGroupName=LOG_GROUP, logStreamName=stream)
        events = [{"timestamp": self._t0 + offset, "message": message} for offset, message in lines]
        logs.put_log_events(logGroupName=LOG_GROUP, logStreamName=stream, logEvents=events)


class _RecordingTime:
    """The ``time`` module as ``botocore.endpoint`` sees it, with a ``sleep`` that only records."""

    def __init__(self, sleeps: list[float]) -> None:
        self._sleeps = sleeps

    def sleep(self, seconds: float) -> None:
        self._sleeps.append(seconds)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)
