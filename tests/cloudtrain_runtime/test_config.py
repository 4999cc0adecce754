"""The runtime's own config parser agrees with the SDK's RuntimeConfig and finds its sources."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cloudtrain.container import runtime_config_json
from cloudtrain.planning import plan
from cloudtrain.spec import RuntimeConfig as SdkRuntimeConfig
from cloudtrain.specfile import load_spec
from cloudtrain_runtime import config
from cloudtrain_runtime.errors import ConfigError
from tests.cloudtrain_runtime.harness import runtime_config

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "binary_classifier" / "job.yaml"


def test_field_names_equal_the_sdk_runtime_config() -> None:
    runtime_fields = {field.name for field in dataclasses.fields(config.RuntimeConfig)}
    assert runtime_fields == set(SdkRuntimeConfig.model_fields)


@pytest.mark.parametrize("provider", ["local", "vertex", "sagemaker"])
def test_parses_what_the_sdk_renders(provider: str) -> None:
    rendered = runtime_config_json(plan(load_spec(EXAMPLE), provider))
    parsed = config.parse(rendered, "CLOUDTRAIN_CONFIG")
    assert parsed.global_batch == 32
    assert parsed.module == "trainer.task"
    assert parsed.args == ()


def test_config_file_wins_over_environment(tmp_path: Path) -> None:
    file = tmp_path / "c.json"
    file.write_text(json.dumps(runtime_config(tmp_path, name="from-file")))
    env = {"CLOUDTRAIN_CONFIG": json.dumps(runtime_config(tmp_path, name="from-env"))}
    assert config.load(str(file), env, "/").name == "from-file"
    assert config.load(None, env, "/").name == "from-env"


def test_sagemaker_hyperparameter_is_the_last_source(tmp_path: Path) -> None:
    hyperparameters = tmp_path / "opt/ml/input/config/hyperparameters.json"
    hyperparameters.parent.mkdir(parents=True)
    value = json.dumps(runtime_config(tmp_path, name="from-hp"))
    hyperparameters.write_text(json.dumps({"cloudtrain_config": value, "other": "1"}))
    assert config.load(None, {}, str(tmp_path)).name == "from-hp"


def test_sagemaker_hyperparameter_pieces_are_joined_in_numeric_order(tmp_path: Path) -> None:
    hyperparameters = tmp_path / "opt/ml/input/config/hyperparameters.json"
    hyperparameters.parent.mkdir(parents=True)
    value = json.dumps(runtime_config(tmp_path, name="from-pieces"))
    pieces = {f"cloudtrain_config_{i}": value[i * 20 : (i + 1) * 20] for i in range(len(value) // 20 + 1)}
    hyperparameters.write_text(json.dumps(dict(reversed(pieces.items()))))
    assert len(pieces) > 10  # _10 must come after _9, not after _1
    assert config.load(None, {}, str(tmp_path)).name == "from-pieces"


def test_no_source_names_all_three(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        config.load(None, {}, str(tmp_path))
    assert "--config" in str(err.value) and "CLOUDTRAIN_CONFIG" in str(err.value)
    assert "cloudtrain_config" in str(err.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),  # truncated or mangled value
        ("[1, 2]", "must be a JSON object"),  # wrong top-level type
        ('{"name": "x"}', "missing: ['epochs'"),  # an older SDK's subset
    ],
)
def test_malformed_config_errors_name_the_source(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        config.parse(text, "CLOUDTRAIN_CONFIG")
    assert message in str(err.value) and "CLOUDTRAIN_CONFIG" in str(err.value)


def test_unknown_key_is_a_version_skew_error(tmp_path: Path) -> None:
    raw = runtime_config(tmp_path, brand_new_field=1)
    with pytest.raises(ConfigError, match=r"unknown: \['brand_new_field'\].*rebuild the image"):
        config.from_dict(raw, "CLOUDTRAIN_CONFIG")


def test_runtime_imports_no_sdk_pydantic_or_cloud_sdk() -> None:
    # The google.cloud namespace stub itself comes from a .pth file at startup, not from us.
    code = (
        "import sys, cloudtrain_runtime.main, cloudtrain_runtime.managed, cloudtrain_runtime.script;"
        "bad = ('pydantic', 'cloudtrain', 'boto3', 'botocore', 'sagemaker', 'tensorflow');"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in bad or m.startswith('google.cloud.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
