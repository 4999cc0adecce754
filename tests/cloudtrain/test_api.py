"""The Python API's surface: every function that takes a spec takes a JobSpec or a path, alike.

A path is loaded as the CLI loads it (``load_spec``: paths next to the file, the code
checked), so ``f("job.yaml")`` and ``f(load_spec("job.yaml"))`` give the same answer.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import cloudtrain
from cloudtrain.planning import Plan
from cloudtrain.progress import Progress
from cloudtrain.provider import base, registry
from cloudtrain.providers.local import Local
from cloudtrain.spec import JobSpec
from cloudtrain.specfile import load_spec
from tests.conftest import EXAMPLE_JOB

# Each public function that takes a spec, called the way a pipeline would.
SPEC_FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "plan": lambda spec: cloudtrain.plan(spec, "vertex"),
    "estimate": lambda spec: cloudtrain.estimate(spec, throughput="100@t4"),
    "validate": lambda spec: cloudtrain.validate(spec, "sagemaker"),
    "render": lambda spec: cloudtrain.render(spec, "vertex"),
    "stage": lambda spec: cloudtrain.stage(spec, "local", run_id="r1").request,
}


# Public functions that take a JobSpec only, and why a path would make no sense there.
JOBSPEC_ONLY = {
    "with_defaults": "fills a spec built in Python with the defaults load_spec already gives a file",
}


@pytest.mark.parametrize("path", [str(EXAMPLE_JOB), EXAMPLE_JOB], ids=["str", "PathLike"])
@pytest.mark.parametrize("name", sorted(SPEC_FUNCTIONS))
def test_a_path_gives_what_the_loaded_spec_gives(name: str, path: str | Path) -> None:
    # regression: cloudtrain.estimate("job.yaml", ...) raised AttributeError
    call = SPEC_FUNCTIONS[name]
    assert call(path) == call(load_spec(EXAMPLE_JOB))


@pytest.mark.usefixtures("toycloud")
def test_submit_takes_a_path_and_sends_what_the_loaded_spec_sends() -> None:
    job = cloudtrain.submit(EXAMPLE_JOB, "toycloud")
    again = cloudtrain.submit(load_spec(EXAMPLE_JOB), "toycloud")
    assert job.request == again.request
    assert job.id == again.id  # the same request is the same job


@pytest.mark.parametrize("name", sorted(SPEC_FUNCTIONS))
def test_neither_a_spec_nor_a_path_is_a_spec_error(name: str) -> None:
    with pytest.raises(cloudtrain.SpecError) as raised:
        SPEC_FUNCTIONS[name]({"name": "demo", "code": {"module": "trainer.task"}})
    assert raised.value.problems == [
        "Expected a JobSpec or the path of a job spec. Received: dict. "
        "Pass cloudtrain.JobSpec(**data), or a path such as 'job.yaml'."
    ]


@pytest.mark.parametrize("name", sorted(SPEC_FUNCTIONS))
def test_a_missing_file_is_a_spec_error(name: str, tmp_path: Path) -> None:
    missing = tmp_path / "job.yaml"
    with pytest.raises(cloudtrain.SpecError) as raised:
        SPEC_FUNCTIONS[name](missing)
    assert raised.value.problems == [f"{missing}: no such file. Pass the path of a job spec, e.g. job.yaml."]


def test_plan_and_estimate_read_no_code_from_a_jobspec() -> None:
    """Planning and pricing never run the code, so a job is priced before its code exists."""
    spec = cloudtrain.JobSpec(
        name="demo",
        code={"module": "not_written_yet", "source_dir": "/nonexistent"},
        training={"examples_per_epoch": 1000},
    )
    assert cloudtrain.plan(spec, "local").replicas == 1
    assert cloudtrain.estimate(spec, throughput="100@t4")
    with pytest.raises(cloudtrain.SpecError):  # rendering packs the code, so it must be there
        cloudtrain.render(spec, "local")


class PlansThroughThePublicApi(Local):
    """A provider written as docs/adding-a-provider.md says: ``plan`` is ``cloudtrain.plan(spec, self.name)``."""

    name = "through-api"

    def plan(self, spec: JobSpec) -> Plan:
        return cloudtrain.plan(spec, self.name)


def test_a_provider_whose_plan_calls_the_public_plan_is_planned_once() -> None:
    # regression: cloudtrain.plan(spec, name) asked the provider's plan(), which asked cloudtrain.plan again
    provider = PlansThroughThePublicApi()
    registry.register(provider)
    try:
        spec = load_spec(EXAMPLE_JOB)
        assert cloudtrain.plan(spec, "through-api").provider == "through-api"
        assert cloudtrain.plan(spec, provider) == cloudtrain.plan(spec, "through-api")
    finally:
        registry.unregister(provider.name)


@pytest.mark.parametrize(
    ("name", "defined_in"),
    [
        ("Job", base.Job),  # the handle submit and attach return
        ("JobStatus", base.JobStatus),  # what Job.status() and Job.wait() return
        ("Progress", Progress),  # what a progress callback receives
    ],
)
def test_the_job_types_are_exported(name: str, defined_in: type) -> None:
    assert getattr(cloudtrain, name) is defined_in
    assert name in cloudtrain.__all__


def test_every_exported_function_that_takes_a_spec_is_tested_here() -> None:
    """A new public function taking a spec joins SPEC_FUNCTIONS (or the submit test)."""
    takes_spec = {
        name for name in cloudtrain.__all__ if _first_parameter(getattr(cloudtrain, name)) == "spec"
    }
    assert takes_spec - JOBSPEC_ONLY.keys() == {*SPEC_FUNCTIONS, "submit"}


def _first_parameter(value: object) -> str | None:
    if not inspect.isfunction(value):
        return None
    return next(iter(inspect.signature(value).parameters), None)


def test_list_jobs_is_public_and_reports_what_it_skipped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path))
    listing = cloudtrain.list_jobs()
    assert listing.jobs == []
    assert set(listing.skipped) == {"vertex", "sagemaker", "kubernetes"}  # nothing set up in a test
    assert cloudtrain.JobSummary is base.JobSummary


# regression: list_jobs() returned an object that was neither a list nor iterable
def test_list_jobs_is_the_sequence_of_its_jobs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path))
    runs = tmp_path / "runs"
    for stamp in ("20260101-120000-0a1b", "20260102-120000-0a1c"):
        (runs / f"demo-{stamp}").mkdir(parents=True)
    listing = cloudtrain.list_jobs("local")
    assert [job.id for job in listing] == [job.id for job in listing.jobs]
    assert len(listing) == 2 and listing[0] is listing.jobs[0] and listing[-1:] == listing.jobs[-1:]
    assert list(listing) == listing.jobs
