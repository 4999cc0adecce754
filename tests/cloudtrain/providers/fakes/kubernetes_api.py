"""A fake Kubernetes API server on loopback: JobSets, pods, pod logs, access reviews.

It answers the official ``kubernetes`` client the way the API server does, in the
Kubernetes JSON (https://kubernetes.io/docs/reference/using-api/api-concepts/):

- ``/apis/jobset.x-k8s.io/v1alpha2/namespaces/NS/jobsets``: create (validated against the
  vendored JobSet CRD and the API machinery's rules for names, labels, tolerations and
  quantities, ``kubernetes_schema``: 422 Invalid; 409 AlreadyExists for a name
  taken), list with ``labelSelector``; ``.../jobsets/NAME``: get and delete (404 NotFound);
- ``/apis/jobset.x-k8s.io/v1alpha2``: the group version's resource list, 404 until the
  CRD is installed (``crd_installed``);
- ``/api/v1/namespaces/NS``, ``.../pods`` (list with ``labelSelector``) and
  ``.../pods/NAME/log`` (``container``, ``sinceSeconds``, ``tailLines``, ``timestamps``,
  ``follow``: the stream stays open until the pod ends);
- ``/apis/authorization.k8s.io/v1/selfsubjectaccessreviews``: allowed unless the verb and
  resource are in ``forbidden``, which also makes those calls answer 403 Forbidden;
- ``/apis/kueue.x-k8s.io/v1beta2/namespaces/NS/workloads`` (list with ``labelSelector``): the
  Workloads the fake plays Kueue with (``kueue``): a JobSet created with a queue label gets
  one, pending, validated against the vendored Kueue CRD; ``admit`` admits it and unsuspends
  the JobSet; 404 when ``kueue_installed`` is False.

``failures`` makes the next requests answer those statuses (a 503 while the API server
restarts). Every request must carry ``Authorization: Bearer <token>`` (401 Unauthorized otherwise),
as a kubeconfig user with a token sends it. ``pods_for`` plays the JobSet and Job
controllers: it creates the pods of a stored JobSet, labelled as they label them. With
``controller`` set, the fake plays them on its own, one step per read of a JobSet: its
pods start, then it completes (what the conformance suite needs of every provider).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.cloudtrain.providers.fakes import kubernetes_schema, kueue

GROUP, VERSION, PLURAL = "jobset.x-k8s.io", "v1alpha2", "jobsets"
TOKEN = "fake-token"
FOLLOW_LIMIT_S = 20.0  # a follow never outlives a test that forgot to end its pod
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
INDEX_LABEL = "batch.kubernetes.io/job-completion-index"


@dataclass
class LogLine:
    time: datetime
    text: str


@dataclass
class FakeKubernetes:
    """The cluster's state; the handler reads and changes it under ``lock``."""

    namespaces: set[str] = field(default_factory=lambda: {"default", "training"})
    crd_installed: bool = True
    controller: bool = False  # play the JobSet controller: each read of a JobSet moves it one step
    forbidden: set[tuple[str, str]] = field(default_factory=set)  # (verb, resource)
    jobsets: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    pods: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    logs: dict[tuple[str, str], list[LogLine]] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    bodies: list[dict[str, Any]] = field(default_factory=list)
    failures: list[int] = field(default_factory=list)  # statuses the next requests answer, in order
    # A ResourceQuota of the namespace whose object count a new JobSet would exceed, by name.
    full_quota: str = ""
    # The namespaces' ResourceQuotas: (namespace, name) -> (status.hard, status.used).
    resource_quotas: dict[tuple[str, str], tuple[dict[str, str], dict[str, str]]] = field(
        default_factory=dict
    )
    # Kueue: its LocalQueues and the Workloads it makes for queued JobSets (``kueue``), by (namespace, name).
    kueue_installed: bool = True
    local_queues: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    workloads: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _versions: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def reset(self) -> None:
        with self.lock:
            self.namespaces = {"default", "training"}
            self.crd_installed = True
            self.controller = False
            self.forbidden = set()
            self.full_quota = ""
            self.resource_quotas.clear()
            self.kueue_installed = True
            self.local_queues.clear()
            self.workloads.clear()
            self.jobsets.clear()
            self.pods.clear()
            self.logs.clear()
            self.requests.clear()
            self.bodies.clear()
            self.failures.clear()

    @contextlib.contextmanager
    def serve(self) -> Iterator[str]:
        """Serve on a free loopback port; yields the server's URL."""
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()
            server.server_close()

    def pods_for(self, namespace: str, name: str, *, phase: str = "Running") -> list[str]:
        """Create the pods JobSet would start for the stored JobSet ``name``; their names."""
        with self.lock:
            jobset = self.jobsets[(namespace, name)]
            created = []
            for replicated in jobset["spec"]["replicatedJobs"]:
                for index in range(replicated["template"]["spec"].get("completions", 1)):
                    pod = _pod(namespace, name, replicated["name"], index, phase)
                    self.pods[(namespace, pod["metadata"]["name"])] = pod
                    created.append(pod["metadata"]["name"])
            return created

    def write_log(self, namespace: str, pod: str, text: str, *, at: datetime | None = None) -> None:
        with self.lock:
            self.logs.setdefault((namespace, pod), []).append(LogLine(at or datetime.now(UTC), text))

    def set_pod_phase(self, namespace: str, pod: str, phase: str) -> None:
        with self.lock:
            self.pods[(namespace, pod)]["status"]["phase"] = phase

    def set_condition(
        self, namespace: str, name: str, kind: str, *, reason: str = "", message: str = ""
    ) -> None:
        """Set a JobSet condition (``Completed``, ``Failed``, ``Suspended``) to True, as the controller does."""
        with self.lock:
            status = self.jobsets[(namespace, name)].setdefault("status", {})
            status.setdefault("conditions", []).append(
                {
                    "type": kind,
                    "status": "True",
                    "reason": reason or kind,
                    "message": message,
                    "lastTransitionTime": _now(),
                }
            )
            if kind in ("Completed", "Failed"):
                status["terminalState"] = kind

    def version(self) -> str:
        return str(next(self._versions))

    def add_local_queue(self, namespace: str, name: str, cluster_queue: str = "cluster-queue") -> None:
        """A Kueue LocalQueue, as a cluster admin creates it (checked against the vendored CRD)."""
        queue = {
            "apiVersion": f"{kueue.GROUP}/{kueue.VERSION}",
            "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": cluster_queue},
        }
        assert kubernetes_schema.problems(queue, "LocalQueue") == []
        with self.lock:
            self.local_queues[(namespace, name)] = queue

    def admit(self, namespace: str, name: str) -> None:
        """Kueue admits the JobSet ``name``: its Workload reserves quota, and the JobSet is unsuspended."""
        with self.lock:
            jobset = self.jobsets[(namespace, name)]
            workload = next(w for w in self.workloads.values() if kueue.owned_by(w, jobset))
            workload["status"]["conditions"] = [
                {"type": kind, "status": "True", "reason": kind, "message": "", "lastTransitionTime": _now()}
                for kind in ("QuotaReserved", "Admitted")
            ]
            jobset["spec"]["suspend"] = False
            for condition in jobset["status"].get("conditions", []):
                if condition["type"] == "Suspended":
                    condition |= {"status": "False", "reason": "ResumeJobs", "lastTransitionTime": _now()}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pod(namespace: str, jobset: str, replicated: str, index: int, phase: str) -> dict[str, Any]:
    labels = {
        JOBSET_NAME_LABEL: jobset,
        "jobset.sigs.k8s.io/replicatedjob-name": replicated,
        "jobset.sigs.k8s.io/job-index": "0",
        INDEX_LABEL: str(index),
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{jobset}-{replicated}-0-{index}-{uuid.uuid4().hex[:5]}",
            "namespace": namespace,
            "labels": labels,
            "annotations": dict(labels),
            "creationTimestamp": _now(),
            "uid": str(uuid.uuid4()),
        },
        "spec": {
            "hostname": f"{jobset}-{replicated}-0-{index}",
            "subdomain": jobset,
            "containers": [{"name": "trainer", "image": "image"}],
        },
        "status": {"phase": phase},
    }


