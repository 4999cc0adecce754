"""One suite, every provider: the local one, Vertex and SageMaker on their loopback fakes, Kubernetes
on its fake API server (which plays the JobSet controller), and ``toycloud``, a provider
installed from another distribution.

What every provider promises (``cloudtrain.provider.base.Provider``): a pure, deterministic
render; a render without a code bundle is a ``ProviderError``; submit -> status -> logs ->
wait reaches a terminal state; attach by ID and ``owns`` agree, and no other provider claims
the ID; a job's outputs are the plan's with the real name filled in, the same when attached;
cancel ends a job that has not finished; submitting the same request again is the
same job; an ID the provider never issued is a typed error.
"""

from __future__ import annotations

import json
import re
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cloudtrain import api
from cloudtrain.errors import CloudtrainError, ProviderError
from cloudtrain.outputs import JOB, Outputs
from cloudtrain.provider import Job, JobStatus, Provider, registry
from cloudtrain.provider.base import attached
from cloudtrain.spec import JobSpec
from cloudtrain.specfile import load_spec

# The local provider's replicas run this instead of TensorFlow: the suite is about the
# provider's life cycle, which tests/cloudtrain/providers/test_local_training.py trains through.
REPLICA = "import sys, time; print('step 1', flush=True); time.sleep(float(sys.argv[1]))"
UNKNOWN_IDS = {
    "local": "local:never-submitted-20260101-000000-0000",
    "vertex": "projects/my-project/locations/us-central1/customJobs/1",
    "sagemaker": "arn:aws:sagemaker:us-east-1:123456789012:training-job/never-submitted-0123456789",
    "kubernetes": "kubernetes:training/never-submitted-0123456789",
    "toycloud": "toy:000000000000",
}
OVERRIDES = {"toycloud": ("toycloud.storage_root=toy://lake/binary-classifier",)}


@dataclass
class Harness:
    """A provider and the services it talks to, ready for one test."""

    provider: Provider
    example: Path
    tmp_path: Path

    def spec(self) -> JobSpec:
        """The example job for this provider (its own discovered defaults), Toy Cloud's root on ``toy://``."""
        return load_spec(self.example, OVERRIDES.get(self.provider.name, ()), provider=self.provider.name)

    def submission(self, *, seconds: float = 0.0) -> api.Submission:
        spec = self.spec()
        submission = api.prepare(spec, self.provider)
        if self.provider.name == "local":
            for replica in submission.request["replicas"]:
                replica["argv"] = [sys.executable, "-c", REPLICA, str(seconds)]
        return submission

    def submit(self, *, seconds: float = 0.0) -> Job:
        return self.submission(seconds=seconds).submit()


@pytest.fixture(params=["local", "vertex", "sagemaker", "kubernetes", "toycloud"])
def harness(request: pytest.FixtureRequest, example_job: Path, tmp_path: Path) -> Iterator[Harness]:
    name = request.param
    services = {
        "local": ["local_home"],
        "vertex": ["fake_vertex", "fake_gcs", "fake_logging"],
        "sagemaker": ["aws"],
        "kubernetes": ["fake_cluster", "fake_gcs"],
        "toycloud": ["toycloud"],
    }[name]
    for fixture in services:
        request.getfixturevalue(fixture)
    if name == "kubernetes":
        request.getfixturevalue("fake_cluster").controller = True
    yield Harness(registry.get(name), example_job, tmp_path)


@pytest.fixture
def local_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Local runs in a folder of this test; whatever is still running at the end is stopped."""
    home = tmp_path / "local-home"
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(home))
    yield home
    for run in sorted((home / "runs").glob("*")):
        job = registry.get("local").attach(f"local:{run.name}")
        job.cancel()
        job.wait(poll_s=0.1)


def test_render_is_pure_and_deterministic(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    planned = harness.submission().plan

    def no_network(*args: Any) -> None:
        raise AssertionError("render opened a connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    first, again = harness.provider.render(planned), harness.provider.render(planned)
    assert first == again
    assert json.loads(json.dumps(first)) == first  # plain JSON data, what --dry-run prints


def test_render_without_a_code_bundle_is_a_provider_error(harness: Harness) -> None:
    unpacked = harness.provider.plan(harness.spec())
    with pytest.raises(ProviderError, match=r"pack_code"):
        harness.provider.render(unpacked)


def test_submit_status_logs_and_wait(harness: Harness) -> None:
    job = harness.submit()
    assert isinstance(job.status(), JobStatus)
    assert all(isinstance(line, str) for line in job.logs())
    final = job.wait(poll_s=0.05)
    assert final.done
    assert final.state == "succeeded", final


def test_attach_and_owns_agree_and_no_other_provider_claims_the_id(harness: Harness) -> None:
    job = harness.submit()
    assert harness.provider.owns(job.id)
    assert registry.for_job(job.id) is harness.provider
    assert [p.name for p in registry.providers() if p.owns(job.id)] == [harness.provider.name]
    attached = harness.provider.attach(job.id)
    assert attached.id == job.id
    assert attached.status().state in {"pending", "queued", "running", "succeeded"}
    job.wait(poll_s=0.05)


def test_outputs_of_the_plan_the_submitted_job_and_the_attached_job_agree(harness: Harness) -> None:
    submission = harness.submission()
    promised = submission.plan.outputs
    job = submission.submit()
    found, attached = job.outputs, harness.provider.attach(job.id).outputs
    assert found == attached  # read back from the provider, the same places
    assert set(found.to_dict()) == set(Outputs.names())
    assert not [uri for uri in found.to_dict().values() if JOB in uri]  # the real name is filled in
    for name, template in promised.to_dict().items():
        assert _fills(template, found.to_dict()[name]), (name, template, found)
    job.wait(poll_s=0.05)


def _fills(template: str, uri: str) -> bool:
    """Whether ``uri`` is ``template`` with ``{job}`` replaced by one name (no '/')."""
    pattern = re.escape(template).replace(re.escape(JOB), "[^/]+")
    return re.fullmatch(pattern, uri) is not None


def test_cancel_ends_a_job_that_has_not_finished(harness: Harness) -> None:
    job = harness.submit(seconds=60)
    job.cancel()
    final = job.wait(poll_s=0.05)
    assert final.state == "cancelled", final


def test_submitting_the_same_request_again_is_the_same_job(harness: Harness) -> None:
    if harness.provider.name == "local":
        pytest.skip("every local submit is a new run on this machine: nothing is billed twice")
    submission = harness.submission()
    first, again = submission.submit(), submission.submit()
    assert again.id == first.id
    if harness.provider.name != "toycloud":  # a plugin need not tell
        assert (attached(first), attached(again)) == (False, True)


def test_an_id_it_never_issued_is_a_typed_error(harness: Harness) -> None:
    job_id = UNKNOWN_IDS[harness.provider.name]
    assert harness.provider.owns(job_id)
    with pytest.raises(CloudtrainError):
        harness.provider.attach(job_id).status()
