"""Every provider error of ``fixtures/errors.yaml``, sent in its provider's own wire form through the provider's
real client from its loopback fake, reads as its shared reason.

A refused call goes through the client's own error handling (google-api-core's, botocore's,
the kubernetes client's) into the provider's translation; an ended job goes through the
provider's status reading. Nothing here builds a provider's error object by hand.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml

import cloudtrain
from cloudtrain import api
from cloudtrain.errors import CloudtrainError
from cloudtrain.provider import Failure, JobStatus
from cloudtrain.provider.failures import failure_of
from cloudtrain.providers import sagemaker, vertex
from cloudtrain.providers.kubernetes import job as kubernetes_job
from cloudtrain.providers.kubernetes.clients import KubernetesClients
from cloudtrain.providers.kubernetes.render import render
from tests.cloudtrain.providers.conftest import (
    aws,
    fake_cluster,
    fake_gcs,
    fake_vertex,
    google_fakes,
    kubernetes_fake,
    loopback_aws,
)
from tests.cloudtrain.providers.fakes.kubernetes_api import GROUP, PLURAL
from tests.cloudtrain.providers.kubernetes.conftest import make_plan
from tests.cloudtrain.providers.test_local_launcher import _submit

__all__ = [
    "aws",
    "fake_cluster",
    "fake_gcs",
    "fake_vertex",
    "google_fakes",
    "kubernetes_fake",
    "loopback_aws",
    "make_plan",
]

FIXTURES = yaml.safe_load((Path(__file__).with_name("fixtures") / "errors.yaml").read_text())
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "binary_classifier" / "job.yaml"


def _id(fixture: dict[str, Any]) -> str:
    return f"{fixture['provider']}-{fixture['where']}-{fixture['reason']}-{fixture['code']}"


def test_the_set_is_large_and_every_entry_cites_its_source() -> None:
    assert len(FIXTURES) >= 30
    assert {f["provider"] for f in FIXTURES} == {"vertex", "sagemaker", "kubernetes", "local"}
    assert all(f["source"].strip() for f in FIXTURES)


@pytest.mark.parametrize("fixture", FIXTURES, ids=[_id(f) for f in FIXTURES])
def test_each_error_reads_as_its_reason(
    fixture: dict[str, Any], request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    read = READERS[(fixture["provider"], fixture["where"])]
    failure = read(fixture["wire"], request, tmp_path)
    assert failure is not None
    assert (str(failure.reason), failure.code) == (fixture["reason"], fixture["code"])


def _refused(send: Any) -> Failure | None:
    with pytest.raises(CloudtrainError) as refused:
        send()
    return failure_of(refused.value)


def vertex_call(wire: dict[str, Any], request: pytest.FixtureRequest, tmp_path: Path) -> Failure | None:
    request.getfixturevalue("fake_gcs")
    fake = request.getfixturevalue("fake_vertex")
    fake.fail(
        "CreateCustomJob",
        grpc.StatusCode[wire["code"]],
        times=10,
        message=wire["message"],
        reason=wire.get("reason", ""),
    )
    clients = vertex.VertexClients(sleep=lambda s: None)
    return _refused(lambda: cloudtrain.submit(api.as_spec(EXAMPLE), provider="vertex", clients=clients))


def vertex_job(wire: dict[str, Any], request: pytest.FixtureRequest, tmp_path: Path) -> Failure | None:
    request.getfixturevalue("fake_gcs")
    fake = request.getfixturevalue("fake_vertex")
    job = cloudtrain.submit(
        api.as_spec(EXAMPLE), provider="vertex", clients=vertex.VertexClients(sleep=lambda s: None)
    )
    fake.set_state(job.id, "JOB_STATE_FAILED", error=(wire["code"], wire["message"]))
    return job.status().failure


def sagemaker_call(wire: dict[str, Any], request: pytest.FixtureRequest, tmp_path: Path) -> Failure | None:
    loop = request.getfixturevalue("aws")
    loop.sagemaker.fail(
        "CreateTrainingJob", wire["code"], times=10, status=wire.get("status", 400), message=wire["message"]
    )
    return _refused(lambda: _sagemaker_submit(loop))


def sagemaker_job(wire: dict[str, Any], request: pytest.FixtureRequest, tmp_path: Path) -> Failure | None:
    loop = request.getfixturevalue("aws")
    if "stopped" in wire:
        loop.sagemaker.script([("InProgress", "Training", "Training"), ("Stopped", wire["stopped"], "")])
    else:
        loop.sagemaker.script(
            [("InProgress", "Starting", ""), ("Failed", "Failed", "")], failure_reason=wire["failure_reason"]
        )
    final: JobStatus = _sagemaker_submit(loop).wait(poll_s=1.0)
    return final.failure


def _sagemaker_submit(loop: Any) -> Any:
    planned, packed = api.pack_code(api.plan(api.as_spec(EXAMPLE), "sagemaker").with_run("r1"))
    return sagemaker.submit(
        planned, sagemaker.provider.render(planned), packed, clients=loop.clients(attempts=1)
    )


def kubernetes_call(wire: dict[str, Any], request: pytest.FixtureRequest, tmp_path: Path) -> Failure | None:
    cluster = request.getfixturevalue("fake_cluster")
    body = render(request.getfixturevalue("make_plan")())
    if wire.get("quota"):
        cluster.full_quota = wire["quota"]
    if wire.get("forbidden"):
        cluster.forbidden = {(wire["forbidden"], f"{PLURAL}.{GROUP}")}
    if wire.get("crd_missing"):
        cluster.crd_installed = False
    if wire["status"] == 503:
        cluster.failures = [503] * 10
    return _refused(lambda: kubernetes_job.submit(body, KubernetesClients(sleep=lambda s: None)))


def kubernetes_job_failure(
    wire: dict[str, Any], request: pytest.FixtureRequest, tmp_path: Path
) -> Failure | None:
    cluster = request.getfixturevalue("fake_cluster")
    created = kubernetes_job.submit(
        render(request.getfixturevalue("make_plan")()), KubernetesClients(sleep=lambda s: None)
    )
    cluster.set_condition("training", created.name, "Failed", reason=wire["reason"], message=wire["message"])
    return created.status().failure


def local_job(wire: dict[str, Any], request: pytest.FixtureRequest, tmp_path: Path) -> Failure | None:
    request.getfixturevalue("monkeypatch").setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path / "home"))
    killed = wire["returncode"] < 0
    job = _submit(tmp_path, env={"MODE": "crash" if killed else f"exit:{wire['returncode']}"}, max_restarts=0)
    return job.wait(poll_s=0.2).failure


READERS = {
    ("vertex", "call"): vertex_call,
    ("vertex", "job"): vertex_job,
    ("sagemaker", "call"): sagemaker_call,
    ("sagemaker", "job"): sagemaker_job,
    ("kubernetes", "call"): kubernetes_call,
    ("kubernetes", "job"): kubernetes_job_failure,
    ("local", "job"): local_job,
}


@pytest.fixture(autouse=True)
def _no_runs_left(tmp_path: Path) -> Iterator[None]:
    yield
    home = tmp_path / "home"
    if home.exists():
        from tests.cloudtrain.providers.test_local_launcher import stop_runs

        stop_runs(home)
