"""The CLI end to end on Kubernetes: the real ``kubernetes`` client against the fake API server.

``plan``, ``cost``, ``validate --json``, ``check``, ``submit``, ``status``, ``logs``,
``list`` and ``cancel`` run through the real entry point. The cluster is found through a
kubeconfig (``fake_cluster``: context ``fake``, namespace ``training``), the code bundle
goes up to gcp-storage-emulator (``fake_gcs``), and every JobSet is validated by the fake
against the vendored JobSet CRD.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from google.cloud import storage

from tests.cloudtrain.providers.fakes import kubernetes_schema
from tests.cloudtrain.providers.fakes.kubernetes_api import FakeKubernetes
from tests.cloudtrain.providers.fakes.vertex_storage import BUCKET
from tests.conftest import Result

EXAMPLE = str(Path(__file__).resolve().parents[4] / "examples" / "binary_classifier" / "job.yaml")
K8S = ("--provider", "kubernetes")

Run = Callable[..., Result]


@pytest.fixture
def run(run_cli: Run) -> Run:
    """The CLI through its real entry point; every command here must succeed."""

    def succeeded(*args: str) -> Result:
        result = run_cli(*args)
        assert result.code == 0, result.err
        return result

    return succeeded


def test_dry_run_prints_a_jobset_the_crd_accepts(run: Run) -> None:
    body = json.loads(run("submit", EXAMPLE, *K8S, "--dry-run").out)
    assert kubernetes_schema.problems(body) == []
    assert body["spec"]["replicatedJobs"][0]["template"]["spec"]["parallelism"] == 2
    assert json.loads(run("render", EXAMPLE, *K8S).out)["kind"] == "JobSet"


@pytest.mark.usefixtures("fake_cluster")
def test_plan_names_the_node_and_its_context(run: Run) -> None:
    planned = json.loads(run("plan", EXAMPLE, *K8S, "--json").out)
    assert planned["machine"]["machine_type"] == "n1-standard-8"  # kubernetes.node_type, from the catalog
    assert planned["image"] == "tensorflow/tensorflow:2.21.0-gpu"  # image: auto, the catalog's row
    # the kubeconfig's current context and its namespace, as kubectl would use them
    assert planned["sources"]["kubernetes.context"].startswith("environment:")
    assert planned["sources"]["kubernetes.namespace"].startswith("environment:")


def test_without_a_node_type_the_plan_says_any_node_and_cost_says_unpriced_and_why(run: Run) -> None:
    args = ("--set", "kubernetes.node_type=null", "--set", "kubernetes.region=null")
    assert (
        "any node with 1 × t4 (kubernetes.node_type names its type)" in run("plan", EXAMPLE, *K8S, *args).out
    )
    table = run("cost", EXAMPLE, "--throughput", "1200@t4", *args)
    assert "kubernetes: unpriced: the job runs on any node of the cluster" in table.out + table.err
    options = json.loads(run("cost", EXAMPLE, "--throughput", "1200@t4", *args, "--json").out)["options"]
    assert {option["provider"] for option in options} == {"vertex", "sagemaker"}


def test_a_misspelt_node_type_is_unpriced_with_the_type_it_meant(run: Run) -> None:
    table = run("cost", EXAMPLE, "--set", "kubernetes.node_type=g5.xlarg")
    note = "kubernetes: unpriced: kubernetes.node_type 'g5.xlarg' is not a node type the catalog prices."
    assert f"{note} Did you mean 'g5.xlarge'?\n" in table.out + table.err


def test_cost_ranks_the_node_type_beside_the_clouds(run: Run) -> None:
    options = json.loads(run("cost", EXAMPLE, "--throughput", "1200@t4", "--json").out)["options"]
    nodes = [o for o in options if o["provider"] == "kubernetes"]
    assert {(o["machine_type"], o["hosts"], o["capacity"]) for o in nodes} == {
        ("n1-standard-8", 2, "on-demand"),
        ("n1-standard-8", 2, "spot"),
    }
    on_demand = next(o for o in nodes if o["capacity"] == "on-demand")
    assert (
        on_demand["usd_per_hour"] == 1.46
    )  # 2 nodes × (GCE n1-standard-8 0.38 + one T4 0.35): no Vertex premium
    assert {o["provider"] for o in options} == {"kubernetes", "vertex", "sagemaker"}


def test_validate_json_names_a_bad_field_of_the_section(run_cli: Run) -> None:
    result = run_cli("validate", EXAMPLE, *K8S, "--set", "kubernetes.namespace=Training", "--json")
    assert result.code == 2
    (error,) = json.loads(result.out)["errors"]
    assert error["field"] == "kubernetes.namespace"
    assert error["message"].startswith("kubernetes.namespace: 'Training' is not a Kubernetes name")


def test_check_reports_the_cluster_the_namespace_jobset_and_permissions(
    run_cli: Run, fake_cluster: FakeKubernetes
) -> None:
    result = run_cli("check", EXAMPLE, *K8S, "--json")
    lines = {line["check"]: line["status"] for line in json.loads(result.out)}
    # the namespace has no ResourceQuota on GPUs: the quota line is a warning, never a failure
    assert lines == {"cluster": "ok", "namespace": "ok", "jobset": "ok", "permissions": "ok", "quota": "warn"}
    fake_cluster.crd_installed = False
    failed = run_cli("check", EXAMPLE, *K8S, "--json")
    assert failed.code != 0
    assert {line["check"]: line["status"] for line in json.loads(failed.out)}["jobset"] == "fail"


@pytest.mark.usefixtures("fake_gcs")
def test_submit_status_logs_list_and_cancel(run: Run, run_cli: Run, fake_cluster: FakeKubernetes) -> None:
    job_id = run("submit", EXAMPLE, *K8S, "--no-wait").out.strip()
    ((namespace, name),) = fake_cluster.jobsets
    assert job_id == f"kubernetes:{namespace}/{name}@fake"
    body = fake_cluster.jobsets[(namespace, name)]
    bundle = body["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["env"]
    path = next(item["value"] for item in bundle if item["name"] == "CLOUDTRAIN_BUNDLE")
    assert storage.Client().bucket(BUCKET).get_blob(path.removeprefix(f"/gcs/{BUCKET}/")) is not None

    assert run("status", job_id).out.splitlines()[0] == "pending (NoPods)"
    pods = fake_cluster.pods_for(namespace, name)
    assert run("status", job_id).out.splitlines()[0] == "running (Running)"

    start = datetime.now(UTC) - timedelta(minutes=10)
    fake_cluster.write_log(namespace, pods[0], "epoch 1/3 loss=0.5", at=start)
    fake_cluster.write_log(namespace, pods[1], "worker ready", at=start + timedelta(seconds=1))
    fake_cluster.write_log(namespace, pods[0], "epoch 2/3 loss=0.3", at=start + timedelta(minutes=9))
    assert run("logs", job_id).out.splitlines() == [
        "[host-0] epoch 1/3 loss=0.5",
        "[host-1] worker ready",
        "[host-0] epoch 2/3 loss=0.3",
    ]
    assert run("logs", job_id, "--tail", "1").out.splitlines() == [
        "[host-1] worker ready",
        "[host-0] epoch 2/3 loss=0.3",
    ]
    assert run("logs", job_id, "--since", "5m").out.splitlines() == ["[host-0] epoch 2/3 loss=0.3"]

    (row,) = [
        job
        for job in json.loads(run("list", "--provider", "kubernetes", "--json").out)
        if job["id"] == job_id
    ]
    assert (row["state"], row["shape"], row["estimate"]["basis"]) == (
        "running",
        "2 × n1-standard-8",
        "worst-case",
    )

    assert job_id in run("cancel", job_id).err
    assert (namespace, name) not in fake_cluster.jobsets
    gone = run_cli("status", job_id)
    assert gone.code != 0 and "kubectl get jobsets -n training" in gone.err


@pytest.mark.usefixtures("fake_gcs")
def test_an_ended_run_is_priced_from_its_node_type(run: Run, fake_cluster: FakeKubernetes) -> None:
    job_id = run("submit", EXAMPLE, *K8S, "--no-wait").out.strip()
    ((namespace, name),) = fake_cluster.jobsets
    fake_cluster.set_condition(namespace, name, "Completed")
    (row,) = [
        job
        for job in json.loads(run("list", "--provider", "kubernetes", "--json").out)
        if job["id"] == job_id
    ]
    assert row["state"] == "succeeded"
    assert (
        row["cost"]["usd"] is not None
    )  # 2 nodes × the seconds from creation to the end, at the row's price
    shown = run("status", job_id)
    assert "(2 × 0 s billed, JobSet created to ended)" in shown.out
    # the console: the kubectl command that shows the JobSet, in the context it was made in
    assert shown.err == f"Console: kubectl --context fake -n {namespace} describe jobset {name}\n"


@pytest.mark.usefixtures("fake_gcs")
def test_the_job_commands_find_a_jobset_by_its_run_id(run: Run, fake_cluster: FakeKubernetes) -> None:
    job_id = run("submit", EXAMPLE, *K8S, "--run-id", "nightly-42", "--no-wait").out.strip()
    run("submit", EXAMPLE, *K8S, "--run-id", "nightly-43", "--no-wait")  # another run's JobSet

    shown = json.loads(run("status", "nightly-42", "--json").out)
    assert (shown["id"], shown["run"]) == (job_id, "nightly-42")
    assert job_id in run("cancel", "nightly-42").err
