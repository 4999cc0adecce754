"""``logs --since/--tail`` on Vertex: the bound goes into Cloud Logging's filter (the fake honours it)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from cloudtrain.providers import vertex
from tests.cloudtrain.providers.fakes.vertex_logging import FakeLogging
from tests.cloudtrain.providers.vertex.test_logs import job, number, sleeps
from tests.conftest import Result

__all__ = ["job", "sleeps"]  # fixtures shared with test_logs

# FakeLogging.write stamps its n-th entry 2026-12-02T10:00:00.00n000Z.
SECOND_ENTRY = datetime(2026, 12, 2, 10, 0, 0, 2000, tzinfo=UTC)


def write_three(fake_logging: FakeLogging, job: vertex.VertexJob) -> None:
    for step in (1, 2, 3):
        fake_logging.write("my-project", number(job), "workerpool0-0", f"step {step}")


def test_since_is_the_filters_lower_timestamp_bound(fake_logging: FakeLogging, job: vertex.VertexJob) -> None:
    write_three(fake_logging, job)
    assert list(job.logs(since=SECOND_ENTRY)) == ["[chief-0] step 2", "[chief-0] step 3"]
    assert fake_logging.requests[-1]["filter"].endswith('timestamp>="2026-12-02T10:00:00.002000Z"')


def test_since_before_the_job_was_created_keeps_the_creation_bound(
    fake_logging: FakeLogging, job: vertex.VertexJob
) -> None:
    list(job.logs())
    list(job.logs(since=datetime(1960, 1, 1, tzinfo=UTC)))
    without, with_since = (request["filter"] for request in fake_logging.requests)
    assert with_since == without  # Cloud Logging reads only the last 24 h without a bound


def test_tail_keeps_the_last_lines(fake_logging: FakeLogging, job: vertex.VertexJob) -> None:
    write_three(fake_logging, job)
    assert list(job.logs(tail=2)) == ["[chief-0] step 2", "[chief-0] step 3"]
    assert list(job.logs(tail=0)) == []


def test_the_cli_passes_both(
    fake_logging: FakeLogging, job: vertex.VertexJob, run_cli: Callable[..., Result]
) -> None:
    write_three(fake_logging, job)
    result = run_cli("logs", job.id, "--since", "2026-12-02T10:00:00.002Z", "--tail", "1")
    assert (result.code, result.out) == (0, "[chief-0] step 3\n")
