"""Submit, status, logs, cancel and list: the real ``kubernetes`` client against the fake API server.

The client finds the fake through a kubeconfig file (``fake_cluster``), as it would a
cluster; every request carries the kubeconfig user's token, and every JobSet created is
validated by the fake against the vendored JobSet CRD.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cloudtrain.errors import CredentialsError, ProviderError
from cloudtrain.provider.base import attached
from cloudtrain.providers.kubernetes import job
from cloudtrain.providers.kubernetes.clients import KubernetesCallError, KubernetesClients
from cloudtrain.providers.kubernetes.render import render
from tests.cloudtrain.providers.fakes.kubernetes_api import FakeKubernetes

from .conftest import MakePlan


@pytest.fixture
def request_body(make_plan: MakePlan) -> dict[str, Any]:
    return render(make_plan())


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def clients(fake_cluster: FakeKubernetes, sleeps: list[float]) -> KubernetesClients:
    return KubernetesClients(sleep=sleeps.append)


def _name(body: dict[str, Any]) -> str:
    return str(body["metadata"]["name"])


def test_submit_creates_the_jobset_in_the_contexts_namespace(
    fake_cluster: FakeKubernetes, clients: KubernetesClients, request_body: dict[str, Any]
) -> None:
    created = job.submit(request_body, clients)
    # the current context, named in the ID: status reaches this cluster after kubectl config use-context
    assert created.id == f"kubernetes:training/{_name(request_body)}@fake"
    assert list(fake_cluster.jobsets) == [("training", _name(request_body))]
    method, path = fake_cluster.requests[-1]
    assert (method, path.split("?")[0]) == (
        "POST",
        "/apis/jobset.x-k8s.io/v1alpha2/namespaces/training/jobsets",
    )
    assert "fieldValidation=Strict" in path  # the API server refuses a field it would drop


def test_the_same_request_again_attaches_to_its_jobset(
    fake_cluster: FakeKubernetes, clients: KubernetesClients, request_body: dict[str, Any]
) -> None:
    first = job.submit(request_body, clients)
    again = job.submit(request_body, clients)
    assert again.id == first.id
    assert len(fake_cluster.jobsets) == 1
    assert [method for method, _ in fake_cluster.requests].count("POST") == 2  # the second met 409


def test_a_failed_jobset_of_the_same_request_says_how_to_run_it_again(
    fake_cluster: FakeKubernetes, clients: KubernetesClients, request_body: dict[str, Any]
) -> None:
    first = job.submit(request_body, clients)
    fake_cluster.set_condition(
        "training", first.name, "Failed", message="jobset failed due to reaching max number of restarts"
    )
    with pytest.raises(ProviderError) as raised:
        job.submit(request_body, clients)
    advice = f"kubectl -n training delete jobset {first.name}"
    assert str(raised.value).endswith(advice)
    # what that kubectl command does, then the submit it asks for: a new JobSet of the same run
    clients.custom_objects().delete_namespaced_custom_object(
        job.GROUP, job.VERSION, "training", job.PLURAL, first.name
    )
    again = job.submit(request_body, clients)
    assert (again.name, attached(again), again.status().state) == (first.name, False, "pending")


@pytest.mark.parametrize(
    ("arrange", "message"),
    [
        (
            lambda fake: fake.forbidden.add(("create", "jobsets.jobset.x-k8s.io")),
            "kubectl auth can-i create jobsets.jobset.x-k8s.io -n training",
        ),
        (lambda fake: setattr(fake, "crd_installed", False), "Install the JobSet controller: kubectl apply"),
        (lambda fake: fake.namespaces.discard("training"), 'namespaces "training" not found'),
    ],
)
def test_a_refused_create_is_one_line_with_the_fix(
    fake_cluster: FakeKubernetes,
    clients: KubernetesClients,
    request_body: dict[str, Any],
    arrange: Any,
    message: str,
) -> None:
    arrange(fake_cluster)
    with pytest.raises(KubernetesCallError) as raised:
        job.submit(request_body, clients)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_the_api_server_refuses_a_jobset_the_crd_does_not_allow(
    fake_cluster: FakeKubernetes, clients: KubernetesClients, request_body: dict[str, Any]
) -> None:
    request_body["spec"]["replicatedJobs"][0]["replicas"] = "two"
    with pytest.raises(KubernetesCallError) as raised:
        job.submit(request_body, clients)
    assert raised.value.status == 422
    assert "cloudtrain render JOB --provider kubernetes" in str(raised.value)


def test_a_busy_api_server_is_retried_with_backoff(
    fake_cluster: FakeKubernetes,
    clients: KubernetesClients,
    request_body: dict[str, Any],
    sleeps: list[float],
) -> None:
    fake_cluster.failures[:] = [503, 503]
    job.submit(request_body, clients)
    assert len(fake_cluster.jobsets) == 1
    assert (
        len(sleeps) == 2 and 1.0 <= sleeps[0] <= 1.1 and 2.0 <= sleeps[1] <= 2.2
    )  # 1 s, then 2 s, 10% jitter


def test_retries_end_in_one_error(
    fake_cluster: FakeKubernetes,
    clients: KubernetesClients,
    request_body: dict[str, Any],
    sleeps: list[float],
) -> None:
    fake_cluster.failures[:] = [503] * 5
    with pytest.raises(KubernetesCallError, match="the server is currently unable to handle the request"):
        job.submit(request_body, clients)
    assert len(sleeps) == 4


@pytest.mark.parametrize(
    ("condition", "pod_phase", "expected"),
    [
        (None, "Pending", ("pending", "Pending", "")),  # pods scheduled, images pulling
        (None, "Running", ("running", "Running", "")),
        ("Suspended", None, ("queued", "Suspended", "")),  # Kueue has not admitted it
        ("Completed", None, ("succeeded", "Completed", "")),
        ("Failed", None, ("failed", "Failed", "jobset failed due to one or more job failures")),
    ],
)
def test_status_reads_conditions_then_pods(
    fake_cluster: FakeKubernetes,
    clients: KubernetesClients,
    request_body: dict[str, Any],
    condition: str | None,
    pod_phase: str | None,
    expected: tuple[str, str, str],
) -> None:
    submitted = job.submit(request_body, clients)
    if pod_phase:
        fake_cluster.pods_for("training", submitted.name, phase=pod_phase)
    if condition:
        message = "jobset failed due to one or more job failures" if condition == "Failed" else ""
        fake_cluster.set_condition("training", submitted.name, condition, message=message)
    status = job.attach(submitted.id).status()
    assert (status.state, status.provider_state, status.detail) == expected


def test_status_of_a_deleted_jobset_says_so(fake_cluster: FakeKubernetes, clients: KubernetesClients) -> None:
    with pytest.raises(KubernetesCallError, match="No such JobSet in namespace training"):
        job.attach("kubernetes:training/gone-0123456789", clients).status()


def test_logs_merge_the_pods_in_time_order(
    fake_cluster: FakeKubernetes, clients: KubernetesClients, request_body: dict[str, Any]
) -> None:
    submitted = job.submit(request_body, clients)
    chief, worker = fake_cluster.pods_for("training", submitted.name)
    start = datetime.now(UTC) - timedelta(minutes=10)
    fake_cluster.write_log("training", chief, "epoch 1", at=start)
    fake_cluster.write_log("training", worker, "joined", at=start + timedelta(seconds=1))
    fake_cluster.write_log("training", chief, "epoch 2", at=start + timedelta(minutes=9))
    assert list(submitted.logs()) == ["[host-0] epoch 1", "[host-1] joined", "[host-0] epoch 2"]
    assert list(submitted.logs(since=datetime.now(UTC) - timedelta(minutes=5))) == ["[host-0] epoch 2"]
    assert list(submitted.logs(tail=1)) == [
        "[host-1] joined",
        "[host-0] epoch 2",
    ]  # the last line of each pod
    paths = [path for _, path in fake_cluster.requests if "/log" in path]
    assert any("sinceSeconds=" in path for path in paths) and any("tailLines=1" in path for path in paths)


def test_follow_streams_until_the_pods_end(
    fake_cluster: FakeKubernetes, clients: KubernetesClients, request_body: dict[str, Any]
) -> None:
    submitted = job.submit(request_body, clients)
    chief, worker = fake_cluster.pods_for("training", submitted.name)
    fake_cluster.write_log("training", chief, "started")

    def training() -> None:
        time.sleep(0.3)
        fake_cluster.write_log("training", worker, "epoch 1 done")
        fake_cluster.set_pod_phase("training", worker, "Succeeded")
        fake_cluster.set_pod_phase("training", chief, "Succeeded")

    threading.Thread(target=training).start()
    assert sorted(submitted.logs(follow=True)) == ["[host-0] started", "[host-1] epoch 1 done"]


def test_cancel_deletes_the_jobset_and_its_pods(
    fake_cluster: FakeKubernetes, clients: KubernetesClients, request_body: dict[str, Any]
) -> None:
    submitted = job.submit(request_body, clients)
    fake_cluster.pods_for("training", submitted.name)
    submitted.cancel()
    assert fake_cluster.jobsets == {} and fake_cluster.pods == {}
    assert (
        "DELETE",
        f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/training/jobsets/{submitted.name}?propagationPolicy=Foreground",
    ) in fake_cluster.requests


def test_cancel_after_the_end_says_it_ended(
    fake_cluster: FakeKubernetes, clients: KubernetesClients, request_body: dict[str, Any]
) -> None:
    submitted = job.submit(request_body, clients)
    fake_cluster.set_condition("training", submitted.name, "Completed")
    with pytest.raises(ProviderError, match="already ended, succeeded"):
        submitted.cancel()
    assert len(fake_cluster.jobsets) == 1


def test_list_finds_cloudtrains_jobsets_newest_first(
    fake_cluster: FakeKubernetes, clients: KubernetesClients, make_plan: MakePlan
) -> None:
    names = []
    for run in ("run-1", "run-2"):
        names.append(job.submit(render(make_plan(run_id=run)), clients).name)
        time.sleep(1.05)  # creationTimestamp has whole seconds
    listed = job.list_jobs(clients, limit=None)
    assert [summary.id for summary in listed] == [
        f"kubernetes:training/{name}@fake" for name in reversed(names)
    ]
    assert {summary.name for summary in listed} == {"demo"}
    assert [summary.id for summary in job.list_jobs(clients, limit=1)] == [listed[0].id]
    assert any(path.endswith("jobsets?labelSelector=cloudtrain/job") for _, path in fake_cluster.requests)


def test_an_id_with_a_context_reaches_that_context(
    fake_cluster: FakeKubernetes, request_body: dict[str, Any]
) -> None:
    created = job.submit(request_body, KubernetesClients(context="other", namespace="default"))
    assert created.id == f"kubernetes:default/{_name(request_body)}@other"
    assert job.attach(created.id).status().state == "pending"
    assert created.hints()[0] == f"kubectl --context other -n default describe jobset {_name(request_body)}"


def test_no_cluster_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request_body: dict[str, Any]
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(CredentialsError, match="gcloud container clusters get-credentials"):
        job.submit(request_body)


def test_an_unknown_context_lists_the_known_ones(
    fake_cluster: FakeKubernetes, request_body: dict[str, Any]
) -> None:
    with pytest.raises(CredentialsError, match=r"no context 'prod' in .*Contexts: fake, other"):
        job.submit(request_body, KubernetesClients(context="prod"))


def test_refused_credentials_are_a_credentials_error(
    fake_cluster: FakeKubernetes,
    request_body: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stale = tmp_path / "stale"
    stale.write_text(Path(os.environ["KUBECONFIG"]).read_text().replace("fake-token", "stale-token"))
    monkeypatch.setenv("KUBECONFIG", str(stale))
    with pytest.raises(CredentialsError, match="refused the kubeconfig's credentials"):
        job.submit(request_body, KubernetesClients())
