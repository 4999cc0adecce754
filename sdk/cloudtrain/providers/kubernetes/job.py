"""Submit, find and control JobSets through the official ``kubernetes`` client.

Everything here runs after ``render``. Submitting is idempotent: the JobSet's name is
its request's hash (``render.job_name``), so the same run submitted again meets ``409
AlreadyExists`` and attaches to the JobSet it made, running or succeeded. A failed one
of that name blocks the name until it is deleted (``cancel``), which the error says.

A job's ID is ``kubernetes:NAMESPACE/NAME``, with ``@CONTEXT`` when a kubeconfig context
was named (``kubernetes.context``), so ``status``/``logs``/``cancel`` reach the same
cluster. Status reads the JobSet's conditions (``Completed``, ``Failed``; ``Suspended``
while Kueue holds it) and, while it runs, its pods' phases. Logs are read per pod
(``jobset.sigs.k8s.io/jobset-name=NAME``, the label JobSet puts on its pods:
jobset_controller.go:1020) with ``timestamps=true``, merged in time order and prefixed
``[host-INDEX]``; ``since`` and ``tail`` become the API's ``sinceSeconds`` and
``tailLines`` (``tail`` per pod, as ``kubectl logs --tail`` counts per container).

Example:
>>> job_id("training", "demo-0123456789", None), job_id("training", "demo-0123456789", "gke_p_r_c")
('kubernetes:training/demo-0123456789', 'kubernetes:training/demo-0123456789@gke_p_r_c')
>>> owns("kubernetes:training/demo-0123456789"), owns("projects/p/locations/l/customJobs/1")
(True, False)
"""

from __future__ import annotations

import math
import queue
import re
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from cloudtrain.errors import ProviderError
from cloudtrain.outputs import Outputs, standard
from cloudtrain.planning import ExpectedCost, stored_dollars
from cloudtrain.provider.jobs import JobStatus, JobSummary, Usage, WaitsByPolling, read_progress
from cloudtrain.providers.kubernetes import download, failures, kueue
from cloudtrain.providers.kubernetes.clients import (
    TIMEOUT_S,
    ApiCall,
    KubernetesCallError,
    KubernetesClients,
    with_retries,
)
from cloudtrain.providers.kubernetes.outputs import logs_command
from cloudtrain.providers.kubernetes.render import (
    ACCELERATOR_ANNOTATION,
    CONTAINER,
    ESTIMATE_ANNOTATION,
    ESTIMATE_BASIS_ANNOTATION,
    GROUP,
    HOURLY_ANNOTATION,
    JOB_LABEL,
    JOBSET_NAME_KEY,
    NODE_TYPE_ANNOTATION,
    PLURAL,
    QUEUE_LABEL,
    REGION_ANNOTATION,
    RUN_ANNOTATION,
    RUN_PREFIX_ANNOTATION,
    SPOT_ANNOTATION,
    VERSION,
    ensure_namespace,
)
from cloudtrain.uris import sibling
from cloudtrain_runtime.replica import PROGRESS_FILE

PREFIX = "kubernetes:"
RESOURCE = f"{PLURAL}.{GROUP}"
JOB_ID = re.compile(
    r"kubernetes:(?P<namespace>[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)/(?P<name>[a-z]([-a-z0-9]{0,61}[a-z0-9])?)"
    r"(@(?P<context>.+))?"
)
COMPLETION_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
# JobSet conditions (api/jobset/v1alpha2/jobset_types.go:104-117) -> neutral states.
CONDITION_STATES = {"Completed": "succeeded", "Failed": "failed", "Suspended": "queued"}
# Pod phases (core/v1 PodStatus.phase) -> the state of a JobSet that has not ended.
PHASE_STATES = {"Running": "running", "Pending": "pending"}


def job_id(namespace: str, name: str, context: str | None) -> str:
    """The ID ``attach`` takes: namespace and name, and the kubeconfig context when one was named."""
    return f"{PREFIX}{namespace}/{name}" + (f"@{context}" if context else "")


def owns(job_id: str) -> bool:
    """Whether ``job_id`` is a JobSet's ID, ``kubernetes:NAMESPACE/NAME[@CONTEXT]``."""
    return JOB_ID.fullmatch(job_id) is not None


