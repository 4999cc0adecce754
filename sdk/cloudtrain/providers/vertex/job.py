"""Submit, find and control Vertex AI custom jobs through ``aiplatform_v1.JobServiceClient``.

Everything here runs after ``render``: the only module of the Vertex backend that talks
to the JobService. google-cloud-aiplatform is imported inside the functions that need
it, so importing this module (and ``cloudtrain render``) stays cheap. See
``cloudtrain.providers.vertex`` for the idempotency rule and the test-only endpoints.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cloudtrain.errors import CredentialsError, ProviderError, require
from cloudtrain.providers import JobStatus, poll_until_done
from cloudtrain.providers.vertex.clients import ADC_FIX, with_retries

if TYPE_CHECKING:
    from cloudtrain.bundle import Bundle
    from cloudtrain.planning import Plan

ENDPOINT_ENV = "CLOUDTRAIN_VERTEX_ENDPOINT"
REQUEST_LABEL = "cloudtrain_request"
JOB_ID = re.compile(r"^projects/(?P<project>[^/]+)/locations/(?P<region>[^/]+)/customJobs/(?P<id>\d+)$")

# JobState name -> neutral state (aiplatform_v1 job_state.proto, reference/vertex.md §1.1).
STATES = {
    "JOB_STATE_UNSPECIFIED": "queued",
    "JOB_STATE_QUEUED": "queued",
    "JOB_STATE_PENDING": "queued",
    "JOB_STATE_PAUSED": "queued",
    "JOB_STATE_RUNNING": "running",
    "JOB_STATE_UPDATING": "running",
    "JOB_STATE_SUCCEEDED": "succeeded",
    "JOB_STATE_PARTIALLY_SUCCEEDED": "succeeded",
    "JOB_STATE_FAILED": "failed",
    "JOB_STATE_EXPIRED": "failed",
    "JOB_STATE_CANCELLING": "cancelling",
    "JOB_STATE_CANCELLED": "cancelled",
}
# An earlier job in these states is the answer to a repeated submit; others are retried.
REUSABLE_STATES = ("queued", "running", "succeeded")


@dataclass
class VertexClients:
    """The clients the Vertex backend uses; each is created on first use unless given.

    Args:
        jobs: an ``aiplatform_v1.JobServiceClient`` (any transport).
        storage: a ``google.cloud.storage.Client`` for the code upload.
        logs: a ``requests``-style session for Cloud Logging, with ``logging_url``.
        sleep: how to wait between retries and polls (tests pass a recorder).
    """

    jobs: Any = None
    storage: Any = None
    logs: Any = None
    logging_url: str | None = None
    sleep: Callable[[float], None] = time.sleep

    def job_service(self, region: str) -> Any:
        if self.jobs is None:
            self.jobs = job_service_client(region)
        return self.jobs

    def storage_client(self, project: str | None) -> Any:
        if self.storage is None:
            from cloudtrain.providers.vertex import upload as gcs

            self.storage = gcs.client(project)
        return self.storage

    def __repr__(self) -> str:
        given = [name for name in ("jobs", "storage", "logs") if getattr(self, name) is not None]
        return f"VertexClients(given={given})"


def job_service_client(region: str) -> Any:
    """A JobServiceClient for ``region``'s endpoint, or for ``$CLOUDTRAIN_VERTEX_ENDPOINT``.

    The test endpoint gets an insecure gRPC channel and no credentials at all.

    Raises:
        CredentialsError: no Application Default Credentials are set up.
    """
    require("google.cloud.aiplatform_v1", "vertex")
    from google.auth import exceptions as auth_exceptions
    from google.cloud import aiplatform_v1

    endpoint = os.environ.get(ENDPOINT_ENV)
    if endpoint:
        import grpc
        from google.cloud.aiplatform_v1.services.job_service.transports import JobServiceGrpcTransport

        transport = JobServiceGrpcTransport(channel=grpc.insecure_channel(endpoint))
        return aiplatform_v1.JobServiceClient(transport=transport)
    try:
        return aiplatform_v1.JobServiceClient(
            client_options={"api_endpoint": f"{region}-aiplatform.googleapis.com"}
        )
    except auth_exceptions.DefaultCredentialsError as exc:
        raise CredentialsError(ADC_FIX) from exc


def owns(job_id: str) -> bool:
    """Whether ``job_id`` is a custom job's resource name, ``projects/P/locations/L/customJobs/N``.

    Example:
    >>> owns("projects/my-project/locations/us-central1/customJobs/123"), owns("job-123")
    (True, False)
    """
    return JOB_ID.match(job_id) is not None


def submit(
    plan: Plan, request: dict[str, Any], bundle: Bundle, clients: VertexClients | None = None
) -> VertexJob:
    """Upload the code bundle, then create the custom job unless the same one exists.

    Args:
        plan: the Vertex plan ``request`` was rendered from (with its bundle URI).
        request: ``vertex.render(plan)``, sent as is.
        bundle: the packed code, uploaded to ``plan.bundle`` when not there yet.
        clients: clients to use instead of the defaults.

    Returns:
        A handle on the new job, or on the earlier job created from the same request.
    """
    from cloudtrain.providers.vertex import upload as gcs

    clients = clients or VertexClients()
    vertex = plan.spec.vertex
    assert plan.bundle is not None  # render refused a plan without one
    gcs.upload_once(bundle.path, plan.bundle, clients.storage_client(vertex.project), sleep=clients.sleep)
    parent = f"projects/{vertex.project}/locations/{vertex.region}"
    service = clients.job_service(vertex.region)
    existing = find_submitted(service, parent, request, clients.sleep)
    if existing is not None:
        return VertexJob(existing, clients=clients, request=request)
    created = with_retries(
        lambda: service.create_custom_job(parent=parent, custom_job=_custom_job(request)),
        action=f"create a custom job in {parent}",
        sleep=clients.sleep,
        creating=True,
    )
    return VertexJob(created.name, clients=clients, request=request)


def find_submitted(
    service: Any, parent: str, request: dict[str, Any], sleep: Callable[[float], None]
) -> str | None:
    """The newest job under ``parent`` created from ``request`` that is not failed or cancelled."""
    query = {"parent": parent, "filter": f'labels.{REQUEST_LABEL}="{request["labels"][REQUEST_LABEL]}"'}
    jobs = with_retries(
        lambda: list(service.list_custom_jobs(request=query)),
        action=f"list custom jobs in {parent}",
        sleep=sleep,
    )
    reusable = [job for job in jobs if STATES[job.state.name] in REUSABLE_STATES]
    newest = max(reusable, key=lambda job: job.create_time, default=None)
    return newest.name if newest is not None else None


def _custom_job(request: dict[str, Any]) -> Any:
    """The REST body as an ``aiplatform_v1.CustomJob``, rejecting any field the API lacks."""
    from google.cloud import aiplatform_v1
    from google.protobuf import json_format

    message = aiplatform_v1.CustomJob.pb(aiplatform_v1.CustomJob())
    try:
        json_format.ParseDict(request, message, ignore_unknown_fields=False)
    except json_format.ParseError as exc:
        raise ProviderError(
            f"The request is not a valid Vertex AI CustomJob: {exc}. Submit what vertex.render(plan) returns."
        ) from exc
    return aiplatform_v1.CustomJob.wrap(message)


def attach(job_id: str, clients: VertexClients | None = None) -> VertexJob:
    """A handle on the custom job ``job_id`` (its full resource name), in its own region."""
    if not owns(job_id):
        raise ProviderError(
            f"{job_id!r} is not a Vertex AI custom job name. "
            "Use the ID submit printed: projects/PROJECT/locations/REGION/customJobs/NUMBER."
        )
    return VertexJob(job_id, clients=clients or VertexClients())


class VertexJob:
    """A submitted custom job: status, logs, cancel and wait, by its resource name."""

    provider = "vertex"

    def __init__(self, job_id: str, *, clients: VertexClients, request: dict[str, Any] | None = None) -> None:
        match = JOB_ID.match(job_id)
        assert match is not None, job_id  # attach and submit pass resource names only
        self.id = job_id
        self.request = request
        self.region = match["region"]
        self._clients = clients

    def status(self) -> JobStatus:
        """The job's state now; ``detail`` carries Vertex's error message when it failed."""
        job = self._get()
        detail = job.error.message if job.error.message else ""
        return JobStatus(state=STATES[job.state.name], provider_state=job.state.name, detail=detail)

    def cancel(self) -> None:
        """Ask Vertex to cancel the job; it moves through CANCELLING to CANCELLED."""
        self._call(lambda service: service.cancel_custom_job(name=self.id), "cancel")

    def logs(self, follow: bool = False) -> Iterator[str]:
        """The job's Cloud Logging entries, one line each, prefixed by replica (``[chief-0]``)."""
        from cloudtrain.providers.vertex import logs as vertex_logs

        reader = vertex_logs.LogReader.create(self._get(), self._clients)
        return reader.lines(follow=follow, is_done=lambda: self.status().done, sleep=self._clients.sleep)

    def wait(self, poll_s: float = 30.0, on_status: Callable[[JobStatus], None] | None = None) -> JobStatus:
        """Poll until the job ends, reporting each change of state to ``on_status``."""
        return poll_until_done(self.status, self._clients.sleep, poll_s, on_status)

    def _get(self) -> Any:
        return self._call(lambda service: service.get_custom_job(name=self.id), "get")

    def _call(self, call: Callable[[Any], Any], verb: str) -> Any:
        service = self._clients.job_service(self.region)
        return with_retries(lambda: call(service), action=f"{verb} {self.id}", sleep=self._clients.sleep)

    def __repr__(self) -> str:
        return f"VertexJob(id={self.id!r})"