def _status(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``Status`` object the API server answers a failed call with."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
    body |= {"message": message, "reason": reason, "code": code}
    if details:
        body["details"] = details
    return body


def matches(selector: str, labels: dict[str, str]) -> bool:
    """Whether ``labels`` satisfy a label selector of ``k=v``, ``k==v``, ``k!=v`` and ``k`` terms.

    >>> matches("a=1,b", {"a": "1", "b": ""}), matches("a!=1", {"a": "1"}), matches("c", {"a": "1"})
    (True, False, False)
    """
    for term in filter(None, (part.strip() for part in selector.split(","))):
        key, op, value = re.fullmatch(r"([^!=\s]+)\s*(!=|==|=)?\s*(.*)", term).groups()  # type: ignore[union-attr]
        if (op is None and key not in labels) or (op in ("=", "==") and labels.get(key) != value):
            return False
        if op == "!=" and labels.get(key) == value:
            return False
    return True


def _handler(fake: FakeKubernetes) -> type[BaseHTTPRequestHandler]:
    routes = [
        ("GET", rf"/apis/{GROUP}/{VERSION}", _resources),
        ("GET", rf"/apis/{GROUP}/{VERSION}/namespaces/(?P<ns>[^/]+)/{PLURAL}", _list_jobsets),
        ("POST", rf"/apis/{GROUP}/{VERSION}/namespaces/(?P<ns>[^/]+)/{PLURAL}", _create_jobset),
        ("GET", rf"/apis/{GROUP}/{VERSION}/namespaces/(?P<ns>[^/]+)/{PLURAL}/(?P<name>[^/]+)", _get_jobset),
        (
            "DELETE",
            rf"/apis/{GROUP}/{VERSION}/namespaces/(?P<ns>[^/]+)/{PLURAL}/(?P<name>[^/]+)",
            _delete_jobset,
        ),
        (
            "GET",
            rf"/apis/{kueue.GROUP}/{kueue.VERSION}/namespaces/(?P<ns>[^/]+)/workloads",
            _list_workloads,
        ),
        ("GET", r"/api/v1/namespaces/(?P<ns>[^/]+)", _get_namespace),
        ("GET", r"/api/v1/namespaces/(?P<ns>[^/]+)/pods", _list_pods),
        ("GET", r"/api/v1/namespaces/(?P<ns>[^/]+)/resourcequotas", _list_resource_quotas),
        ("GET", r"/api/v1/namespaces/(?P<ns>[^/]+)/pods/(?P<name>[^/]+)/log", _pod_log),
        ("POST", r"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", _access_review),
    ]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            pass

        def do_GET(self) -> None:
            self._route("GET")

        def do_POST(self) -> None:
            self._route("POST")

        def do_DELETE(self) -> None:
            self._route("DELETE")

        def _route(self, method: str) -> None:
            url = urlsplit(self.path)
            query = {key: values[-1] for key, values in parse_qs(url.query).items()}
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            with fake.lock:
                fake.requests.append((method, self.path))
                if body is not None:
                    fake.bodies.append(body)
            with fake.lock:
                failure = fake.failures.pop(0) if fake.failures else None
            if failure is not None:
                self.send_json(
                    failure,
                    _status(
                        failure, "ServiceUnavailable", "the server is currently unable to handle the request"
                    ),
                )
                return
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                self.send_json(401, _status(401, "Unauthorized", "Unauthorized"))
                return
            for verb, pattern, action in routes:
                match = re.fullmatch(pattern, url.path)
                if verb == method and match:
                    action(fake, self, match.groupdict(), query, body)
                    return
            self.send_json(404, _status(404, "NotFound", "the server could not find the requested resource"))

        def send_json(self, code: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def send_stream(self, chunks: Iterator[str]) -> None:
            """A chunked ``text/plain`` body, written as the chunks come (a followed log)."""
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for chunk in chunks:
                data = chunk.encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")

    return Handler


Params = dict[str, str]
Handler = Any


def _refused(fake: FakeKubernetes, handler: Handler, verb: str, resource: str, namespace: str) -> bool:
    if (verb, resource) not in fake.forbidden:
        return False
    message = (
        f'{resource} is forbidden: User "system:serviceaccount:ci:runner" cannot {verb} resource '
        f'"{resource.split(".")[0]}" in the namespace "{namespace}"'
    )
    handler.send_json(403, _status(403, "Forbidden", message, {"kind": resource.split(".")[0]}))
    return True


def _quota_exceeded(quota: str, name: str) -> dict[str, Any]:
    """What the ResourceQuota admission plugin answers a create over an object count: 403 Forbidden,
    "exceeded quota: NAME, requested: ..., used: ..., limited: ..." (kubernetes/kubernetes
    plugin/pkg/admission/resourcequota/controller.go, ``admission.NewForbidden``)."""
    count = f"count/{PLURAL}.{GROUP}"
    message = (
        f'{PLURAL}.{GROUP} "{name}" is forbidden: exceeded quota: {quota}, requested: {count}=1, '
        f"used: {count}=4, limited: {count}=4"
    )
    return _status(403, "Forbidden", message, {"name": name, "group": GROUP, "kind": PLURAL})


def _resources(fake: FakeKubernetes, handler: Handler, params: Params, query: Params, body: Any) -> None:
    if not fake.crd_installed:
        handler.send_json(404, _status(404, "NotFound", "the server could not find the requested resource"))
        return
    resource = {"name": PLURAL, "singularName": "jobset", "namespaced": True, "kind": "JobSet"}
    resource["verbs"] = ["create", "delete", "get", "list", "patch", "update", "watch"]
    handler.send_json(
        200,
        {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{GROUP}/{VERSION}",
            "resources": [resource],
        },
    )


def _missing_crd(fake: FakeKubernetes, handler: Handler) -> bool:
    if fake.crd_installed:
        return False
    handler.send_json(404, _status(404, "NotFound", "the server could not find the requested resource"))
    return True


def _list_jobsets(fake: FakeKubernetes, handler: Handler, params: Params, query: Params, body: Any) -> None:
    if _missing_crd(fake, handler) or _refused(fake, handler, "list", f"{PLURAL}.{GROUP}", params["ns"]):
        return
    selector = query.get("labelSelector", "")
    with fake.lock:
        items = [
            item
            for (ns, _), item in fake.jobsets.items()
            if ns == params["ns"] and matches(selector, item["metadata"].get("labels", {}))
        ]
    listing = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "JobSetList",
        "metadata": {"resourceVersion": fake.version()},
    }
    handler.send_json(200, {**listing, "items": items})


def _create_jobset(fake: FakeKubernetes, handler: Handler, params: Params, query: Params, body: Any) -> None:
    namespace = params["ns"]
    if _missing_crd(fake, handler) or _refused(fake, handler, "create", f"{PLURAL}.{GROUP}", namespace):
        return
    if fake.full_quota:
        handler.send_json(403, _quota_exceeded(fake.full_quota, body["metadata"]["name"]))
        return
    if namespace not in fake.namespaces:
        handler.send_json(
            404,
            _status(
                404,
                "NotFound",
                f'namespaces "{namespace}" not found',
                {"name": namespace, "kind": "namespaces"},
            ),
        )
        return
    name = body.get("metadata", {}).get("name", "")
    # The API server checks the metadata at once, the pod template when JobSet creates the Job: both here.
    problems = kubernetes_schema.problems(body) + kubernetes_schema.api_server_problems(body)
    if problems:
        message = f'JobSet.{GROUP} "{name}" is invalid: {"; ".join(problems)}'
        handler.send_json(
            422, _status(422, "Invalid", message, {"name": name, "group": GROUP, "kind": "JobSet"})
        )
        return
    with fake.lock:
        if (namespace, name) in fake.jobsets:
            message = f'{PLURAL}.{GROUP} "{name}" already exists'
            handler.send_json(
                409, _status(409, "AlreadyExists", message, {"name": name, "group": GROUP, "kind": PLURAL})
            )
            return
        stored = json.loads(json.dumps(body))
        stored["metadata"] |= {
            "namespace": namespace,
            "uid": str(uuid.uuid4()),
            "creationTimestamp": _now(),
            "resourceVersion": fake.version(),
        }
        stored["status"] = {"restarts": 0}
        fake.jobsets[(namespace, name)] = stored
        queue = stored["metadata"].get("labels", {}).get(kueue.QUEUE_LABEL)
        if stored["spec"].get("suspend"):  # the JobSet controller says so (jobset_types.go: JobSetSuspended)
            suspended = {"type": "Suspended", "status": "True", "reason": "SuspendedJobs"}
            stored["status"]["conditions"] = [
                {**suspended, "message": "jobset is suspended", "lastTransitionTime": _now()}
            ]
        if queue and fake.kueue_installed:
            workload = kueue.workload_for(stored, queue, known=(namespace, queue) in fake.local_queues)
            assert kubernetes_schema.problems(workload, "Workload") == [], kubernetes_schema.problems(
                workload, "Workload"
            )
            fake.workloads[(namespace, workload["metadata"]["name"])] = workload
    handler.send_json(201, stored)


def _get_jobset(fake: FakeKubernetes, handler: Handler, params: Params, query: Params, body: Any) -> None:
    if _missing_crd(fake, handler) or _refused(fake, handler, "get", f"{PLURAL}.{GROUP}", params["ns"]):
        return
    if fake.controller and (params["ns"], params["name"]) in fake.jobsets:
        _step(fake, params["ns"], params["name"])
    with fake.lock:
        found = fake.jobsets.get((params["ns"], params["name"]))
    if found is None:
        message = f'{PLURAL}.{GROUP} "{params["name"]}" not found'
        handler.send_json(
            404, _status(404, "NotFound", message, {"name": params["name"], "group": GROUP, "kind": PLURAL})
        )
        return
    handler.send_json(200, found)


def _step(fake: FakeKubernetes, namespace: str, name: str) -> None:
    """One step of the controllers' work on a JobSet not ended: start its pods, then complete it."""
    with fake.lock:
        jobset = fake.jobsets[(namespace, name)]
        ended = jobset.get("status", {}).get("terminalState")
        started = any(pod["metadata"]["labels"][JOBSET_NAME_LABEL] == name for pod in fake.pods.values())
    if ended or jobset["spec"].get("suspend"):  # a suspended JobSet has no Jobs, no pods
        return
    if not started:
        fake.pods_for(namespace, name)
        return
    for (ns, pod), found in list(fake.pods.items()):
        if ns == namespace and found["metadata"]["labels"][JOBSET_NAME_LABEL] == name:
            fake.set_pod_phase(ns, pod, "Succeeded")
    fake.set_condition(namespace, name, "Completed")


def _delete_jobset(fake: FakeKubernetes, handler: Handler, params: Params, query: Params, body: Any) -> None:
    namespace, name = params["ns"], params["name"]
    if _missing_crd(fake, handler) or _refused(fake, handler, "delete", f"{PLURAL}.{GROUP}", namespace):
        return
    with fake.lock:
        found = fake.jobsets.pop((namespace, name), None)
        for key in [
            key for key, pod in fake.pods.items() if pod["metadata"]["labels"][JOBSET_NAME_LABEL] == name
        ]:
            del fake.pods[key]
    if found is None:
        message = f'{PLURAL}.{GROUP} "{name}" not found'
        handler.send_json(
            404, _status(404, "NotFound", message, {"name": name, "group": GROUP, "kind": PLURAL})
        )
        return
    success = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    handler.send_json(
        200,
        {
            **success,
            "details": {"name": name, "group": GROUP, "kind": PLURAL, "uid": found["metadata"]["uid"]},
        },
    )


def _list_resource_quotas(
    fake: FakeKubernetes, handler: Handler, params: Params, query: Params, body: Any
) -> None:
    """core/v1 ResourceQuotaList: each quota's ``spec.hard`` and ``status`` (hard, used), as the API answers."""
    if _refused(fake, handler, "list", "resourcequotas", params["ns"]):
        return
    items = [
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": name, "namespace": namespace, "uid": str(uuid.uuid4())},
            "spec": {"hard": hard},
            "status": {"hard": hard, "used": used},
        }
        for (namespace, name), (hard, used) in fake.resource_quotas.items()
        if namespace == params["ns"]
    ]
    listing = {
        "apiVersion": "v1",
        "kind": "ResourceQuotaList",
        "metadata": {"resourceVersion": fake.version()},
    }
    handler.send_json(200, {**listing, "items": items})