def submit(request: dict[str, Any], clients: KubernetesClients | None = None) -> KubernetesJob:
    """Create the JobSet ``request`` in the clients' namespace, or attach to the one of its name.

    Raises:
        ProviderError: the API server refused the JobSet, or a failed JobSet holds its name.
        CredentialsError: no cluster found, or the credentials were refused.
    """
    clients = clients or KubernetesClients()
    namespace = clients.target_namespace()
    body = ensure_namespace(request, namespace)
    name = body["metadata"]["name"]
    call = ApiCall("create", RESOURCE, namespace, name)
    try:
        with_retries(
            lambda: clients.custom_objects().create_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, body, field_validation="Strict", _request_timeout=TIMEOUT_S
            ),
            call,
            sleep=clients.sleep,
        )
    except KubernetesCallError as refused:
        if refused.status != 409:
            raise
        return _existing(name, namespace, clients, body)
    return KubernetesJob(name, namespace, clients=clients, request=body)


def _existing(name: str, namespace: str, clients: KubernetesClients, body: dict[str, Any]) -> KubernetesJob:
    """The JobSet the same request created before; a failed one cannot be submitted again under its name.

    ``cancel`` leaves an ended JobSet as it ended, so the way to run it again is to delete
    its record; the new JobSet resumes the run from its last backup, under the same prefix.
    """
    job = KubernetesJob(name, namespace, clients=clients, request=body)
    job.attached = True
    if job.status().state == "failed":
        raise ProviderError(
            f"JobSet {name} in namespace {namespace} was made from this same request and failed. Delete it, "
            f"then submit again to resume the run from its last backup: {job._kubectl()} delete jobset {name}"
        )
    return job


def attach(job_id: str, clients: KubernetesClients | None = None) -> KubernetesJob:
    """A handle on the JobSet ``job_id`` names, through its context when it names one."""
    match = JOB_ID.fullmatch(job_id)
    if match is None:
        raise ProviderError(
            f"{job_id!r} is not a Kubernetes job ID. Use the ID submit printed: kubernetes:NAMESPACE/NAME."
        )
    clients = clients or KubernetesClients(context=match["context"], namespace=match["namespace"])
    return KubernetesJob(match["name"], match["namespace"], clients=clients)


