"""A training job's logs from CloudWatch Logs, one line per event, prefixed by host.

SageMaker writes each host's output to the log group ``/aws/sagemaker/TrainingJobs``,
stream ``<job>/algo-<N>-<epoch>`` (a restarted host gets a new stream). Lines are
prefixed with SageMaker's host name, ``[algo-1]``, the name the console and
resourceconfig.json use; the runtime makes the first host the chief. Following
(``cloudtrain.provider.follow``) reads each stream on from where the last read stopped.
``since`` becomes GetLogEvents' ``startTime`` (milliseconds since the epoch; events at or
after it are returned: https://boto3.amazonaws.com/v1/documentation/api/latest/reference/
services/logs/client/get_log_events.html), so CloudWatch does the filtering.
"""

from __future__ import annotations

import re
from typing import Any

from cloudtrain.providers.sagemaker.clients import AwsCallError, AwsClients

LOG_GROUP = "/aws/sagemaker/TrainingJobs"
_STREAM_HOST = re.compile(r"/(?P<host>.+?)(-[0-9]+)?\Z")


class LogReader:
    """Reads each of a job's log streams from where the last read stopped."""

    def __init__(self, aws: AwsClients, job_name: str, *, since_ms: int | None = None) -> None:
        self._aws = aws
        self._prefix = f"{job_name}/"
        self._tokens: dict[str, str | None] = {}
        self._start = {"startTime": since_ms} if since_ms is not None else {}

    def read_new(self) -> list[str]:
        """New lines of every stream, merged by timestamp (stable within a stream)."""
        events = [event for stream in self._streams() for event in self._read(stream)]
        events.sort(key=lambda event: event[0])
        return [line for _, line in events]

    def _streams(self) -> list[str]:
        names: list[str] = []
        kwargs: dict[str, Any] = {"logGroupName": LOG_GROUP, "logStreamNamePrefix": self._prefix}
        while True:
            try:
                page = self._aws.call("logs", "describe_log_streams", **kwargs)
            except AwsCallError as exc:
                if exc.code == "ResourceNotFoundException":  # no job has logged in this region yet
                    return names
                raise
            names += [stream["logStreamName"] for stream in page.get("logStreams", [])]
            if not page.get("nextToken"):
                return names
            kwargs["nextToken"] = page["nextToken"]

    def _read(self, stream: str) -> list[tuple[int, str]]:
        host = stream_host(stream)
        events: list[tuple[int, str]] = []
        while True:
            token = self._tokens.get(stream)
            # startTime goes with every read: a token is a position within the same time range.
            kwargs = {"nextToken": token, **self._start} if token else self._start
            page = self._aws.call(
                "logs",
                "get_log_events",
                logGroupName=LOG_GROUP,
                logStreamName=stream,
                startFromHead=True,
                **kwargs,
            )
            events += [(event["timestamp"], f"[{host}] {event['message']}") for event in page["events"]]
            self._tokens[stream] = page.get("nextForwardToken")
            # The forward token stays the same once the end of the stream is reached.
            if not page["events"] or page.get("nextForwardToken") == token:
                return events

    def __repr__(self) -> str:
        return f"LogReader(prefix={self._prefix!r})"


def stream_host(stream: str) -> str:
    """``job/algo-2-1712345678`` -> ``algo-2``.

    Example:
    >>> stream_host("churn-0123456789/algo-2-1712345678")
    'algo-2'
    """
    match = _STREAM_HOST.search(stream)
    return match["host"] if match else stream
