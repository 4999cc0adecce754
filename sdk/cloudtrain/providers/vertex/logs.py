"""A custom job's logs from Cloud Logging, one line per entry, prefixed by replica.

Vertex sends each replica's stdout and stderr to Cloud Logging as entries of resource
type ``ml_job`` labelled with the job ID and the task (``workerpool0-0`` for the chief,
``workerpool1-N`` for worker N, as CustomJob.web_access_uris names them in google-cloud-aiplatform
2.7.0, google/cloud/aiplatform_v1/types/custom_job.py). This module calls the REST
method ``entries:list`` through the session ``clients.logging_session`` builds, rather
than adding google-cloud-logging for one call. Following polls with a timestamp cursor
(``cloudtrain.provider.follow``) and drops entries it has already printed.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from cloudtrain.provider.follow import read_until_done
from cloudtrain.providers.vertex.clients import (
    LOGGING_API,
    LOGGING_URL,
    ApiCall,
    VertexClients,
    logging_session,
    with_retries,
)

PAGE_SIZE = 1000
POLL_S = 5.0
TASK_LABEL = "ml.googleapis.com/task_name"
# Worker pool -> TF_CONFIG task type (https://cloud.google.com/vertex-ai/docs/training/distributed-training).
ROLES = {"workerpool0": "chief", "workerpool1": "worker", "workerpool2": "ps", "workerpool3": "evaluator"}


@dataclass
class LogReader:
    """Reads one job's entries through Cloud Logging's ``entries:list`` REST method."""

    project: str
    job_number: str
    since: str
    session: Any
    url: str
    owns_session: bool = False

    @classmethod
    def create(cls, *, project: str, job_number: str, since: str, clients: VertexClients) -> LogReader:
        """A reader for job ``job_number`` of ``project``, from ``since`` (its creation time) on.

        Cloud Logging searches only the last 24 hours unless the filter has a
        timestamp, so the job's own creation time bounds the search.
        """
        owned = clients.logs is None
        session, url = logging_session() if owned else (clients.logs, clients.logging_url or LOGGING_URL)
        return cls(
            project=project, job_number=job_number, since=since, session=session, url=url, owns_session=owned
        )

    def lines(
        self,
        *,
        follow: bool,
        is_done: Callable[[], bool],
        sleep: Callable[[float], None],
        poll_s: float = POLL_S,
        tail: int | None = None,
    ) -> Iterator[str]:
        """Formatted lines (of the first read, the last ``tail``); with ``follow``, until the job is done.

        The job's state is read before each fetch, so the entries written just before
        it ended are still printed.
        """
        cursor = _Cursor(self.since)

        def read_new() -> Iterator[str]:
            return (format_entry(e) for e in self.entries(cursor.since, sleep) if cursor.advance(e))

        try:
            yield from read_until_done(
                read_new, follow=follow, is_done=is_done, sleep=sleep, poll_s=poll_s, tail=tail
            )
        finally:
            if self.owns_session:
                self.session.close()

    def entries(self, since: str, sleep: Callable[[float], None]) -> Iterator[dict[str, Any]]:
        """Every entry of the job from ``since`` on, oldest first, across pages.

        Each page is read like any other Google call (``clients.with_retries``): a refused
        connection, a timeout, 429 and 5xx are retried; the rest is one line with the fix.
        """
        call = ApiCall(
            f"read the logs of job {self.job_number}", "entries.list", LOGGING_API, project=self.project
        )
        body: dict[str, Any] = {
            "resourceNames": [f"projects/{self.project}"],
            "filter": self.filter(since),
            "orderBy": "timestamp asc",
            "pageSize": PAGE_SIZE,
        }
        while True:
            page = with_retries(functools.partial(self._post, body), call, sleep=sleep)
            yield from page.get("entries", [])
            if not page.get("nextPageToken"):
                return
            body = {**body, "pageToken": page["nextPageToken"]}

    def filter(self, since: str) -> str:
        """The Logging query language filter for this job's entries at or after ``since``."""
        return (
            f'resource.type="ml_job" AND resource.labels.job_id="{self.job_number}" AND timestamp>="{since}"'
        )

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        from google.api_core import exceptions

        response = self.session.post(f"{self.url}/v2/entries:list", json=body, timeout=60)
        if response.status_code != 200:
            raise exceptions.from_http_response(response)
        return response.json()


@dataclass
class _Cursor:
    """The newest timestamp printed, and the entries printed at exactly that time.

    Polls ask for ``timestamp >= since``, so entries at ``since`` come back again.
    """

    since: str
    seen: set[str] = field(default_factory=set)

    def advance(self, entry: dict[str, Any]) -> bool:
        """Record ``entry``; False if it was already printed."""
        stamp, key = entry.get("timestamp", self.since), entry.get("insertId", "")
        if stamp == self.since and key in self.seen:
            return False
        if stamp != self.since:
            self.since, self.seen = stamp, set()
        self.seen.add(key)
        return True


def format_entry(entry: dict[str, Any]) -> str:
    """``[chief-0] message`` for one log entry.

    Example:
    >>> format_entry({"labels": {TASK_LABEL: "workerpool1-2"}, "textPayload": "epoch 1\\n"})
    '[worker-2] epoch 1'
    """
    return f"[{replica(entry)}] {message(entry)}"


def replica(entry: dict[str, Any]) -> str:
    """The replica that wrote ``entry`` (``chief-0``, ``worker-1``), or ``service`` for Vertex's own."""
    task = entry.get("labels", {}).get(TASK_LABEL) or entry.get("resource", {}).get("labels", {}).get(
        "task_name", ""
    )
    pool, _, index = task.partition("-")
    role = ROLES.get(pool)
    return f"{role}-{index}" if role and index else "service"


def message(entry: dict[str, Any]) -> str:
    """The entry's text: ``textPayload``, or ``jsonPayload.message``, or the JSON payload."""
    if "textPayload" in entry:
        return str(entry["textPayload"]).rstrip("\n")
    payload = entry.get("jsonPayload", {})
    text = payload.get("message", json.dumps(payload, sort_keys=True))
    return str(text).rstrip("\n")