def _list_workloads(fake: FakeKubernetes, handler: Handler, params: Params, query: Params, body: Any) -> None:
    if not fake.kueue_installed:
        handler.send_json(404, _status(404, "NotFound", "the server could not find the requested resource"))
        return
    selector = query.get("labelSelector", "")
    with fake.lock:
        items = [
            item
            for (ns, _), item in fake.workloads.items()
            if ns == params["ns"] and matches(selector, item["metadata"].get("labels", {}))
        ]
    listing = {"apiVersion": f"{kueue.GROUP}/{kueue.VERSION}", "kind": "WorkloadList", "metadata": {}}
    handler.send_json(200, {**listing, "items": items})


def _get_namespace(fake: FakeKubernetes, handler: Handler, params: Params, query: Params, body: Any) -> None:
    if _refused(fake, handler, "get", "namespaces", params["ns"]):
        return
    if params["ns"] not in fake.namespaces:
        message = f'namespaces "{params["ns"]}" not found'
        handler.send_json(
            404, _status(404, "NotFound", message, {"name": params["ns"], "kind": "namespaces"})
        )
        return
    meta = {"name": params["ns"], "uid": str(uuid.uuid4()), "creationTimestamp": _now()}
    handler.send_json(
        200, {"apiVersion": "v1", "kind": "Namespace", "metadata": meta, "status": {"phase": "Active"}}
    )


