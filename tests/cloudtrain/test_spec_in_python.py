"""A spec built in Python fails as a spec read from YAML does: a cloudtrain error, the same messages.

``JobSpec(...)`` and every section built alone (``Resources(...)``) raise
``SpecValidationError``, a SpecError (and a ValueError, as pydantic's error was), worded by
the one translation ``load_spec`` uses; ``model_validate`` keeps pydantic's own error for
the code inside cloudtrain that catches it.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

import cloudtrain
from cloudtrain.errors import SpecError, SpecValidationError
from cloudtrain.providers.sagemaker.settings import SageMakerSettings
from cloudtrain.providers.vertex.settings import VertexSettings
from cloudtrain.spec import (
    Code,
    JobSpec,
    LearningRate,
    Limits,
    Resources,
    Storage,
    Training,
)
from cloudtrain.specfile import parse_spec

CODE = {"module": "trainer.task"}


@pytest.mark.parametrize(
    ("fields", "problems"),
    [
        (  # regression: raised pydantic's ValidationError, not a cloudtrain error
            {"name": "Bad_Name"},
            [
                "name: 'Bad_Name' is not a valid job name; use 2-63 lowercase letters, digits and '-', "
                "starting with a letter."
            ],
        ),
        (  # a misspelt key: the field it meant is missing, and the key is unknown
            {"nmae": "demo"},
            ["name is required. Add name: my-job to the spec.", "nmae: unknown field. Did you mean 'name'?"],
        ),
        (  # an unknown key inside a section
            {"name": "demo", "resources": {"hots": 2}},
            ["resources.hots: unknown field. Did you mean 'hosts'?"],
        ),
        (  # a wrong type
            {"name": "demo", "resources": {"hosts": "many"}},
            ["resources.hosts must be a whole number. Received: resources.hosts='many'."],
        ),
        (  # a section that is not a mapping
            {"name": "demo", "training": 5},
            ["training must be a mapping (key: value lines). Received: training=5."],
        ),
        (  # a choice, with the close match
            {"name": "demo", "training": {"strategy": "mirored"}},
            ["training.strategy: 'mirored' is not valid. Did you mean 'mirrored'?"],
        ),
        (  # several problems at once, each on its line
            {"name": "demo", "resources": {"hosts": 0, "spot": "maybe"}},
            [
                "resources.hosts must be > 0. Received: resources.hosts=0.",
                "resources.spot must be true or false. Received: resources.spot='maybe'.",
            ],
        ),
    ],
)
def test_a_bad_jobspec_raises_the_yaml_loaders_messages(fields: dict[str, Any], problems: list[str]) -> None:
    data = {"code": CODE, **fields}
    with pytest.raises(SpecValidationError) as built:
        JobSpec(**data)
    with pytest.raises(SpecValidationError) as loaded:
        parse_spec(data)
    assert built.value.problems == problems
    assert loaded.value.problems == problems


def test_the_error_is_a_cloudtrain_error_with_the_spec_exit_code_and_a_value_error() -> None:
    with pytest.raises(cloudtrain.CloudtrainError) as raised:
        cloudtrain.JobSpec(name="Bad_Name", code=CODE)
    assert isinstance(raised.value, cloudtrain.SpecError)
    assert isinstance(raised.value, ValueError)  # what code that caught pydantic's error expects
    assert raised.value.exit_code == 2
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


@pytest.mark.parametrize(
    ("section", "fields", "problem"),
    [
        (Resources, {"hosts": 0}, "resources.hosts must be > 0. Received: resources.hosts=0."),
        (
            Resources,
            {"accelerator": "h100"},
            "resources.accelerator: unknown accelerator 'h100'. Did you mean 'h100-80gb'?",
        ),
        (
            Code,
            {},
            "code: set exactly one of code.module (e.g. trainer.task) or code.script (e.g. train.py).",
        ),
        (
            Training,
            {"epochs": "ten"},
            "training.epochs must be a whole number. Received: training.epochs='ten'.",
        ),
        (  # two levels down: the path is the whole spec's
            LearningRate,
            {"scaling": "lin"},
            "training.learning_rate.scaling: 'lin' is not valid. Did you mean 'linear'?",
        ),
        (Storage, {}, "storage.root is required. Add storage: {root: gs://BUCKET/path} to the spec."),
        (Limits, {"max_runtim": "2h"}, "limits.max_runtim: unknown field. Did you mean 'max_runtime'?"),
        (
            VertexSettings,
            {"region": "us_central1"},
            "vertex.region: 'us_central1' is not a Google Cloud region; use a region like us-central1.",
        ),
        (
            SageMakerSettings,
            {"role": "Training"},
            "sagemaker.role: 'Training' is not an IAM role ARN; use arn:aws:iam::123456789012:role/NAME.",
        ),
    ],
)
def test_a_section_built_alone_names_its_path_in_the_spec(
    section: type[BaseModel], fields: dict[str, Any], problem: str
) -> None:
    with pytest.raises(SpecError) as raised:
        section(**fields)
    assert raised.value.problems == [problem]


def test_sections_built_alone_make_a_spec() -> None:
    spec = JobSpec(name="demo", code=Code(module="trainer.task"), resources=Resources(hosts=2))
    assert (spec.code.module, spec.resources.hosts) == ("trainer.task", 2)


def test_model_validate_keeps_pydantics_error_for_nested_data() -> None:
    """Only a direct ``Section(...)`` call is translated; validation inside pydantic is not.

    If pydantic called the sections' own ``__init__`` for nested data, each section would
    fail as one ``value_error`` at its own location instead of its fields' errors.
    """
    with pytest.raises(ValidationError) as raised:
        JobSpec.model_validate({"name": "demo", "code": {}, "resources": {"hosts": 0}})
    assert [(error["loc"], error["type"]) for error in raised.value.errors()] == [
        (("code",), "code_entry"),
        (("resources", "hosts"), "greater_than"),
    ]


def test_a_secret_refused_in_python_is_never_shown() -> None:
    value = "postgres://admin:" + "hunter2@db/app"
    with pytest.raises(SpecError) as raised:
        JobSpec(name="demo", code=CODE, env={"DATABASE_URL": value})
    assert "hunter2" not in str(raised.value)
    assert "hunter2" not in repr(raised.value)
