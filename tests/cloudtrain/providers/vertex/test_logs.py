"""Job logs from Cloud Logging's entries:list (a fake over real HTTP on loopback), per-replica prefixes."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.vertex_jobservice import FakeJobService
from fakes.vertex_logging import FakeLogging
from google.cloud import aiplatform_v1
from google.protobuf import json_format

from cloudtrain import api
from cloudtrain.errors import ProviderError
from cloudtrain.planning import plan
from cloudtrain.providers import vertex
from cloudtrain.providers.vertex import logs as vertex_logs

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "binary_classifier" / "job.yaml"
PARENT = "projects/my-project/locations/us-central1"


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def job(fake_vertex: FakeJobService, sleeps: list[float]) -> vertex.VertexJob:
    """A job created directly in the fake service (no upload needed to read logs)."""
    body = vertex.render(plan(api.as_spec(EXAMPLE), "vertex").with_bundle("gs://my-bucket/code/0.tar.gz"))
    message = aiplatform_v1.CustomJob.pb(aiplatform_v1.CustomJob())
    json_format.ParseDict(body, message)
    clients = vertex.VertexClients(sleep=sleeps.append)
    created = clients.job_service("us-central1").create_custom_job(
        parent=PARENT, custom_job=aiplatform_v1.CustomJob.wrap(message)
    )
    return vertex.attach(created.name, clients)


def number(job: vertex.VertexJob) -> str:
    return job.id.rsplit("/", 1)[1]


def test_logs_are_prefixed_by_replica(fake_logging: FakeLogging, job: vertex.VertexJob) -> None:
    fake_logging.write("my-project", number(job), None, "Job is running.")
    fake_logging.write("my-project", number(job), "workerpool0-0", "epoch 1/3")
    fake_logging.write("my-project", number(job), "workerpool1-0", "epoch 1/3")
    fake_logging.write("my-project", "999", "workerpool0-0", "another job's line")
    assert list(job.logs()) == ["[service] Job is running.", "[chief-0] epoch 1/3", "[worker-0] epoch 1/3"]


def test_the_query_is_bounded_by_the_job_creation_time(
    fake_logging: FakeLogging, job: vertex.VertexJob
) -> None:
    list(job.logs())
    (request,) = fake_logging.requests
    assert request["resourceNames"] == ["projects/my-project"]
    assert request["filter"].startswith(f'resource.type="ml_job" AND resource.labels.job_id="{number(job)}"')
    assert 'AND timestamp>="2026-' in request["filter"]  # Cloud Logging's default is the last 24 h


def test_logs_read_every_page(
    fake_logging: FakeLogging, job: vertex.VertexJob, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vertex_logs, "PAGE_SIZE", 2)
    for step in range(5):
        fake_logging.write("my-project", number(job), "workerpool0-0", f"step {step}")
    assert list(job.logs()) == [f"[chief-0] step {step}" for step in range(5)]
    assert [r.get("pageToken") for r in fake_logging.requests] == [None, "2", "4"]


def test_follow_prints_each_line_once_until_the_job_ends(
    fake_logging: FakeLogging, job: vertex.VertexJob, sleeps: list[float]
) -> None:
    # Each GetCustomJob moves the fake one state on: attach's read sees PENDING, the first
    # poll RUNNING (sleep, during which the job writes a line), the second SUCCEEDED.
    def write_while_sleeping(seconds: float) -> None:
        sleeps.append(seconds)
        fake_logging.write("my-project", number(job), "workerpool1-1", f"line {len(sleeps)}")

    job._clients.sleep = write_while_sleeping
    fake_logging.write("my-project", number(job), "workerpool0-0", "line 0")
    lines = list(job.logs(follow=True))
    assert lines == ["[chief-0] line 0", *(f"[worker-1] line {n}" for n in range(1, len(sleeps) + 1))]
    assert sleeps == [vertex_logs.POLL_S]
    assert lines[-1] == "[worker-1] line 1"  # written before the job ended, still printed


@pytest.mark.parametrize(
    ("entry", "line"),
    [
        ({"labels": {vertex_logs.TASK_LABEL: "workerpool0-0"}, "textPayload": "hi\n"}, "[chief-0] hi"),
        ({"labels": {vertex_logs.TASK_LABEL: "workerpool2-0"}, "textPayload": "ps"}, "[ps-0] ps"),
        (  # structured logs: a JSON line with severity and message becomes jsonPayload
            {"labels": {vertex_logs.TASK_LABEL: "workerpool3-0"}, "jsonPayload": {"message": "eval"}},
            "[evaluator-0] eval",
        ),
        ({"resource": {"labels": {"task_name": "workerpool1-4"}}, "textPayload": "x"}, "[worker-4] x"),
        ({"jsonPayload": {"event": "started"}}, '[service] {"event": "started"}'),  # no message field
    ],
)
def test_format_entry(entry: dict, line: str) -> None:
    assert vertex_logs.format_entry(entry) == line


def test_logs_retry_unavailable_and_explain_forbidden(
    fake_logging: FakeLogging, job: vertex.VertexJob, sleeps: list[float]
) -> None:
    fake_logging.fail(503)
    fake_logging.write("my-project", number(job), "workerpool0-0", "ok")
    assert list(job.logs()) == ["[chief-0] ok"]
    assert sleeps == [1.0]
    fake_logging.fail(403)
    with pytest.raises(
        ProviderError, match=r"read the logs of job \d+: .*\(Forbidden\).*roles/logging.viewer"
    ):
        list(job.logs())
