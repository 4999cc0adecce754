"""``training.hang_timeout``: from the spec to the runtime's configuration, and its errors at the command line."""

from __future__ import annotations

from typing import Any

import pytest

from cloudtrain.api import plan
from cloudtrain.spec import JobSpec
from cloudtrain_runtime import config as runtime_config


def _runtime(**training: Any) -> runtime_config.RuntimeConfig:
    spec = JobSpec(name="demo", code={"module": "trainer.task"}, training=training)
    return plan(spec, "local").runtime


@pytest.mark.parametrize(
    ("written", "floor"),
    [
        (5, 5),  # seconds
        ("2m", 120),  # a duration
        ("off", "off"),  # never
        (False, "off"),  # a bare `off` in YAML reads as false
    ],
)
def test_the_spec_value_reaches_the_runtime(written: Any, floor: Any) -> None:
    config = _runtime(hang_timeout=written)
    assert config.hang_timeout == floor
    assert runtime_config.from_dict(runtime_config.as_dict(config), "test").hang_timeout == floor


def test_the_default_travels_as_before_it_existed() -> None:
    config = _runtime()
    assert config.hang_timeout == runtime_config.HANG_TIMEOUT_DEFAULT == 60
    assert "hang_timeout" not in runtime_config.as_dict(config)


@pytest.mark.parametrize(
    ("bad", "shown"),
    [
        ("soon", "'soon'"),  # no duration
        ("0", "0"),  # under a second
        ("-3", "-3"),
        ("true", "True"),  # on is the default; a floor is a duration
    ],
)
def test_a_bad_value_names_the_field_and_exits_2(run_cli, example_job, bad: str, shown: str) -> None:
    result = run_cli("validate", str(example_job), "--set", f"training.hang_timeout={bad}")
    assert result.code == 2
    assert result.errors == [
        f"training.hang_timeout: must be a duration like 60s or 5m, or off. Received: training.hang_timeout={shown}."
    ]


def test_the_runtime_refuses_a_bad_floor_by_name() -> None:
    values = {**runtime_config.as_dict(_runtime()), "hang_timeout": 0}
    with pytest.raises(runtime_config.ConfigError) as raised:
        runtime_config.from_dict(values, "test")
    assert "'hang_timeout' must be a whole number of seconds from 1 to 2147483647, or 'off'" in str(
        raised.value
    )
