"""Kubernetes capacity: a JobSet queued in a Kueue LocalQueue, and what it says while it waits.

The rendered JobSet is checked against the vendored JobSet CRD; the fake API server plays
Kueue, whose Workloads are checked against Kueue v0.19.2's vendored CRDs, so the fields the
status reads are Kueue's own.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cloudtrain import api
from cloudtrain.errors import SpecError
from cloudtrain.provider.failures import Reason
from cloudtrain.provider.pending import wait_to_start
from cloudtrain.providers.kubernetes import job
from cloudtrain.providers.kubernetes.clients import KubernetesClients
from cloudtrain.providers.kubernetes.render import QUEUE_LABEL, render
from cloudtrain.spec import JobSpec
from tests.cloudtrain.providers.fakes import kubernetes_schema
from tests.cloudtrain.providers.fakes.kubernetes_api import FakeKubernetes
from tests.cloudtrain.providers.fakes.kueue import NO_QUOTA

from .conftest import MakePlan

GOLDEN = Path(__file__).resolve().parents[4] / "tests" / "golden" / "kubernetes" / "queue.json"
QUEUED = {
    "resources": {"hosts": 2, "accelerator": "a100-40gb", "capacity": {"mode": "queue", "name": "team-a"}}
}


@pytest.fixture
def clients(fake_cluster: FakeKubernetes) -> KubernetesClients:
    return KubernetesClients(sleep=lambda seconds: None)


def test_a_queued_jobset_is_suspended_and_labelled_for_its_local_queue(make_plan: MakePlan) -> None:
    body = render(make_plan(**QUEUED))
    if os.environ.get("CLOUDTRAIN_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(json.dumps(body, indent=2) + "\n")
    assert body == json.loads(GOLDEN.read_text())
    assert kubernetes_schema.problems(body) == []
    assert body["spec"]["suspend"] is True
    assert body["metadata"]["labels"][QUEUE_LABEL] == "team-a"


def test_the_capacity_queue_wins_over_the_sections_and_either_suspends(make_plan: MakePlan) -> None:
    section = render(make_plan(kubernetes={"queue": "default-queue"}))
    named = render(make_plan(kubernetes={"queue": "default-queue"}, **QUEUED))
    plain = render(make_plan())
    assert section["metadata"]["labels"][QUEUE_LABEL] == "default-queue" and section["spec"]["suspend"]
    assert named["metadata"]["labels"][QUEUE_LABEL] == "team-a"
    assert "suspend" not in plain["spec"] and QUEUE_LABEL not in plain["metadata"]["labels"]


@pytest.mark.parametrize(
    ("capacity", "message"),
    [
        ("queue", "resources.capacity: capacity: queue on Kubernetes goes through a Kueue LocalQueue"),
        ({"mode": "queue", "name": "Team_A"}, "resources.capacity.name: 'Team_A' is not a LocalQueue name"),
        ("flex", "use capacity: queue with a Kueue ClusterQueue whose ProvisioningRequest admission check"),
        ({"mode": "reservation", "name": "any"}, "select those nodes with kubernetes.node_selector"),
    ],
)
def test_what_kubernetes_refuses_names_the_alternative(capacity: object, message: str) -> None:
    spec = JobSpec(
        name="demo",
        code={"module": "t"},
        storage={"root": "gs://bucket/demo"},
        resources={"capacity": capacity},
    )
    with pytest.raises(SpecError) as refused:
        api.plan(spec, "kubernetes")
    assert message in str(refused.value)


def test_a_queued_jobset_waits_with_kueues_reason_then_runs_once_admitted(
    fake_cluster: FakeKubernetes, clients: KubernetesClients, make_plan: MakePlan
) -> None:
    fake_cluster.add_local_queue("training", "team-a")
    submitted = job.submit(render(make_plan(**QUEUED)), clients)
    waiting = submitted.status()
    assert (waiting.state, waiting.provider_state) == ("queued", "Suspended")
    assert waiting.pending_reason == f"suspended in Kueue queue team-a: {NO_QUOTA}"
    assert waiting.pending_since is not None
    assert fake_cluster.pods == {}  # suspended: no pods
    assert submitted.summary().state == "queued"  # what list shows
    fake_cluster.admit("training", submitted.name)
    fake_cluster.pods_for("training", submitted.name)
    assert submitted.status().state == "running"


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        (
            lambda fake: None,
            "suspended in Kueue queue team-a: LocalQueue team-a doesn't exist",
        ),  # no such queue
        (  # Kueue not installed: nothing would ever admit it
            lambda fake: setattr(fake, "kueue_installed", False),
            "suspended in Kueue queue team-a (Kueue's Workloads cannot be read here: is Kueue installed?)",
        ),
    ],
)
def test_a_queue_that_will_not_admit_says_why(
    fake_cluster: FakeKubernetes, clients: KubernetesClients, make_plan: MakePlan, setup: object, reason: str
) -> None:
    setup(fake_cluster)  # type: ignore[operator]
    submitted = job.submit(render(make_plan(**QUEUED)), clients)
    assert submitted.status().pending_reason == reason


def test_the_pending_limit_deletes_a_jobset_still_queued(
    fake_cluster: FakeKubernetes, clients: KubernetesClients, make_plan: MakePlan
) -> None:
    fake_cluster.add_local_queue("training", "team-a")
    submitted = job.submit(render(make_plan(**QUEUED)), clients)
    ticks = iter(range(0, 10_000, 60))
    final = wait_to_start(submitted, limit_s=120, poll_s=0, clock=lambda: next(ticks))
    assert final.state == "cancelled"
    assert final.failure is not None and final.failure.reason == Reason.CAPACITY
    assert "suspended in Kueue queue team-a" in final.failure.message
    assert fake_cluster.jobsets == {}  # deleted, with its Jobs and pods
