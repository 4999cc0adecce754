"""The registry: one list of providers that every other place reads."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from cloudtrain.errors import CloudtrainError, SpecError
from cloudtrain.provider import registry
from cloudtrain.providers import Provider, local, sagemaker, vertex
from cloudtrain.spec import JobSpec


@dataclass
class Minimal:
    """The smallest object that satisfies the protocol: a provider registered at run time."""

    name: str = "minimal"
    title: str = "Minimal"
    schemes: tuple[str, ...] = ("min://",)
    machine_catalog: bool = False
    billed: bool = False
    max_runtime_s: int | None = None
    max_runtime_field: str = ""
    unsupported: dict[str, str] = field(default_factory=dict)
    catalog_dir: None = None
    color: str = "#000000"

    def region(self, spec: JobSpec) -> str:
        return "nowhere"

    def storage_root(self, spec: JobSpec) -> str:
        return spec.storage.root

    def check(self, spec: JobSpec) -> list[str]:
        return []

    def plan(self, spec: JobSpec) -> Any:
        raise NotImplementedError

    def render(self, plan: Any) -> dict[str, Any]:
        return {}

    def submit(
        self, plan: Any, request: dict[str, Any], bundle: Any, *, clients: Any = None, progress: Any = None
    ) -> Any:
        raise NotImplementedError

    def attach(self, job_id: str, *, clients: Any = None) -> Any:
        raise NotImplementedError

    def owns(self, job_id: str) -> bool:
        return job_id.startswith("min:")


@pytest.fixture
def minimal() -> Iterator[Minimal]:
    provider = Minimal()
    registry.register(provider)
    yield provider
    registry.unregister(provider.name)


def test_built_ins_come_first_in_display_order() -> None:
    assert registry.names()[:3] == ("local", "vertex", "sagemaker")
    assert registry.get("vertex") is vertex.provider
    assert [p.name for p in registry.billed()][:2] == ["vertex", "sagemaker"]


def test_every_built_in_satisfies_the_protocol() -> None:
    for provider in (local.provider, vertex.provider, sagemaker.provider):
        assert isinstance(provider, Provider)


def test_an_unknown_name_is_a_spec_error_with_the_close_match() -> None:
    with pytest.raises(SpecError, match=r"Unknown provider 'vertx'\. Did you mean 'vertex'\?"):
        registry.get("vertx")


@pytest.mark.parametrize(
    ("job_id", "owner"),
    [
        ("local:demo-20260101-000000-abcd", "local"),  # a local run
        ("projects/p/locations/us-central1/customJobs/123", "vertex"),  # a Vertex resource name
        ("arn:aws:sagemaker:us-east-1:123456789012:training-job/demo-0123456789", "sagemaker"),  # an ARN
    ],
)
def test_for_job_finds_the_owner(job_id: str, owner: str) -> None:
    assert registry.for_job(job_id).name == owner


def test_for_job_names_the_choices_when_nobody_owns_the_id() -> None:
    with pytest.raises(CloudtrainError, match=r"Pass --provider \(local\|vertex\|sagemaker"):
        registry.for_job("job-42")


def test_a_registered_provider_is_listed_found_and_forgotten(minimal: Minimal) -> None:
    assert registry.names()[-1] == "minimal"
    assert registry.for_job("min:1") is minimal
    assert "min://" in registry.schemes()
    registry.unregister("minimal")
    assert "minimal" not in registry.names()


def test_the_spec_accepts_a_registered_providers_scheme_and_name(minimal: Minimal) -> None:
    spec = JobSpec(name="demo", provider="minimal", code={"module": "t"}, storage={"root": "min://bucket/x"})
    assert spec.storage.root == "min://bucket/x"


def test_the_spec_refuses_a_scheme_no_provider_reads() -> None:
    with pytest.raises(ValueError, match=r"uses an unsupported scheme; use gs://, s3:// or a local path"):
        JobSpec(name="demo", code={"module": "t"}, storage={"root": "min://bucket/x"})


@pytest.mark.parametrize(
    "job_id",
    [
        "projects/p/locations/us-central1/customJobs/123\n",  # regression: `$` accepted a trailing newline
        "arn:aws:sagemaker:us-east-1:123456789012:training-job/demo-0123456789\n",
        "projects/p/locations/us-central1/customJobs/١٢٣",  # non-ASCII digits
    ],
)
def test_no_provider_owns_an_id_with_a_trailing_newline_or_foreign_digits(job_id: str) -> None:
    assert [p.name for p in registry.providers() if p.owns(job_id)] == []