def _list_pods(fake: FakeKubernetes, handler: Handler, params: Params, query: Params, body: Any) -> None:
    if _refused(fake, handler, "list", "pods", params["ns"]):
        return
    selector = query.get("labelSelector", "")
    with fake.lock:
        items = [
            pod
            for (ns, _), pod in fake.pods.items()
            if ns == params["ns"] and matches(selector, pod["metadata"]["labels"])
        ]
    handler.send_json(
        200,
        {
            "apiVersion": "v1",
            "kind": "PodList",
            "metadata": {"resourceVersion": fake.version()},
            "items": items,
        },
    )


def _pod_log(fake: FakeKubernetes, handler: Handler, params: Params, query: Params, body: Any) -> None:
    key = (params["ns"], params["name"])
    if _refused(fake, handler, "get", "pods/log", params["ns"]):
        return
    with fake.lock:
        pod = fake.pods.get(key)
    if pod is None:
        message = f'pods "{params["name"]}" not found'
        handler.send_json(404, _status(404, "NotFound", message, {"name": params["name"], "kind": "pods"}))
        return
    container = query.get("container", "trainer")
    if container != "trainer":
        message = f"container {container} is not valid for pod {params['name']}"
        handler.send_json(400, _status(400, "BadRequest", message))
        return
    handler.send_stream(_log_chunks(fake, key, query))


