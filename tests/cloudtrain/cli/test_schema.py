"""``cloudtrain schema`` describes what users write, and jsonschema agrees with the spec's own checks.

Every example spec, the spec block of docs/job-spec.md and every corpus spec that only a plan can
reject (hardware offered, provider limits, strategy against hosts) validate against the
schema; the corpus specs whose problem the schema can express (unknown keys, wrong
types, enum values, bounds, bad durations and names) are rejected by it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
CORPUS = REPO / "tests" / "cloudtrain" / "spec_corpus"
EXAMPLES = sorted((REPO / "examples").glob("**/job.yaml"))

# Corpus cases jsonschema must reject, by what the schema expresses.
REJECTED = {
    "01_missing_name": "required",
    "02_name_uppercase": "name pattern",
    "03_name_too_long": "name pattern",
    "04_unknown_top_level_key": "additionalProperties",
    "05_missing_code": "required",
    "06_code_module_and_script": "code oneOf",
    "07_code_neither_module_nor_script": "code oneOf",
    "08_code_module_is_a_path": "module pattern",
    "09_code_unknown_key": "additionalProperties",
    "10_accelerator_close_match": "accelerator enum",
    "11_accelerator_unknown": "accelerator enum",
    "12_per_host_zero": "exclusiveMinimum",
    "15_hosts_negative": "exclusiveMinimum",
    "16_hosts_word": "type",
    "17_spot_not_boolean": "type",
    "18_disk_too_small": "minimum",
    "19_resources_unknown_key": "additionalProperties",
    "20_epochs_zero": "exclusiveMinimum",
    "21_epochs_word": "type",
    "22_strategy_typo": "enum",
    "28_backend_unknown": "enum",
    "29_mixed_precision_unknown": "enum",
    "30_learning_rate_zero": "exclusiveMinimum",
    "31_lr_scaling_typo": "enum",
    "32_warmup_negative": "minimum",
    "33_both_batches": "training not",
    "39_storage_root_missing": "required",
    "40_max_runtime_not_duration": "duration pattern",
    "43_max_cost_negative": "exclusiveMinimum",
    "49_sagemaker_role_malformed": "role pattern",
    "53_env_key_invalid": "propertyNames",
    "54_env_value_not_string_is_not_echoed": "type",
    "55_data_channel_name_invalid": "propertyNames",
    "58_input_mode_pipe": "enum",
    "59_max_wait_not_duration": "duration pattern",
    "60_several_problems": "name pattern",
    "62_top_level_list": "type object",
    "64_empty_file": "type object",
    "73_hosts_yaml_boolean": "type integer (JSON Schema: a boolean is no integer)",
    "74_learning_rate_yaml_boolean": "type number",
}
NOT_YAML = {"63_yaml_syntax_error"}  # jsonschema never sees it


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    from cloudtrain.spec import JobSpec

    schema = JobSpec.model_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _errors(validator: jsonschema.Draft202012Validator, document: Any) -> list[str]:
    return [error.message for error in validator.iter_errors(document)]


def documented_spec() -> Any:
    """The first YAML block of the documentation's "The job spec" page."""
    text = (REPO / "docs" / "job-spec.md").read_text()
    block = re.search(r"```yaml\n(.*?)```", text, re.DOTALL)
    assert block is not None
    return yaml.safe_load(block.group(1))


def test_the_cli_prints_the_schema(run_cli, validator: jsonschema.Draft202012Validator) -> None:
    assert json.loads(run_cli("schema").out) == validator.schema


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.parent.name for p in EXAMPLES])
def test_example_specs_validate(validator: jsonschema.Draft202012Validator, path: Path) -> None:
    assert _errors(validator, yaml.safe_load(path.read_text())) == []


def test_the_documented_spec_validates(validator: jsonschema.Draft202012Validator) -> None:
    spec = documented_spec()
    assert spec["limits"]["max_runtime"] == "24h"  # a duration as written, not seconds
    assert _errors(validator, spec) == []


CASES = sorted(p for p in CORPUS.glob("*.yaml") if p.stem not in NOT_YAML)


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_corpus_cases_are_rejected_exactly_when_the_schema_can_say_so(
    validator: jsonschema.Draft202012Validator, path: Path
) -> None:
    errors = _errors(validator, yaml.safe_load(path.read_text()))
    if path.stem in REJECTED:
        assert errors, f"the schema should reject {path.stem} ({REJECTED[path.stem]})"
    else:
        assert errors == [], "only a plan can reject this case"


@pytest.mark.parametrize(
    ("written", "valid"),
    [
        ("90m", True),
        ("24h", True),
        ("2d", True),
        ("1.5h", True),
        ("3600s", True),
        (3600, True),  # seconds
        ("3 weeks", False),
        ("soon", False),
        ("24 hours", False),
        (0, False),  # below the 1 s minimum
        (True, False),  # a boolean is not a duration
    ],
)
def test_durations_are_what_users_write(
    validator: jsonschema.Draft202012Validator, written: Any, valid: bool
) -> None:
    spec = {"name": "demo", "code": {"module": "trainer.task"}, "limits": {"max_runtime": written}}
    assert (_errors(validator, spec) == []) is valid


def test_every_field_has_a_description_and_examples(validator: jsonschema.Draft202012Validator) -> None:
    schema = validator.schema
    models = {"JobSpec": schema, **schema["$defs"]}
    missing = [
        f"{model}.{name}"
        for model, body in models.items()
        for name, field in body.get("properties", {}).items()
        if not (field.get("description") and field.get("examples"))
    ]
    assert missing == []
