"""Submit, find and control Vertex AI custom jobs through ``aiplatform_v1.JobServiceClient``.

Everything here runs after ``render``: the only module of the Vertex backend that talks
to the JobService. google-cloud-aiplatform is imported inside the functions that need
it, so importing this module (and ``cloudtrain render``) stays cheap.

Submitting is idempotent, and two submits racing each other make one job: ``once``
looks for the job made from the request (the ``cloudtrain_request`` label ``render``
stamps), creates it otherwise, and reconciles after the create, keeping the earliest.
A job that failed, was cancelled or expired does not count, so submitting again after a
failure retries; changing the spec or the code changes the hash and creates a new job.

The code bundle is uploaded by ``submit`` to ``storage.root/code/<sha256>.tar.gz``
(skipped when that object exists: the name is the content hash).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cloudtrain.errors import ProviderError
from cloudtrain.provider.base import JobStatus, JobSummary
from cloudtrain.provider.jobs import WAITING_STATES, WaitsByPolling, read_progress
from cloudtrain.provider.transfer import bundle_uri
from cloudtrain.providers.vertex import download, failures, listing, once, outputs, upload
from cloudtrain.providers.vertex.clients import GoogleCallError, VertexClients, require_google, with_retries
from cloudtrain.providers.vertex.logs import LogReader
from cloudtrain.providers.vertex.names import JOB_ID, STATES, api_call, waiting_reason
from cloudtrain.providers.vertex.render import REQUEST_LABEL
from cloudtrain.providers.vertex.settings import VertexSettings
from cloudtrain.uris import sibling
from cloudtrain_runtime.replica import PROGRESS_FILE

if TYPE_CHECKING:
    from cloudtrain.bundle import Bundle
    from cloudtrain.outputs import Outputs
    from cloudtrain.planning import Plan
    from cloudtrain.progress import OnProgress


def owns(job_id: str) -> bool:
    """Whether ``job_id`` is a custom job's resource name, ``projects/P/locations/L/customJobs/N``.

    Example:
    >>> owns("projects/my-project/locations/us-central1/customJobs/123"), owns("job-123")
    (True, False)
    """
    return JOB_ID.match(job_id) is not None


def submit(
    plan: Plan,
    request: dict[str, Any],
    bundle: Bundle,
    clients: VertexClients | None = None,
    progress: OnProgress | None = None,
) -> VertexJob:
    """Upload the code bundle, then create the custom job unless the same one exists.

    Args:
        plan: the Vertex plan ``request`` was rendered from (with its bundle URI).
        request: ``vertex.render(plan)``, sent as is.
        bundle: the packed code, uploaded to ``plan.bundle`` when not there yet.
        clients: clients to use instead of the defaults.
        progress: called with the upload's ``cloudtrain.Progress``; None reports nothing.

    Returns:
        A handle on the new job, or on the earlier job created from the same request.

    Raises:
        ProviderError: the request is not a valid CustomJob, or Vertex refused a call.
        CredentialsError: no usable Google credentials.
        MissingDependencyError: google-cloud-aiplatform or google-cloud-storage is missing.
    """
    require_google()
    custom_job = _custom_job(request)
    clients = clients or VertexClients()
    parent, service = upload_and_open(plan, bundle, clients, progress)
    submitted = once.submit_once(
        service, parent, request["labels"][REQUEST_LABEL], custom_job, once.CUSTOM_JOB, clients.sleep
    )
    job = VertexJob(submitted.name, clients=clients, request=request)
    job.attached = submitted.attached
    return job


def upload_and_open(
    plan: Plan, bundle: Bundle, clients: VertexClients, progress: OnProgress | None
) -> tuple[str, Any]:
    """Upload the code bundle, then return the plan's parent resource and its region's JobService.

    Every create (a custom job, a tuning job) needs the code in place and then lists and
    creates under ``projects/P/locations/L`` through the JobService of that region.
    """
    vertex = VertexSettings.of(plan.spec)
    upload_bundle(plan, bundle, clients, progress)
    return f"projects/{vertex.project}/locations/{vertex.region}", clients.job_service(vertex.region)


def upload_bundle(
    plan: Plan, bundle: Bundle, clients: VertexClients | None = None, progress: OnProgress | None = None
) -> None:
    """Upload the code bundle to ``plan.bundle`` unless it is there; creates no job."""
    require_google()
    clients = clients or VertexClients()
    storage = clients.storage_client(VertexSettings.of(plan.spec).project)
    upload.upload_once(bundle.path, bundle_uri(plan), storage, sleep=clients.sleep, progress=progress)


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


class VertexJob(WaitsByPolling):
    """A submitted custom job: status, logs, cancel and wait, by its resource name."""

    provider = "vertex"
    attached = (
        False  # True when submit found this job made by an earlier submit (cloudtrain.provider.jobs.attached)
    )

    def __init__(self, job_id: str, *, clients: VertexClients, request: dict[str, Any] | None = None) -> None:
        match = JOB_ID.match(job_id)
        assert match is not None, job_id  # attach and submit pass resource names only
        self.id = job_id
        self.request = request
        self.project = match["project"]
        self.region = match["region"]
        self.number = match["id"]
        self._clients = clients

    @property
    def console_url(self) -> str:
        """The job's page in the Google Cloud console, as the Vertex SDK prints it.

        google-cloud-aiplatform 2.7.0, ``aiplatform/jobs.py``: ``_Job._dashboard_uri`` with
        ``CustomJob._job_type = "training"``.
        """
        return (
            f"https://console.cloud.google.com/agent-platform/locations/{self.region}/training/"
            f"{self.number}?project={self.project}"
        )

    @property
    def outputs(self) -> Outputs:
        """Where this job's artifacts are: from its request, or from Vertex for an attached job."""
        from google.protobuf import json_format

        request = self.request or json_format.MessageToDict(self._get()._pb)
        return outputs.of_request(request, project=self.project, job=self.number)

    def status(self) -> JobStatus:
        """The job's state now; ``detail`` carries Vertex's error message, and ``failure`` its reason, when it failed.

        A job that has not started says since when (its creation) and why, from its
        state and scheduling strategy (``names.waiting_reason``).
        """
        job = self._get()
        state = STATES[job.state.name]
        detail = job.error.message if job.error.message else ""
        if state in WAITING_STATES:
            reason = waiting_reason(job.state.name, job.job_spec.scheduling.strategy.name)
            return JobStatus(
                state, job.state.name, detail, pending_since=_utc(job.create_time), pending_reason=reason
            )
        failure = failures.job_failure(job.error.code, detail) if state == "failed" else None
        if job.state.name == "JOB_STATE_EXPIRED":
            failure = failures.expired(detail)
        return JobStatus(state, job.state.name, detail, failure)

    def cancel(self) -> None:
        """Ask Vertex to cancel the job; it moves through CANCELLING to CANCELLED.

        Raises:
            ProviderError: the job already ended (the message names its state), or Vertex
                refused the call.
        """
        try:
            self._call(lambda service: service.cancel_custom_job(name=self.id), "CancelCustomJob", "cancel")
        except GoogleCallError as refused:
            # FAILED_PRECONDITION: "not in a state required for the operation" (google/rpc/
            # code.proto); for a cancel, most often a job that has ended. Its state says which.
            if refused.code != "FAILED_PRECONDITION":
                raise
            now = self.status()
            if not now.done:
                raise
            raise ProviderError(
                f"Could not cancel {self.id}: it already ended, {now.state} ({now.provider_state}). "
                "There is nothing to cancel."
            ) from refused

    def logs(
        self, follow: bool = False, *, since: datetime | None = None, tail: int | None = None
    ) -> Iterator[str]:
        """The job's Cloud Logging entries, one line each, prefixed by replica (``[chief-0]``).

        ``since`` goes into the query's ``timestamp>=`` bound, so Cloud Logging does the
        filtering; without it the bound is the job's creation time.
        """
        created = self._get().create_time
        reader = LogReader.create(
            project=self.project,
            job_number=self.number,
            since=later_bound(created, since),
            clients=self._clients,
        )
        return reader.lines(
            follow=follow, is_done=lambda: self.status().done, sleep=self._clients.sleep, tail=tail
        )

    def _sleep(self, seconds: float) -> None:
        self._clients.sleep(seconds)

    def summary(self) -> JobSummary:
        """This job as ``list`` shows it: shape, times, the estimate it carries, its usage once ended."""
        return listing.summary(self._get())

    def progress_record(self) -> object:
        """The chief's progress record, read from Cloud Storage beside the run's result; None before its first write.

        The runtime writes it through the ``/gcs/`` mount (Cloud Storage FUSE), so the
        object is the one the chief last closed (``cloudtrain_runtime.progress``).
        """
        uri = sibling(self.outputs.result, PROGRESS_FILE)
        return read_progress(lambda: download.read_object(uri, self.project, self._clients))

    def _get(self) -> Any:
        return self._call(lambda service: service.get_custom_job(name=self.id), "GetCustomJob", "get")

    def _call(self, send: Callable[[Any], Any], method: str, verb: str) -> Any:
        service = self._clients.job_service(self.region)
        call = api_call(method, f"{verb} {self.id}", self.id)
        return with_retries(lambda: send(service), call, sleep=self._clients.sleep)

    def __repr__(self) -> str:
        return f"VertexJob(id={self.id!r})"


def later_bound(created: datetime, since: datetime | None) -> str:
    """The Logging filter's lower ``timestamp`` bound: the later of creation and ``since``, in UTC.

    Cloud Logging compares ``timestamp>="..."`` with an RFC 3339 time
    (https://cloud.google.com/logging/docs/view/logging-query-language, "timestamp").

    Example:
    >>> later_bound(datetime(2026, 12, 2, 10, tzinfo=UTC), None)
    '2026-12-02T10:00:00.000000Z'
    """
    bound = created if since is None else max(created, since)
    return bound.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _utc(moment: datetime) -> datetime:
    """A protobuf timestamp (``DatetimeWithNanoseconds``) as a plain UTC datetime."""
    return datetime.fromtimestamp(moment.timestamp(), UTC)