def _log_chunks(fake: FakeKubernetes, key: tuple[str, str], query: Params) -> Iterator[str]:
    since = query.get("sinceSeconds")
    earliest = datetime.now(UTC) - timedelta(seconds=int(since)) if since else None
    with fake.lock:
        lines = [line for line in fake.logs.get(key, []) if earliest is None or line.time >= earliest]
    if "tailLines" in query:
        lines = lines[-int(query["tailLines"]) :] if int(query["tailLines"]) else []
    stamped = query.get("timestamps") == "true"
    sent = len(fake.logs.get(key, []))
    yield from (_line(line, stamped) for line in lines)
    deadline = time.monotonic() + FOLLOW_LIMIT_S
    while query.get("follow") == "true" and time.monotonic() < deadline:
        with fake.lock:
            fresh = fake.logs.get(key, [])[sent:]
            ended = fake.pods.get(key, {}).get("status", {}).get("phase") in ("Succeeded", "Failed", None)
        sent += len(fresh)
        yield from (_line(line, stamped) for line in fresh)
        if ended and not fresh:
            return
        time.sleep(0.02)


def _line(line: LogLine, stamped: bool) -> str:
    """A log line as the kubelet serves it: with ``timestamps=true``, an RFC 3339 time and a space first."""
    prefix = line.time.strftime("%Y-%m-%dT%H:%M:%S.%f000Z ") if stamped else ""
    return f"{prefix}{line.text}\n"


def _access_review(fake: FakeKubernetes, handler: Handler, params: Params, query: Params, body: Any) -> None:
    """SelfSubjectAccessReview: ``status.allowed`` unless the verb and resource are forbidden."""
    attributes = body["spec"]["resourceAttributes"]
    resource = attributes["resource"] + (
        f"/{attributes['subresource']}" if attributes.get("subresource") else ""
    )
    if attributes.get("group"):
        resource = f"{resource}.{attributes['group']}"
    allowed = (attributes["verb"], resource) not in fake.forbidden
    handler.send_json(201, {**body, "status": {"allowed": allowed}})
