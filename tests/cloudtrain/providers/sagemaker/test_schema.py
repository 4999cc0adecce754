"""catalog/sagemaker_request.csv is botocore's CreateTrainingJob model, and render applies it."""

from __future__ import annotations

import csv
import doctest
import importlib
import re

import pytest

from cloudtrain import catalog
from cloudtrain.errors import SpecError
from cloudtrain.planning import plan
from cloudtrain.providers.sagemaker import generate_schema, schema
from cloudtrain.spec import JobSpec

pytest.importorskip("botocore")
rendering = importlib.import_module("cloudtrain.providers.sagemaker.render")

BASE = {
    "name": "schema-job",
    "code": {"module": "trainer.task"},
    "storage": {"root": "s3://corpus-bucket/job"},
    "sagemaker": {"role": "arn:aws:iam::123456789012:role/Training"},
}


def test_the_catalog_file_matches_the_installed_botocore_model() -> None:
    # Regenerate with: python -m cloudtrain.providers.sagemaker.generate_schema
    with (catalog.HERE / schema.CATALOG_FILE).open(newline="") as file:
        shipped = list(csv.DictReader(file))
    generated = generate_schema.generate()

    def without_source(rows: list[dict[str, str]]) -> list[dict[str, str]]:
        return [{k: v for k, v in row.items() if k != "source"} for row in rows]

    assert without_source(shipped) == without_source(generated)


def test_every_member_the_render_writes_has_its_constraints() -> None:
    spec = JobSpec.model_validate(
        {
            **BASE,
            "env": {"A": "1"},
            "data": {"train": "s3://corpus-bucket/train"},
            "resources": {"spot": True},
        }
        | {
            "sagemaker": {
                **BASE["sagemaker"],
                "subnets": ["subnet-0a"],
                "security_groups": ["sg-0a"],
                "max_retries": 1,
            }
        }
    )
    request = rendering.render(
        plan(spec, "sagemaker").with_bundle("s3://corpus-bucket/job/code/0123.tar.gz").with_run("r1")
    )
    paths = {path for path, _, _ in schema._members(request, "")}
    structures = {path for path in paths if not any(row.startswith(path) for row in schema.constraints())}
    assert structures == set(), "members the catalog file has no row for"


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        (r"[\p{L}\p{Z}\p{N}_.:/=+\-@]*", "Équipe 2 été", True),  # letters, numbers, a space
        (r"[\p{L}\p{Z}\p{N}_.:/=+\-@]*", "tab\there", False),  # a tab is no separator (Python's \s is wider)
        (r"[\p{L}\p{Z}\p{N}_.:/=+\-@]*", "a!b", False),  # punctuation outside the list
        (r"[\p{L}\p{Z}\p{N}_.:/=+\-@]*", "team\u3000a", True),  # an ideographic space is a separator
        (r".*", "one\ntwo", False),  # ECMA-262: '.' stops at a line end
        (r".*", "one two", True),
        (r"\d{12}", "١٢٣٤٥٦٧٨٩٠١٢", False),  # ECMA-262: \d is ASCII, Python's is any digit
        (r"\d{12}", "123456789012", True),
        (r"arn:[\p{Alnum}\-]+:x", "arn:aws-cn:x", True),  # Java's ASCII \p{Alnum}
        (r"[\S\s]*", "any\nthing", True),
    ],
)
def test_model_patterns_read_as_the_service_reads_them(pattern: str, text: str, matches: bool) -> None:
    assert bool(re.fullmatch(generate_schema.python_pattern(pattern), text)) is matches


def test_a_class_of_letters_alone_is_not_guessed() -> None:
    with pytest.raises(ValueError, match="letters and numbers apart"):
        generate_schema.python_pattern(r"[\p{L}]+")


@pytest.mark.parametrize(
    ("sagemaker", "image", "line"),
    [
        # regression: each of these validated, rendered, and was refused by SageMaker
        (
            {"tags": {"team": "x" * 300}},
            None,
            "sagemaker.tags: the value of the tag 'team' has 300 characters; SageMaker takes at most 256 "
            "(CreateTrainingJob Tags[].Value).",
        ),
        (
            {"tags": {"": "x"}},
            None,
            "sagemaker.tags: the tag key '' has 0 characters; SageMaker takes 1 to 128 (CreateTrainingJob Tags[].Key).",
        ),
        (
            {"tags": {"team": "a!"}},
            None,
            "sagemaker.tags: the value of the tag 'team' does not match SageMaker's pattern "
            r"([\p{L}\p{Z}\p{N}_.:/=+\-@]*) (CreateTrainingJob Tags[].Value).",
        ),
        (
            {"subnets": ["subnet_1!"], "security_groups": ["sg-1"]},
            None,
            "sagemaker.subnets: item 0 does not match SageMaker's pattern [-0-9a-zA-Z]+ "
            "(CreateTrainingJob VpcConfig.Subnets[]).",
        ),
        (
            {"subnets": ["subnet-1"], "security_groups": ["sg-" + "0" * 40]},
            None,
            "sagemaker.security_groups: item 0 has 43 characters; SageMaker takes at most 32 "
            "(CreateTrainingJob VpcConfig.SecurityGroupIds[]).",
        ),
        (
            {},
            "registry.example.com/" + "x" * 240,
            "image: the TrainingImage has 261 characters; SageMaker takes at most 255 "
            "(CreateTrainingJob AlgorithmSpecification.TrainingImage).",
        ),
    ],
)
def test_render_refuses_what_the_model_refuses_naming_the_field(
    sagemaker: dict[str, object], image: str | None, line: str
) -> None:
    data = {**BASE, "sagemaker": {**BASE["sagemaker"], **sagemaker}} | ({"image": image} if image else {})
    planned = (
        plan(JobSpec.model_validate(data), "sagemaker")
        .with_bundle("s3://corpus-bucket/job/code/0.tar.gz")
        .with_run("r1")
    )
    with pytest.raises(SpecError) as error:
        rendering.render(planned)
    assert error.value.problems == [line]


def test_values_are_never_quoted() -> None:
    problems = schema.problems({"Environment": {"TOKEN_ISH": "s" * 600}}, fields=rendering.SPEC_FIELDS)
    assert problems == [
        "env: the value of 'TOKEN_ISH' has 600 characters; SageMaker takes at most 512 (CreateTrainingJob Environment{})."
    ]


def test_doctests() -> None:
    assert doctest.testmod(schema).failed == 0


def test_generator_doctests() -> None:
    assert doctest.testmod(generate_schema).failed == 0
