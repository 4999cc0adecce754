"""Job logs from Cloud Logging's entries:list (a fake over real HTTP on loopback), per-replica prefixes."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from google.cloud import aiplatform_v1
from google.protobuf import json_format

from cloudtrain import api
from cloudtrain.errors import CredentialsError, ProviderError
from cloudtrain.planning import plan
from cloudtrain.providers import vertex
from cloudtrain.providers.vertex import clients as vertex_clients
from cloudtrain.providers.vertex import logs as vertex_logs
from cloudtrain.providers.vertex.clients import ATTEMPTS
from tests.cloudtrain.providers.fakes.vertex_jobservice import FakeJobService
from tests.cloudtrain.providers.fakes.vertex_logging import FakeLogging
from tests.conftest import Result

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "binary_classifier" / "job.yaml"
PARENT = "projects/my-project/locations/us-central1"


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def job(fake_vertex: FakeJobService, sleeps: list[float]) -> vertex.VertexJob:
    """A job created directly in the fake service (no upload needed to read logs)."""
    body = vertex.render(
        plan(api.as_spec(EXAMPLE), "vertex").with_bundle("gs://my-bucket/code/0.tar.gz").with_run("r1")
    )
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


@pytest.fixture
def closed_port() -> str:
    """``127.0.0.1:PORT`` where nothing listens: bound, then closed."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


@pytest.mark.usefixtures("fake_logging")
def test_an_unreachable_logging_endpoint_is_retried_then_one_line(
    job: vertex.VertexJob, sleeps: list[float], closed_port: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # regression: a refused connection escaped as a requests traceback
    monkeypatch.setenv("CLOUDTRAIN_VERTEX_LOGGING_ENDPOINT", closed_port)
    with pytest.raises(ProviderError) as error:
        list(job.logs())
    assert str(error.value) == (
        f"Could not read the logs of job {number(job)}: no connection to "
        f"http://{closed_port}/v2/entries:list: Connection refused (ConnectionError). "
        f"Could not reach Cloud Logging in {ATTEMPTS} attempts; check the network, then try again."
    )
    assert sleeps == [1.0, 2.0, 4.0, 8.0]


@pytest.mark.usefixtures("fake_gcs", "fake_vertex")
def test_the_logs_command_of_an_unreachable_endpoint_prints_one_error_line(
    run_cli: Callable[..., Result],
    fake_logging: FakeLogging,
    closed_port: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    job_id = run_cli("submit", str(EXAMPLE), "--provider", "vertex").out.strip()
    monkeypatch.setenv("CLOUDTRAIN_VERTEX_LOGGING_ENDPOINT", closed_port)
    monkeypatch.setattr(vertex_clients, "ATTEMPTS", 2)  # the CLI waits with time.sleep: 1 s
    result = run_cli("logs", job_id)
    assert result.code == 1
    assert "Traceback" not in result.err
    assert result.errors == [
        f"Could not read the logs of job {job_id.rsplit('/', 1)[1]}: no connection to "
        f"http://{closed_port}/v2/entries:list: Connection refused (ConnectionError). "
        "Could not reach Cloud Logging in 2 attempts; check the network, then try again."
    ]
    assert fake_logging.requests == []


@pytest.mark.parametrize(
    ("fail", "waits"),
    [
        (lambda fake: fake.fail(429, times=2), [1.0, 2.0]),  # rate limited twice
        (lambda fake: fake.fail(503), [1.0]),  # unavailable once
        (lambda fake: fake.fail(500, times=2), [1.0, 2.0]),  # a server error
        (lambda fake: fake.hang_up(), [1.0]),  # the connection closed without an answer
    ],
    ids=["429", "503", "500", "hang-up"],
)
def test_transient_logging_failures_are_retried_with_backoff(
    fake_logging: FakeLogging,
    job: vertex.VertexJob,
    sleeps: list[float],
    fail: Callable[[FakeLogging], None],
    waits: list[float],
) -> None:
    fail(fake_logging)
    fake_logging.write("my-project", number(job), "workerpool0-0", "epoch 1/3")
    assert list(job.logs()) == ["[chief-0] epoch 1/3"]
    assert sleeps == waits


def test_a_server_error_every_time_is_retried_then_one_line(
    fake_logging: FakeLogging, job: vertex.VertexJob, sleeps: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vertex_clients, "ATTEMPTS", 3)
    fake_logging.fail(500, times=3)
    address = os.environ["CLOUDTRAIN_VERTEX_LOGGING_ENDPOINT"]
    with pytest.raises(ProviderError) as error:
        list(job.logs())
    assert str(error.value) == (
        f"Could not read the logs of job {number(job)}: POST http://{address}/v2/entries:list: "
        "injected HTTP 500 (InternalServerError). Cloud Logging failed with an internal error 3 times; "
        "try again later."
    )
    assert sleeps == [1.0, 2.0]
    assert len(fake_logging.requests) == 3


@pytest.mark.parametrize(
    ("status", "reason", "error", "fix"),
    [
        (403, "", ProviderError, "(Forbidden). Grant the caller roles/logging.viewer on project my-project."),
        (
            403,
            "SERVICE_DISABLED",
            ProviderError,
            "(Forbidden). Enable the API (it takes a few minutes): "
            "gcloud services enable logging.googleapis.com --project my-project",
        ),
        (401, "", CredentialsError, "$ gcloud auth application-default login"),
        (404, "", ProviderError, "(NotFound). Check vertex.project (my-project)."),
    ],
)
def test_permanent_logging_errors_fail_at_once_with_the_fix(
    fake_logging: FakeLogging,
    job: vertex.VertexJob,
    sleeps: list[float],
    status: int,
    reason: str,
    error: type[Exception],
    fix: str,
) -> None:
    fake_logging.fail(status, reason=reason)
    with pytest.raises(error) as raised:
        list(job.logs())
    assert str(raised.value).startswith(f"Could not read the logs of job {number(job)}: ")
    assert str(raised.value).endswith(fix)
    assert sleeps == []