class KubernetesJob(WaitsByPolling):
    """A submitted JobSet: status, logs, cancel and wait, by namespace and name."""

    provider = "kubernetes"

    def __init__(
        self, name: str, namespace: str, *, clients: KubernetesClients, request: dict[str, Any] | None = None
    ) -> None:
        self.name = name
        self.namespace = namespace
        self.request = request
        self.attached = False
        self._cancelled = False
        self._clients = clients
        self.id = job_id(namespace, name, clients.used_context)

    @property
    def outputs(self) -> Outputs:
        """Under the run's prefix the JobSet names (``cloudtrain/run-prefix``); its pods' logs with ``kubectl``."""
        return self._outputs(self._annotations())

    def summary(self) -> JobSummary:
        """The JobSet as ``list`` shows it: its times, shape, estimate and what its nodes cost."""
        return summary(self._get(), self._clients.context)

    def progress_record(self) -> object:
        """The chief's progress record beside the run's result in the storage root; None before its first write.

        Read with the store's own client (``download``): on ``s3://`` as the sidecar last
        copied it out, up to ``storage.SYNC_INTERVAL_S`` seconds old.
        """
        notes = self._annotations()
        uri = sibling(self._outputs(notes).result, PROGRESS_FILE)
        return read_progress(lambda: download.read_object(uri, notes.get(REGION_ANNOTATION)))

    def _annotations(self) -> dict[str, str]:
        annotations: dict[str, str] = (self.request or self._get())["metadata"].get("annotations", {})
        return annotations

    def _outputs(self, notes: dict[str, str]) -> Outputs:
        logs = logs_command(self._clients.context, self.namespace, self.name)
        return standard(notes.get(RUN_PREFIX_ANNOTATION, ""), logs=logs)

    @property
    def console_url(self) -> str:
        """What stands in for a console page: the ``kubectl`` command that shows the JobSet."""
        return f"{self._kubectl()} describe jobset {self.name}"

    def hints(self) -> list[str]:
        """The ``kubectl`` commands that show this job: the JobSet, its pods, their logs."""
        selector = f"{JOBSET_NAME_KEY}={self.name}"
        return [
            self.console_url,
            f"{self._kubectl()} get pods -l {selector}",
            f"{self._kubectl()} logs -l {selector} -c {CONTAINER} --prefix --tail=-1",
        ]

    def status(self) -> JobStatus:
        """The JobSet's state: from its conditions once it ended or is suspended, else from its pods.

        A JobSet being deleted (``metadata.deletionTimestamp``), or gone after this handle
        deleted it, was cancelled: ``cancel`` deletes it, with its Jobs and pods.
        """
        try:
            jobset = self._get()
        except KubernetesCallError as missing:
            if missing.status == 404 and self._cancelled:
                return JobStatus("cancelled", "Deleted")
            raise
        if jobset["metadata"].get("deletionTimestamp"):
            return JobStatus("cancelled", "Terminating")
        condition = _true_condition(jobset)
        ended = condition is not None and condition["type"] != "Suspended"
        if not ended and (condition is not None or jobset["spec"].get("suspend")):
            return self._queued(jobset)
        if condition is not None:
            detail = condition.get("message", "") if condition["type"] != "Completed" else ""
            failed = condition["type"] == "Failed"
            failure = failures.jobset_failure(condition.get("reason", ""), detail) if failed else None
            return JobStatus(CONDITION_STATES[condition["type"]], condition["type"], detail, failure)
        phases = sorted({pod.status.phase or "Pending" for pod in self._pods()})
        if "Running" in phases:
            return JobStatus("running", ",".join(phases), _restarts(jobset))
        created = _time(jobset["metadata"]["creationTimestamp"])
        waiting = "waiting for its pods to be scheduled" if phases else "waiting for its pods to be created"
        return JobStatus(
            "pending",
            ",".join(phases) or "NoPods",
            _restarts(jobset),
            pending_since=created,
            pending_reason=waiting,
        )

    def _queued(self, jobset: dict[str, Any]) -> JobStatus:
        """A suspended JobSet: queued in its Kueue LocalQueue, with why from its Workload's conditions."""
        queue = jobset["metadata"].get("labels", {}).get(QUEUE_LABEL)
        created = _time(jobset["metadata"]["creationTimestamp"])
        reason = (
            kueue.queued_reason(queue, self._workloads(jobset["metadata"]["uid"])) if queue else "suspended"
        )
        return JobStatus("queued", "Suspended", pending_since=created, pending_reason=reason)

    def _workloads(self, uid: str) -> list[dict[str, Any]] | None:
        """The Kueue Workloads of the JobSet with ``uid``; None when Kueue's API cannot be read (not installed, forbidden)."""
        call = ApiCall("list", f"{kueue.WORKLOADS}.{kueue.GROUP}", self.namespace)
        try:
            listed = with_retries(
                lambda: self._clients.custom_objects().list_namespaced_custom_object(
                    kueue.GROUP,
                    kueue.VERSION,
                    self.namespace,
                    kueue.WORKLOADS,
                    label_selector=f"{kueue.JOB_UID_LABEL}={uid}",
                    _request_timeout=TIMEOUT_S,
                ),
                call,
                sleep=self._clients.sleep,
            )
        except KubernetesCallError as unreadable:
            if unreadable.status in (403, 404):
                return None
            raise
        return list(listed.get("items", []))

    def cancel(self) -> None:
        """Delete the JobSet and, through garbage collection, its Jobs and pods (``Foreground``).

        Raises:
            ProviderError: the JobSet already ended (the message names its state), or the call failed.
        """
        now = self.status()
        if now.done:
            raise ProviderError(
                f"Could not cancel {self.id}: it already ended, {now.state} ({now.provider_state}). "
                f"Its record stays until deleted: kubectl delete jobset {self.name} -n {self.namespace}"
            )
        self._call(
            lambda api: api.delete_namespaced_custom_object(
                GROUP, VERSION, self.namespace, PLURAL, self.name, propagation_policy="Foreground"
            ),
            "delete",
        )
        self._cancelled = True

    def logs(
        self, follow: bool = False, *, since: datetime | None = None, tail: int | None = None
    ) -> Iterator[str]:
        """Every pod's log lines, prefixed ``[host-INDEX]``: merged by time, or as they come with ``follow``."""
        pods = sorted(self._pods(), key=_index)
        options: dict[str, Any] = {"container": CONTAINER, "timestamps": True}
        if since is not None:
            options["since_seconds"] = max(1, math.ceil((datetime.now(UTC) - since).total_seconds()))
        if tail is not None:
            options["tail_lines"] = tail
        if follow:
            return self._follow(pods, options)
        read = [self._read_log(pod, options) for pod in pods]
        return iter(
            [f"[host-{index}] {text}" for _, index, text in sorted(line for lines in read for line in lines)]
        )

    def _sleep(self, seconds: float) -> None:
        self._clients.sleep(seconds)

    def _read_log(self, pod: Any, options: dict[str, Any]) -> list[tuple[str, int, str]]:
        name, index = pod.metadata.name, _index(pod)
        text = self._core_call(
            lambda core: core.read_namespaced_pod_log(
                name, self.namespace, _request_timeout=TIMEOUT_S, **options
            ),
            "get",
            f"pods/log {name}",
        )
        return [
            (_instant(stamp), index, line) for stamp, line in map(_split_timestamp, str(text).splitlines())
        ]

    def _follow(self, pods: list[Any], options: dict[str, Any]) -> Iterator[str]:
        """Stream every pod's log at once; yields lines as they arrive, until every stream ends."""
        lines: queue.Queue[str | None] = queue.Queue()
        for pod in pods:
            threading.Thread(target=self._stream, args=(pod, options, lines), daemon=True).start()
        ended = 0
        while ended < len(pods):
            line = lines.get()
            if line is None:
                ended += 1
            else:
                yield line

    def _stream(self, pod: Any, options: dict[str, Any], lines: queue.Queue[str | None]) -> None:
        name, index = pod.metadata.name, _index(pod)
        try:
            response = self._clients.core().read_namespaced_pod_log(
                name, self.namespace, follow=True, _preload_content=False, **options
            )
            for raw in response.stream(decode_content=True):
                for line in raw.decode(errors="replace").splitlines():
                    lines.put(f"[host-{index}] {_split_timestamp(line)[1]}")
        finally:
            lines.put(None)

    def _pods(self) -> list[Any]:
        selector = f"{JOBSET_NAME_KEY}={self.name}"
        listed = self._core_call(
            lambda core: core.list_namespaced_pod(
                self.namespace, label_selector=selector, _request_timeout=TIMEOUT_S
            ),
            "list",
            "pods",
        )
        return list(listed.items)

    def _get(self) -> dict[str, Any]:
        found: dict[str, Any] = self._call(
            lambda api: api.get_namespaced_custom_object(
                GROUP, VERSION, self.namespace, PLURAL, self.name, _request_timeout=TIMEOUT_S
            ),
            "get",
        )
        return found

    def _call(self, send: Callable[[Any], Any], verb: str) -> Any:
        call = ApiCall(verb, RESOURCE, self.namespace, self.name)
        return with_retries(lambda: send(self._clients.custom_objects()), call, sleep=self._clients.sleep)

    def _core_call(self, send: Callable[[Any], Any], verb: str, resource: str) -> Any:
        call = ApiCall(verb, resource, self.namespace)
        return with_retries(lambda: send(self._clients.core()), call, sleep=self._clients.sleep)

    def _kubectl(self) -> str:
        context = f" --context {self._clients.context}" if self._clients.context else ""
        return f"kubectl{context} -n {self.namespace}"

    def __repr__(self) -> str:
        return f"KubernetesJob(id={self.id!r})"


