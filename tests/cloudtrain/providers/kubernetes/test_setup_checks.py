"""``check`` for Kubernetes: cluster, namespace, JobSet installed and permissions, against the fake."""

from __future__ import annotations

from pathlib import Path

import pytest

from cloudtrain.providers.kubernetes.clients import KubernetesClients
from cloudtrain.providers.kubernetes.setup_checks import check_setup
from tests.cloudtrain.providers.fakes.kubernetes_api import FakeKubernetes


def _lines(clients: KubernetesClients) -> list[tuple[str, str, str]]:
    return [(check.check, check.status, check.detail) for check in check_setup(clients)]


def test_a_ready_cluster(fake_cluster: FakeKubernetes) -> None:
    assert _lines(KubernetesClients()) == [
        ("cluster", "ok", "context fake"),
        ("namespace", "ok", "training"),
        ("jobset", "ok", "jobset.x-k8s.io/v1alpha2 served"),
        ("permissions", "ok", "JobSets, pods and logs in training"),
    ]


def test_what_is_missing_fails_with_the_fix(fake_cluster: FakeKubernetes) -> None:
    fake_cluster.crd_installed = False
    fake_cluster.namespaces.discard("training")
    fake_cluster.forbidden |= {("create", "jobsets.jobset.x-k8s.io"), ("get", "pods/log")}
    checks = {check.check: check for check in check_setup(KubernetesClients())}
    assert checks["namespace"].fix == "kubectl create namespace training"
    assert checks["jobset"].fix is not None and "kubectl apply --server-side" in checks["jobset"].fix
    assert checks["permissions"].detail == (
        "not allowed in training: create jobsets.jobset.x-k8s.io, get pods/log"
    )
    assert [check.status for check in checks.values()] == ["ok", "fail", "fail", "fail"]


def test_a_user_who_may_not_read_namespaces_gets_a_warning(fake_cluster: FakeKubernetes) -> None:
    fake_cluster.forbidden.add(("get", "namespaces"))
    assert _lines(KubernetesClients())[1] == (
        "namespace",
        "warn",
        "training: not allowed to read namespaces; assumed to exist",
    )


def test_no_cluster_is_one_failed_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    (line,) = check_setup(KubernetesClients())
    assert (line.check, line.status) == ("cluster", "fail")
    assert line.fix is not None and line.fix.startswith("No Kubernetes cluster found")
