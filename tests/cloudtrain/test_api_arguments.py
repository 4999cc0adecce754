"""Every public function of ``cloudtrain`` refuses an argument of the wrong type with SpecError.

Regression of issue 40: ``cloudtrain.stage("job.yaml", "local", run_id=123)`` (any run id
that is not a string) raised a bare TypeError from planning, and other arguments gave
AttributeErrors. Each row gives one function one wrong argument; the meta-test keeps the
table covering every parameter, so a new one cannot go unchecked.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import cloudtrain
from cloudtrain.errors import SpecError

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "binary_classifier" / "job.yaml")
SPEC = cloudtrain.JobSpec(name="demo", code={"module": "trainer.task"})


class NeverStarts:
    """A job that waits for ever: had ``wait_to_start`` not refused an argument, it would cancel it."""

    def status(self) -> Any:
        raise AssertionError("a wrong argument must be refused before the job is read")

    wait = cancel = status


JOB = NeverStarts()
# Parameters that take any object (a provider's clients, as each provider defines them).
ANY = {"clients"}
# Wrong values of each kind: the types Python would let through to a TypeError deep inside.
NOT_TEXT = (123, 1.5, b"local", ["local"], None)
NOT_FLAG = ("no", 1, None)

# function -> parameter -> (the positional arguments before it, wrong values)
WRONG: dict[str, dict[str, tuple[tuple[Any, ...], tuple[Any, ...]]]] = {
    "plan": {"spec": ((), (5, None, b"job.yaml")), "provider": ((EXAMPLE,), (5, ["local"], b"local"))},
    "validate": {"spec": ((), (5, None)), "provider": ((EXAMPLE,), (5, ["vertex"]))},
    "render": {"spec": ((), (5,)), "provider": ((EXAMPLE,), (5, object()))},
    "stage": {
        "spec": ((), (5,)),
        "provider": ((EXAMPLE,), (5,)),
        "run_id": ((EXAMPLE, "local"), (123, 1.5, b"r1", ["r1"])),  # the issue's case: run_id=123
        "progress": ((EXAMPLE, "local"), (5, "print")),
    },
    "submit": {
        "spec": ((), (5,)),
        "provider": ((EXAMPLE,), (5,)),
        "run_id": ((EXAMPLE, "local"), (123, 1.5)),
        "throughput": ((EXAMPLE, "local"), (5, 1.5, ["10@t4"])),  # not billed here: read by no one
        "force": ((EXAMPLE, "vertex"), NOT_FLAG),
        "strict_budget": ((EXAMPLE, "vertex"), NOT_FLAG),
        "progress": ((EXAMPLE, "local"), (5,)),
    },
    "estimate": {
        "spec": ((), (5,)),
        "throughput": ((SPEC,), (5, None, ["10@t4"])),
        "scope": ((SPEC,), ()),  # **scope: its keys, in SCOPE below
    },
    "attach": {"job_id": ((), (5, None, b"local:x")), "provider": (("local:x",), (5, ["local"]))},
    "training_progress": {"job_id": ((), (5, None, b"local:x")), "provider": (("local:x",), (5, ["local"]))},
    "list_jobs": {
        "provider": ((), (5, ["local"])),
        "limit": (("local",), ("3", -1, 1.5, True)),
        "settings": (("local",), (5, "job.yaml")),
    },
    "load_spec": {
        "path": ((), (5, None, ["job.yaml"])),
        "overrides": ((EXAMPLE,), ("training.epochs=5", [5], None)),
        "profile": ((EXAMPLE,), (5, ["work"])),
        "environ": ((EXAMPLE,), (5, ["HOME=/"])),
        "check_code": ((EXAMPLE,), ("no", None)),
        "provider": ((EXAMPLE,), (5, ["local"])),
    },
    "with_defaults": {
        "spec": ((), (EXAMPLE, 5, {"name": "demo"})),
        "profile": ((SPEC,), (5,)),
        "environ": ((SPEC,), (5,)),
        "provider": ((SPEC,), (5,)),
    },
    "compare": {
        "runs": ((), ()),  # *runs: in RUNS below
        "target": (("a", "b"), (5, 0.95)),
        "metric": (("a", "b"), (5,)),
        "settings": (("a", "b"), (5, "job.yaml")),
        "spec": (("a", "b"), (5, ["job.yaml"])),
        "provider": (("a", "b"), (5,)),
    },
    "wait_to_start": {
        "job": ((), (5, "local:x", None)),
        "limit_s": ((JOB,), ("10m", -1, 1.5, None)),
        "poll_s": ((JOB,), (-1.0, "10", True, None)),
        "on_status": ((JOB,), (5, "print")),
        "clock": ((JOB,), (None, 5.0)),
    },
}
# What a function needs besides the argument under test.
REQUIRED = {"estimate": {"throughput": "10@t4"}, "wait_to_start": {"limit_s": 60}}
# The keywords of estimate's **scope, and compare's *runs, given wrongly.
SCOPE = [{"providers": "vertex"}, {"regions": "us-central1"}, {"settings": 5}, {"provider": ["vertex"]}]
RUNS = [(5, "b"), ("a", None), ("a", b"b")]


def _functions() -> dict[str, Callable[..., Any]]:
    return {
        name: getattr(cloudtrain, name)
        for name in cloudtrain.__all__
        if inspect.isfunction(getattr(cloudtrain, name))
    }


def _keyword(function: Callable[..., Any], name: str) -> bool:
    return inspect.signature(function).parameters[name].kind is inspect.Parameter.KEYWORD_ONLY


def test_the_table_covers_every_parameter_of_every_public_function() -> None:
    for name, function in _functions().items():
        parameters = set(inspect.signature(function).parameters) - ANY
        assert set(WRONG.get(name, {})) == parameters, name


ROWS = [
    pytest.param(function, parameter, before, value, id=f"{function}.{parameter}={value!r:.20}")
    for function, parameters in WRONG.items()
    for parameter, (before, values) in parameters.items()
    for value in values
]


@pytest.mark.parametrize(("function", "parameter", "before", "value"), ROWS)
def test_a_wrong_type_is_a_spec_error_naming_the_argument(
    function: str, parameter: str, before: tuple[Any, ...], value: Any
) -> None:
    call = _functions()[function]
    kwargs = {key: given for key, given in REQUIRED.get(function, {}).items() if key != parameter}
    if _keyword(call, parameter):
        args, kwargs = before, {**kwargs, parameter: value}
    else:
        args = (*before, value)
    with pytest.raises(SpecError) as refused:
        call(*args, **kwargs)
    assert refused.value.exit_code == 2
    assert "\n" not in str(refused.value) and len(str(refused.value)) < 300


@pytest.mark.parametrize("scope", SCOPE)
def test_estimates_scope_is_checked_too(scope: dict[str, Any]) -> None:
    with pytest.raises(SpecError) as refused:
        cloudtrain.estimate(SPEC, throughput="10@t4", **scope)
    assert repr(next(iter(scope)))[1:-1] in str(refused.value)


@pytest.mark.parametrize("runs", RUNS)
def test_each_run_compare_is_given_is_checked(runs: tuple[Any, ...]) -> None:
    with pytest.raises(SpecError, match=r"^runs\[[01]\] must be a string or a RunRecord"):
        cloudtrain.compare(*runs)


def test_the_issues_case_reads_as_the_fix() -> None:
    with pytest.raises(SpecError) as refused:
        cloudtrain.stage(EXAMPLE, "local", run_id=123)  # type: ignore[arg-type]
    assert str(refused.value) == "run_id must be a string. Received: int 123."


def test_right_types_still_pass(tmp_path: Path) -> None:
    # guards the table: each check lets the types the annotations name through
    from cloudtrain.providers.local import Local

    assert cloudtrain.plan(SPEC, Local()).provider == "local"
    assert cloudtrain.plan(Path(EXAMPLE), "local").provider == "local"
    assert cloudtrain.load_spec(Path(EXAMPLE), ("training.epochs=2",), environ={}).training.epochs == 2
    assert cloudtrain.with_defaults(SPEC, environ={"HOME": str(tmp_path)}, provider="local").name == "demo"
    assert cloudtrain.list_jobs("local", limit=0, settings=SPEC).jobs == []
