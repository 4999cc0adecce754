"""The ``kubernetes`` client of the Kubernetes backend: how it connects, retries and how its errors read.

Connecting. ``connect`` finds the cluster as ``kubectl`` does: the kubeconfig files in
``$KUBECONFIG`` (or ``~/.kube/config``), their current context unless one is named, and
that context's namespace (else ``default``); with no kubeconfig, the in-cluster service
account (``$KUBERNETES_SERVICE_HOST`` and the token mounted in the pod, whose namespace is
in ``/var/run/secrets/kubernetes.io/serviceaccount/namespace``). The ``kubernetes``
library is imported here only, inside the functions, so ``cloudtrain render`` does not
load it.

Retries. ``with_retries`` runs a call through the client's own retry helper,
``kubernetes.utils.retry.on_error`` (client-go's ``retry.OnError``), at most ``ATTEMPTS``
tries, waiting about 1, 2, 4, ... seconds (at most 30) through the injectable ``sleep``.
Retried: 429 Too Many Requests, 500, 502, 503 and 504, and a connection that failed or
timed out. A create is retried too: ``409 AlreadyExists`` afterwards means it was made,
and ``job.submit`` attaches to it.

Errors. What is not retried, or failed every attempt, becomes one ``KubernetesCallError``
(a ``ProviderError``) or ``CredentialsError`` line: the call, the API server's message
(its ``Status.message``) and the ``ADVICE`` for that call and status code.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from cloudtrain.errors import CloudtrainError, CredentialsError, require
from cloudtrain.messages import quote, shorten
from cloudtrain.provider.calls import ATTEMPTS, FIRST_DELAY_S, MAX_DELAY_S, translated
from cloudtrain.provider.failures import CallError
from cloudtrain.providers.kubernetes import failures, kubeconfig
from cloudtrain.providers.kubernetes.discover import IN_CLUSTER_NAMESPACE, IN_CLUSTER_VARIABLE

T = TypeVar("T")

TRANSIENT_STATUS = (429, 500, 502, 503, 504)
TIMEOUT_S = 30.0

DEFAULT_NAMESPACE = "default"
JOBSET_INSTALL = (
    "Install the JobSet controller: kubectl apply --server-side -f "
    "https://github.com/kubernetes-sigs/jobset/releases/download/v0.12.0/manifests.yaml"
)
NO_CLUSTER = (
    "No Kubernetes cluster found: no kubeconfig at $KUBECONFIG or ~/.kube/config, and not running "
    "in a pod. Fetch the cluster's credentials, e.g.\n"
    "  $ gcloud container clusters get-credentials CLUSTER --location LOCATION\n"
    "  $ aws eks update-kubeconfig --name CLUSTER --region REGION"
)
# Advice by (method, HTTP status); "*" matches any method.
ADVICE = {
    (
        "*",
        401,
    ): "The cluster refused the kubeconfig's credentials; refresh them (kubectl get pods shows the same).",
    (
        "*",
        403,
    ): "Ask the cluster's admin for the permission: kubectl auth can-i {verb} {resource} -n {namespace}",
    ("create", 404): "Check kubernetes.namespace, and that JobSet is installed. " + JOBSET_INSTALL,
    ("get", 404): "No such JobSet in namespace {namespace}: it ended and was deleted, or the ID is wrong. "
    "See: kubectl get jobsets -n {namespace}",
    ("delete", 404): "No such JobSet in namespace {namespace}: it was already deleted.",
    ("list", 404): JOBSET_INSTALL,
    ("create", 422): "Check the request with: cloudtrain render JOB --provider kubernetes",
    ("*", 429): "The API server is throttling requests; retried {retries} times. Try again later.",
    (
        "*",
        0,
    ): "Could not reach the API server in {attempts} attempts; check the network and the kubeconfig's server.",
}


class NoCluster(CredentialsError):
    """No kubeconfig file, and not in a pod: nothing says which cluster to use."""


class KubernetesCallError(CallError):
    """A call to the API server that failed for good: ``status`` is its HTTP status (0: no answer).

    ``status_reason`` is the server's ``Status.reason`` (``Forbidden``); ``failure`` what the
    call's failure means in every provider's words (``failures.call_failure``), from the
    server's own message ``said``.
    """

    def __init__(self, message: str, *, status: int, status_reason: str = "", said: str = "") -> None:
        super().__init__(message, failures.call_failure(status, status_reason, said or message))
        self.status = status
        self.status_reason = status_reason


@dataclass(frozen=True)
class ApiCall:
    """One API call, as its error message and advice name it.

    Example:
    >>> ApiCall("create", "jobsets.jobset.x-k8s.io", "training", "demo-0123456789").action
    'create jobsets.jobset.x-k8s.io demo-0123456789 in namespace training'
    """

    verb: str
    resource: str
    namespace: str
    name: str = ""

    @property
    def action(self) -> str:
        target = f"{self.resource} {self.name}".strip()
        return f"{self.verb} {target} in namespace {self.namespace}"


@dataclass
class KubernetesClients:
    """The client one job uses: an ``ApiClient`` for ``context`` and its namespace, built on first use.

    Args:
        api: a ``kubernetes.client.ApiClient`` to use instead of the kubeconfig's.
        context: the kubeconfig context; None: the current one, or in-cluster.
        namespace: the namespace; None: the context's.
        sleep: how to wait between retries and polls (tests pass a recorder).
    """

    api: Any = None
    context: str | None = None
    namespace: str | None = None
    sleep: Callable[[float], None] = time.sleep
    found_context: str | None = field(default=None, init=False)

    def api_client(self) -> Any:
        if self.api is None:
            self.api, self.found_context, found_namespace = connect(self.context)
            self.namespace = self.namespace or found_namespace
        return self.api

    @property
    def used_context(self) -> str | None:
        """The context named, or once connected the current one: an ID naming it reaches this
        cluster whatever context is current later."""
        return self.context or self.found_context

    def target_namespace(self) -> str:
        self.api_client()
        return self.namespace or DEFAULT_NAMESPACE

    def custom_objects(self) -> Any:
        from kubernetes import client

        return client.CustomObjectsApi(self.api_client())

    def core(self) -> Any:
        from kubernetes import client

        return client.CoreV1Api(self.api_client())

    def authorization(self) -> Any:
        from kubernetes import client

        return client.AuthorizationV1Api(self.api_client())

    def __repr__(self) -> str:
        return f"KubernetesClients(context={self.context!r}, namespace={self.namespace!r})"


def require_kubernetes() -> None:
    """Raise MissingDependencyError, with the pip command, unless the ``kubernetes`` client imports."""
    require("kubernetes", "kubernetes")


def connect(context: str | None, environ: dict[str, str] | None = None) -> tuple[Any, str | None, str]:
    """An ``ApiClient`` for ``context`` (None: current, else in-cluster), the context's name and namespace.

    The kubeconfig is read by ``kubeconfig.read`` (bounded, checked, merged as ``kubectl``
    merges it) and what it read is handed to the client's own ``KubeConfigLoader``, so the
    files are read once, by one reader with one cap, whatever command connects.

    Raises:
        CredentialsError: no kubeconfig and not in a pod, no context of that name, or a
            context the client cannot use (``KubeconfigError``: the file cannot be read as one).
        MissingDependencyError: the ``kubernetes`` client is not installed.
    """
    require_kubernetes()
    from kubernetes import client, config

    environ = dict(os.environ) if environ is None else environ
    configuration = client.Configuration()
    found = kubeconfig.read(environ)
    if context is None and found.current is None and environ.get(IN_CLUSTER_VARIABLE):
        config.load_incluster_config(client_configuration=configuration)
        namespace = kubeconfig.in_cluster_namespace(IN_CLUSTER_NAMESPACE) or DEFAULT_NAMESPACE
        return client.ApiClient(configuration), None, namespace
    if not found.files:
        raise NoCluster(NO_CLUSTER)
    chosen = found.context(context)
    if chosen is None:
        raise CredentialsError(_no_context(found, context))
    _load(found, chosen, configuration)
    return client.ApiClient(configuration), chosen.name, chosen.body.get("namespace") or DEFAULT_NAMESPACE


def _no_context(found: kubeconfig.Kubeconfig, context: str | None) -> str:
    names = ", ".join(shorten(name) for name in list(found.contexts)[:20]) or "none"
    where = ", ".join(str(path) for path in found.files)
    if context is None:
        current = found.current.name if found.current else None
        what = (
            f"its current-context {quote(current)} is not defined"
            if current
            else "it sets no current-context"
        )
        return (
            f"The kubeconfig ({where}): {what}. Contexts: {names}. "
            "Set kubernetes.context, or run: kubectl config use-context NAME"
        )
    return (
        f"kubernetes.context: no context {quote(context)} in {where}. Contexts: {names}. "
        "See: kubectl config get-contexts"
    )


def _load(found: kubeconfig.Kubeconfig, chosen: kubeconfig.Entry, configuration: Any) -> None:
    """Configure ``configuration`` for context ``chosen`` with the client's own loader, from what was read.

    Each entry is the client's ``ConfigNode`` carrying its file, as its ``KubeConfigMerger``
    builds them, so a relative certificate path is taken relative to that file.
    """
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.kube_config import ConfigNode, KubeConfigLoader

    merged = {
        section: [
            ConfigNode(f"{entry.path}/{name}", {"name": name, key: entry.body}, str(entry.path))
            for name, entry in found.sections[section].items()
        ]
        for section, key in kubeconfig.SECTIONS.items()
    }
    first = str(found.files[0])
    try:
        loader = KubeConfigLoader(
            config_dict=ConfigNode(first, merged, first), active_context=chosen.name, config_base_path=None
        )
        loader.load_and_set(configuration)
    # The client reads what the kubeconfig names (certificates, exec plugins) and fails on a
    # value of the wrong shape with whatever Python raises: each is one line here.
    except (ConfigException, OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise CredentialsError(
            f"The kubeconfig context {quote(chosen.name)} ({chosen.path}) cannot be used: "
            f"{shorten(str(exc) or type(exc).__name__)}"
        ) from None


def with_retries(send: Callable[[], T], call: ApiCall, *, sleep: Callable[[float], None]) -> T:
    """Run ``send``, retrying transient failures with the client's exponential backoff.

    Raises:
        KubernetesCallError: the call failed for good or ran out of attempts.
        CredentialsError: the API server refused the credentials (401).
    """
    require_kubernetes()
    from kubernetes.utils.retry import Backoff, on_error

    backoff = Backoff(steps=ATTEMPTS, duration=FIRST_DELAY_S, factor=2.0, jitter=0.1, cap=MAX_DELAY_S)
    with translated(lambda exc: translate(exc, call)):
        return on_error(backoff, is_transient, send, sleep_func=sleep)


def is_transient(exc: Exception) -> bool:
    """Whether another attempt may succeed: a throttled or failed server, or no answer at all."""
    return status_of(exc) in (*TRANSIENT_STATUS, 0)


def status_of(exc: Exception) -> int | None:
    """The HTTP status of a failed call, 0 for no answer (refused, timed out), None for another error."""
    import urllib3
    from kubernetes.client.exceptions import ApiException

    if isinstance(exc, ApiException):
        return int(exc.status or 0)
    if isinstance(exc, urllib3.exceptions.HTTPError | ConnectionError | TimeoutError):
        return 0
    return None


def translate(exc: Exception, call: ApiCall) -> Exception:
    """The cloudtrain error for a failed call, or ``exc`` itself when it is not an API failure."""
    if isinstance(exc, CloudtrainError):
        return exc
    status = status_of(exc)
    if status is None:
        return exc
    reason, message = server_message(exc)
    said = f"Could not {call.action}: {message}"
    if status == 401:
        return CredentialsError(f"{said}. {advice(call, status)}")
    return KubernetesCallError(
        f"{said}. {advice(call, status)}".rstrip(), status=status, status_reason=reason, said=message
    )


def server_message(exc: Exception) -> tuple[str, str]:
    """The API server's ``Status.reason`` and ``Status.message``; else a one-line account of the failure."""
    body = getattr(exc, "body", None)
    try:
        status = json.loads(body) if body else {}
    except (TypeError, ValueError):
        status = {}
    if isinstance(status, dict) and status.get("message"):
        return str(status.get("reason", "")), str(status["message"])
    reason = str(getattr(exc, "reason", "") or type(exc).__name__)
    return reason, f"{reason} (HTTP {getattr(exc, 'status', 'no answer')})"


def advice(call: ApiCall, status: int) -> str:
    """The ``ADVICE`` row for ``call`` and ``status``, filled in; empty if none."""
    for scope in (call.verb, "*"):
        template = ADVICE.get((scope, status))
        if template is not None:
            return template.format(
                verb=call.verb,
                resource=call.resource,
                namespace=call.namespace,
                attempts=ATTEMPTS,
                retries=ATTEMPTS - 1,
            )
    return ""
