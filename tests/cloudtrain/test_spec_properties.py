"""Any text as a spec, and any ``--set`` override, ends in a ``JobSpec`` or a ``SpecError``, nothing else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cloudtrain.errors import SpecError
from cloudtrain.specfile import _parse_yaml, parse_spec

BASE = {"name": "prop-job", "code": {"module": "trainer.task"}}
FIELDS = st.sampled_from(
    [
        "name",
        "image",
        "resources.hosts",
        "resources.per_host",
        "resources.spot",
        "training.epochs",
        "training.global_batch",
        "training.learning_rate.base",
        "training.learning_rate.warmup_epochs",
        "limits.max_runtime",
        "limits.max_cost_usd",
        "storage.root",
        "vertex.region",
        "vertex.project",
        "sagemaker.region",
        "env.X",
        "code",
        "nope.deeper",
    ]
)
SCALARS = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        [".inf", ".nan", "yes", "~", "[1, 2]", "{a: 1}", "*x", "!!int z", "9" * 30, "1e400", "-1"]
    ),
    st.integers().map(str),
    st.floats().map(str),
)
SETTINGS = settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.too_slow])


def _outcome(text: str, overrides: list[str] | None = None) -> Any:
    """The spec ``text`` (BASE when empty) with ``overrides``: a JobSpec or the SpecError."""
    try:
        data = _parse_yaml(text, Path("job.yaml")) if text else dict(BASE)
        return parse_spec(data, overrides or [])
    except SpecError as error:
        return error


@SETTINGS
@given(st.text(max_size=200))
def test_any_text_is_a_spec_or_a_spec_error(text: str) -> None:
    _outcome(text)


@SETTINGS
@given(st.lists(st.tuples(FIELDS, SCALARS), max_size=4))
def test_any_yaml_values_are_a_spec_or_a_spec_error(pairs: list[tuple[str, str]]) -> None:
    lines = "".join(
        f"{field.split('.')[0]}: {{{field.partition('.')[2] or 'x'}: {value!r}}}\n" for field, value in pairs
    )
    _outcome(lines)


@SETTINGS
@given(
    st.lists(st.tuples(FIELDS | st.text(max_size=10), SCALARS).map(lambda kv: f"{kv[0]}={kv[1]}"), max_size=4)
)
def test_any_overrides_are_a_spec_or_a_spec_error(overrides: list[str]) -> None:
    _outcome("", overrides)


@SETTINGS
@given(st.lists(st.text(max_size=30), max_size=4))
def test_any_override_text_is_a_spec_or_a_spec_error(overrides: list[str]) -> None:
    _outcome("", overrides)