def jobs_of_run(clients: KubernetesClients, run_id: str) -> list[JobSummary]:
    """cloudtrain's JobSets of run ``run_id`` (its ``cloudtrain/run`` annotation) in the clients' namespace, newest first.

    An annotation is no selector (a label selector matches labels only:
    https://kubernetes.io/docs/concepts/overview/working-with-objects/annotations/), so
    cloudtrain's JobSets are listed by their label and kept by the annotation.
    """
    return [job for job in list_jobs(clients, limit=None) if job.run == run_id]


def list_jobs(clients: KubernetesClients, *, limit: int | None) -> list[JobSummary]:
    """cloudtrain's JobSets (those labelled ``cloudtrain/job``) in the clients' namespace, newest first."""
    namespace = clients.target_namespace()
    listed = with_retries(
        lambda: clients.custom_objects().list_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, label_selector=JOB_LABEL, _request_timeout=TIMEOUT_S
        ),
        ApiCall("list", RESOURCE, namespace),
        sleep=clients.sleep,
    )
    summaries = [summary(item, clients.used_context) for item in listed.get("items", [])]
    summaries.sort(key=lambda job: job.created, reverse=True)
    return summaries[:limit] if limit is not None else summaries


def summary(jobset: dict[str, Any], context: str | None) -> JobSummary:
    """One JobSet as ``list`` shows it; one not ended reads as running (its pods are not asked).

    Its nodes are priced from the annotations ``render`` wrote (node type, region, spot,
    accelerator): each pod holds one node from the JobSet's creation to its end, which is
    what the nodes are billed for at most (a node that was already up, or serves another
    pod after, is shared).
    """
    metadata = jobset["metadata"]
    notes = metadata.get("annotations", {})
    condition = _true_condition(jobset)
    created = _time(metadata["creationTimestamp"])
    ended = _time(condition["lastTransitionTime"]) if condition and condition["type"] != "Suspended" else None
    spec = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]
    hosts = int(spec.get("parallelism", 1))
    node = notes.get(NODE_TYPE_ANNOTATION)
    return JobSummary(
        id=job_id(metadata["namespace"], metadata["name"], context),
        name=metadata.get("labels", {}).get(JOB_LABEL, metadata["name"]),
        provider="kubernetes",
        state=CONDITION_STATES[condition["type"]] if condition else "running",
        created=created,
        started=created,
        ended=ended,
        shape=f"{hosts} × {node}" if node else f"{hosts} pods",
        estimate=_estimate(notes),
        usage=_usage(notes, hosts, (ended - created).total_seconds()) if ended and node else None,
        run=notes.get(RUN_ANNOTATION),
    )


