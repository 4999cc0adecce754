"""``resources.capacity``: the mode alone or with options, ``spot: true`` as its synonym, and the pending limit."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from cloudtrain.capacity import DEFAULT_MAX_PENDING_S, Capacity
from cloudtrain.errors import SpecError
from cloudtrain.spec import JobSpec


def spec(**resources: Any) -> JobSpec:
    return JobSpec(name="demo", code={"module": "trainer.task"}, resources=resources)


@pytest.mark.parametrize(
    ("resources", "mode", "spot"),
    [
        ({}, "on_demand", False),  # the default
        ({"spot": True}, "spot", True),  # the synonym
        ({"capacity": "spot"}, "spot", True),  # and the other way round: spot reads true
        ({"capacity": "flex"}, "flex", False),  # the mode alone
        ({"capacity": {"mode": "flex", "max_wait": "6h"}}, "flex", False),  # with its option
        ({"spot": False, "capacity": "flex"}, "flex", False),  # no conflict: flex is not spot
        ({"spot": "true"}, "spot", True),  # --set resources.spot=true, as pydantic reads a bool
    ],
)
def test_spot_and_capacity_always_agree(resources: dict[str, Any], mode: str, spot: bool) -> None:
    read = spec(**resources).resources
    assert (read.capacity.mode, read.spot) == (mode, spot)


def test_a_spec_dumped_and_read_again_is_the_same() -> None:
    # regression guard: the synonym is written back as spot: false beside capacity: flex
    first = spec(capacity={"mode": "flex", "max_wait": 0})
    assert JobSpec.model_validate(first.model_dump()) == first


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        ({"spot": True, "capacity": "flex"}, "spot: true and capacity: flex ask for two capacity modes"),
        ({"spot": False, "capacity": "spot"}, "spot: false and capacity: spot ask for two capacity modes"),
        ({"capacity": "flexx"}, "resources.capacity.mode: 'flexx' is not valid. Did you mean 'flex'?"),
        (
            {"capacity": {"mode": "spot", "max_wait": "2h"}},
            "max_wait applies to capacity mode flex, not 'spot'",
        ),
        ({"capacity": {"mode": "flex", "name": "a"}}, "name applies to capacity mode reservation or queue"),
        ({"capacity": "reservation"}, "capacity mode reservation needs name"),
        (
            {"capacity": {"mode": "plan", "arn": "\0"}},
            "resources.capacity.arn: must not contain control characters",
        ),
        ({"capacity": {"mode": "flex", "max_wait": "0.5s"}}, "must be 0 (wait for ever) or at least 1s"),
        (
            {"capacity": {"shapes": ["a", "b", "c", "d", "e"]}},
            "resources.capacity.shapes",
        ),  # at most 4 fallbacks
        ({"capacity": 7}, "resources.capacity"),  # neither a mode nor a mapping
    ],
)
def test_a_bad_capacity_names_the_field_and_the_fix(resources: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError) as refused:
        spec(**resources)
    assert message in str(refused.value)


@pytest.mark.parametrize(
    ("limits", "capacity", "expected"),
    [
        ({}, "on_demand", DEFAULT_MAX_PENDING_S),  # 10m
        ({}, "spot", DEFAULT_MAX_PENDING_S),
        ({}, {"mode": "flex", "max_wait": "6h"}, 6 * 3600),  # the wait flex is made for
        ({}, "flex", 0),  # the provider's own max wait ends it: cloudtrain waits for ever
        ({}, {"mode": "queue", "name": "team-a"}, 0),  # a queue holds jobs: for ever
        ({"max_pending": "30m"}, {"mode": "queue", "name": "team-a"}, 1800),  # given: it wins
        ({"max_pending": 0}, "on_demand", 0),  # 0: for ever
    ],
)
def test_max_pending_is_one_setting_with_a_default_per_mode(
    limits: dict[str, Any], capacity: Any, expected: int
) -> None:
    job = JobSpec(
        name="demo", code={"module": "trainer.task"}, resources={"capacity": capacity}, limits=limits
    )
    assert job.max_pending_s == expected


def test_the_json_schema_takes_the_mode_alone_and_the_mapping() -> None:
    validator = jsonschema.Draft202012Validator(JobSpec.model_json_schema())
    base = {"name": "demo", "code": {"module": "trainer.task"}}
    for capacity in ("flex", {"mode": "plan", "arn": "x"}, {"shapes": ["ml.g6.12xlarge"]}):
        assert list(validator.iter_errors({**base, "resources": {"capacity": capacity}})) == []
    assert list(validator.iter_errors({**base, "resources": {"capacity": "later"}}))


def test_capacity_of_takes_what_users_write() -> None:
    assert Capacity.of("queue").mode == "queue"
    assert Capacity.of(Capacity(mode="spot")).mode == "spot"
