"""Loopback AWS for the SageMaker backend: moto (S3, CloudWatch Logs) plus the fake SageMaker.

moto in server mode is faithful for S3 and Logs; SageMaker is ``sagemaker_service``.
Both listen on 127.0.0.1 and the real boto3 clients reach them through endpoint URLs,
the same ``AWS_ENDPOINT_URL_*`` variables botocore reads for any user.
"""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config
from cloudtrain.providers.sagemaker_aws import AwsClients
from cloudtrain.providers.sagemaker_job import LOG_GROUP
from fakes.sagemaker_service import FakeSageMaker
from moto.server import ThreadedMotoServer

REGION = "us-east-1"
BUCKET = "my-bucket"
DUMMY_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "AKIDLOOPBACK", "AWS_SECRET_ACCESS_KEY": "loopback-secret"}


class LoopbackAws:
    """Start with ``with LoopbackAws() as aws:``; ``aws.env`` points botocore at it."""

    def __init__(self) -> None:
        self.moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.sagemaker = FakeSageMaker(REGION)
        self.sleeps: list[float] = []
        self.env: dict[str, str] = {}

    def __enter__(self) -> LoopbackAws:
        self.moto.start()
        host, port = self.moto.get_host_and_port()
        moto_url = f"http://{host}:{port}"
        self.env = {
            **DUMMY_CREDENTIALS,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ENDPOINT_URL_S3": moto_url,
            "AWS_ENDPOINT_URL_CLOUDWATCH_LOGS": moto_url,
            "AWS_ENDPOINT_URL_SAGEMAKER": self.sagemaker.serve(),
        }
        self.client("s3").create_bucket(Bucket=BUCKET)
        return self

    def __exit__(self, *exc: object) -> None:
        self.sagemaker.shutdown()
        self.moto.stop()

    def client(self, service: str) -> Any:
        """A real boto3 client for ``service`` on the loopback endpoint, no botocore retries."""
        url = self.env[f"AWS_ENDPOINT_URL_{'CLOUDWATCH_LOGS' if service == 'logs' else service.upper()}"]
        return boto3.session.Session(
            aws_access_key_id=DUMMY_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=DUMMY_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            region_name=REGION,
        ).client(service, endpoint_url=url, config=Config(retries={"total_max_attempts": 1}))

    def clients(self, **overrides: Any) -> AwsClients:
        """Injected clients for the backend; sleeps are recorded in ``self.sleeps``, not slept."""
        return AwsClients(
            region=REGION,
            sagemaker=self.client("sagemaker"),
            s3=self.client("s3"),
            logs=self.client("logs"),
            sleep=self.sleeps.append,
            **overrides,
        )

    def put_logs(self, stream: str, lines: list[tuple[int, str]]) -> None:
        """Write ``(timestamp_ms, message)`` lines to a job's stream, as SageMaker would."""
        logs = self.client("logs")
        if not logs.describe_log_groups(logGroupNamePrefix=LOG_GROUP)["logGroups"]:
            logs.create_log_group(logGroupName=LOG_GROUP)
        logs.create_log_stream(logGroupName=LOG_GROUP, logStreamName=stream)
        events = [{"timestamp": ts, "message": message} for ts, message in lines]
        logs.put_log_events(logGroupName=LOG_GROUP, logStreamName=stream, logEvents=events)
