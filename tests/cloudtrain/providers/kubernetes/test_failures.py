"""The API server's and JobSet's errors in the shared words: the real ``kubernetes`` client against the fake API server.

The refusals are the API server's ``Status`` bodies, the failures JobSet's ``Failed``
conditions, with their sources beside them.
"""

from __future__ import annotations

from typing import Any

import pytest

from cloudtrain.providers.kubernetes import job
from cloudtrain.providers.kubernetes.clients import KubernetesClients
from cloudtrain.providers.kubernetes.render import render
from tests.cloudtrain.providers.fakes.kubernetes_api import FakeKubernetes

from .conftest import MakePlan


@pytest.fixture
def request_body(make_plan: MakePlan) -> dict[str, Any]:
    return render(make_plan())


@pytest.fixture
def clients(fake_cluster: FakeKubernetes) -> KubernetesClients:
    return KubernetesClients(sleep=lambda seconds: None)


def test_a_completed_jobset_has_no_failure(
    fake_cluster: FakeKubernetes, clients: KubernetesClients, request_body: dict[str, Any]
) -> None:
    created = job.submit(request_body, clients)
    fake_cluster.set_condition("training", created.name, "Completed")
    assert created.status().failure is None