def _estimate(notes: dict[str, str]) -> ExpectedCost | None:
    usd, basis = stored_dollars(notes.get(ESTIMATE_ANNOTATION)), notes.get(ESTIMATE_BASIS_ANNOTATION)
    if usd is None or not basis:
        return None
    return ExpectedCost(usd, basis, stored_dollars(notes.get(HOURLY_ANNOTATION)))


def _usage(notes: dict[str, str], hosts: int, seconds: float) -> Usage | None:
    if not notes.get(REGION_ANNOTATION) or not notes.get(ACCELERATOR_ANNOTATION):
        return None
    return Usage(
        region=notes[REGION_ANNOTATION],
        machine_type=notes[NODE_TYPE_ANNOTATION],
        accelerator=notes[ACCELERATOR_ANNOTATION],
        hosts=hosts,
        seconds=seconds,
        spot=notes.get(SPOT_ANNOTATION) == "true",
        measure="JobSet created to ended",
    )


def _true_condition(jobset: dict[str, Any]) -> dict[str, Any] | None:
    """The JobSet's ending (or suspending) condition that holds, if any."""
    conditions = jobset.get("status", {}).get("conditions", [])
    held = [c for c in conditions if c.get("status") == "True" and c.get("type") in CONDITION_STATES]
    return held[-1] if held else None


def _restarts(jobset: dict[str, Any]) -> str:
    restarts = jobset.get("status", {}).get("restarts", 0)
    return f"restarted {restarts} time(s)" if restarts else ""


def _index(pod: Any) -> int:
    value = (pod.metadata.labels or {}).get(COMPLETION_INDEX_LABEL, "0")
    return int(value) if value.isdigit() else 0


def _split_timestamp(line: str) -> tuple[str, str]:
    """``("2026-12-04T10:00:00.123456789Z", "text")`` from a line read with ``timestamps=true``."""
    stamp, _, text = line.partition(" ")
    return stamp, text


def _instant(stamp: str) -> str:
    """A log timestamp that sorts as time does: RFC 3339 with its fraction padded to nanoseconds.

    The kubelet writes RFC3339Nano, which drops trailing zeros: ``05.1Z`` must sort after ``05.09Z``.

    >>> _instant("2026-12-04T10:00:05.1Z") > _instant("2026-12-04T10:00:05.09Z")
    True
    """
    head, _, fraction = stamp.rstrip("Z").partition(".")
    return f"{head}.{fraction:0<9}"


def _time(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
