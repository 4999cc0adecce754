"""The API server's and JobSet's errors in the shared words: the real ``kubernetes`` client against the fake API server.

The refusals are the API server's ``Status`` bodies, the failures JobSet's ``Failed``
conditions, with their sources beside them.
"""

from __future__ import annotations

from typing import Any

import pytest

from cloudtrain.provider import Reason
from cloudtrain.providers.kubernetes import job
from cloudtrain.providers.kubernetes.clients import KubernetesCallError, KubernetesClients
from cloudtrain.providers.kubernetes.render import render
from tests.cloudtrain.providers.fakes.kubernetes_api import GROUP, PLURAL, FakeKubernetes

from .conftest import MakePlan


@pytest.fixture
def request_body(make_plan: MakePlan) -> dict[str, Any]:
    return render(make_plan())


@pytest.fixture
def clients(fake_cluster: FakeKubernetes) -> KubernetesClients:
    return KubernetesClients(sleep=lambda seconds: None)


def test_a_namespace_quota_is_quota_and_rbac_is_permission(
    fake_cluster: FakeKubernetes, clients: KubernetesClients, request_body: dict[str, Any]
) -> None:
    fake_cluster.full_quota = "object-counts"
    with pytest.raises(KubernetesCallError) as over:
        job.submit(request_body, clients)
    assert (over.value.failure.reason, over.value.failure.code) == (Reason.QUOTA, "403 Forbidden")
    assert "exceeded quota: object-counts" in over.value.failure.message

    fake_cluster.full_quota = ""
    fake_cluster.forbidden = {("create", f"{PLURAL}.{GROUP}")}
    with pytest.raises(KubernetesCallError) as refused:
        job.submit(request_body, clients)
    assert (refused.value.failure.reason, refused.value.failure.code) == (Reason.PERMISSION, "403 Forbidden")


def test_a_missing_jobset_crd_is_configuration(
    fake_cluster: FakeKubernetes, clients: KubernetesClients, request_body: dict[str, Any]
) -> None:
    fake_cluster.crd_installed = False
    with pytest.raises(KubernetesCallError) as missing:
        job.submit(request_body, clients)
    assert missing.value.failure.reason is Reason.CONFIGURATION
    assert missing.value.failure.code.startswith("404")


@pytest.mark.parametrize(
    ("condition_reason", "message", "reason"),
    [
        # kubernetes-sigs/jobset v0.12.0 pkg/constants/constants.go: the FailJobSet action of
        # cloudtrain's "permanent" rule (exit 2 through the pod failure policy, or the deadline).
        ("FailJobSetFailurePolicyAction", "applying FailJobSet failure policy action", Reason.CONFIGURATION),
        ("ReachedMaxRestarts", "jobset failed due to reaching max number of restarts", Reason.USER_CODE),
    ],
)
def test_a_failed_jobset_says_why_in_the_shared_words(
    fake_cluster: FakeKubernetes,
    clients: KubernetesClients,
    request_body: dict[str, Any],
    condition_reason: str,
    message: str,
    reason: Reason,
) -> None:
    created = job.submit(request_body, clients)
    fake_cluster.set_condition("training", created.name, "Failed", reason=condition_reason, message=message)
    status = created.status()
    assert status.failure is not None
    assert (status.state, status.failure.reason, status.failure.code) == ("failed", reason, condition_reason)


def test_a_completed_jobset_has_no_failure(
    fake_cluster: FakeKubernetes, clients: KubernetesClients, request_body: dict[str, Any]
) -> None:
    created = job.submit(request_body, clients)
    fake_cluster.set_condition("training", created.name, "Completed")
    assert created.status().failure is None
