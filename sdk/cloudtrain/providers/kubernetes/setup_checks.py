"""``cloudtrain check --provider kubernetes``: what the first submit needs, checked before it.

The lines, in the order a submit meets them:

- ``cluster``: a kubeconfig context (or the in-cluster service account) to reach;
- ``namespace``: the JobSet's namespace exists (a user who may not read namespaces gets
  a warning, not a failure: many clusters grant namespace-scoped roles only);
- ``jobset``: the API server serves ``jobset.x-k8s.io/v1alpha2``, so the JobSet
  controller's CRD is installed (the group version's discovery document, which every
  authenticated user may read);
- ``permissions``: a ``SelfSubjectAccessReview`` for each call cloudtrain makes: create,
  get, list and delete JobSets, list pods and read their logs.

Every call goes through ``clients.with_retries``, so a failure reads as submit's would.

Example:
>>> [verb for verb, _, _, _ in NEEDED]
['create', 'get', 'list', 'delete', 'list', 'get']
"""

from __future__ import annotations

from typing import Any

from cloudtrain.errors import CredentialsError
from cloudtrain.providers.kubernetes import kubeconfig
from cloudtrain.providers.kubernetes.clients import (
    JOBSET_INSTALL,
    TIMEOUT_S,
    ApiCall,
    KubernetesCallError,
    KubernetesClients,
    NoCluster,
    with_retries,
)
from cloudtrain.providers.kubernetes.render import GROUP, PLURAL, VERSION
from cloudtrain_runtime.diagnosis import FAIL, OK, WARN, Check

# (verb, group, resource, subresource): what submit, status, logs, list and cancel call.
NEEDED = (
    ("create", GROUP, PLURAL, ""),
    ("get", GROUP, PLURAL, ""),
    ("list", GROUP, PLURAL, ""),
    ("delete", GROUP, PLURAL, ""),
    ("list", "", "pods", ""),
    ("get", "", "pods", "log"),
)


def check_setup(clients: KubernetesClients) -> list[Check]:
    """One line per thing a submit needs; the network lines only once a cluster is found."""
    try:
        namespace = clients.target_namespace()
    except NoCluster as missing:
        return [Check("cluster", FAIL, "no cluster found", str(missing).splitlines()[0])]
    except kubeconfig.KubeconfigError as broken:  # there, but not a kubeconfig: say what is wrong
        return [Check("cluster", FAIL, broken.detail, kubeconfig.FIX)]
    except CredentialsError as unusable:
        return [Check("cluster", FAIL, str(unusable))]
    where = f"context {clients.found_context}" if clients.found_context else "in-cluster service account"
    return [
        Check("cluster", OK, where),
        _namespace(clients, namespace),
        _jobset(clients, namespace),
        _permissions(clients, namespace),
    ]


def _namespace(clients: KubernetesClients, namespace: str) -> Check:
    call = ApiCall("get", "namespaces", namespace, namespace)
    try:
        with_retries(
            lambda: clients.core().read_namespace(namespace, _request_timeout=TIMEOUT_S),
            call,
            sleep=clients.sleep,
        )
    except KubernetesCallError as refused:
        if refused.status == 403:
            return Check("namespace", WARN, f"{namespace}: not allowed to read namespaces; assumed to exist")
        return Check("namespace", FAIL, f"{namespace}: {refused}", f"kubectl create namespace {namespace}")
    return Check("namespace", OK, namespace)


def _jobset(clients: KubernetesClients, namespace: str) -> Check:
    call = ApiCall("list", f"{GROUP}/{VERSION} resources", namespace)
    try:
        with_retries(
            lambda: clients.custom_objects().get_api_resources(GROUP, VERSION, _request_timeout=TIMEOUT_S),
            call,
            sleep=clients.sleep,
        )
    except KubernetesCallError as refused:
        if refused.status != 404:
            raise
        return Check("jobset", FAIL, f"{GROUP}/{VERSION} is not served", JOBSET_INSTALL)
    return Check("jobset", OK, f"{GROUP}/{VERSION} served")


def _permissions(clients: KubernetesClients, namespace: str) -> Check:
    missing = [
        f"{verb} {_resource(group, resource, sub)}"
        for verb, group, resource, sub in NEEDED
        if not _allowed(clients, namespace, verb, group, resource, sub)
    ]
    if missing:
        return Check(
            "permissions",
            FAIL,
            f"not allowed in {namespace}: {', '.join(missing)}",
            f"Ask the cluster's admin for a Role in {namespace} that grants them "
            f"(kubectl auth can-i --list -n {namespace} shows what you have).",
        )
    return Check("permissions", OK, f"JobSets, pods and logs in {namespace}")


def _allowed(
    clients: KubernetesClients, namespace: str, verb: str, group: str, resource: str, sub: str
) -> bool:
    attributes: dict[str, Any] = {"namespace": namespace, "verb": verb, "group": group, "resource": resource}
    if sub:
        attributes["subresource"] = sub
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attributes},
    }
    call = ApiCall("create", "selfsubjectaccessreviews", namespace)
    answer = with_retries(
        lambda: clients.authorization().create_self_subject_access_review(review, _request_timeout=TIMEOUT_S),
        call,
        sleep=clients.sleep,
    )
    return bool(answer.status and answer.status.allowed)


def _resource(group: str, resource: str, sub: str) -> str:
    name = f"{resource}/{sub}" if sub else resource
    return f"{name}.{group}" if group else name
