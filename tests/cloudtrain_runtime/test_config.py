"""The runtime config: what the plan builds is what the container parses, and where it is found."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import MISSING, fields
from pathlib import Path

import pytest

from cloudtrain.api import plan
from cloudtrain.container import runtime_config_json
from cloudtrain.spec import JobSpec
from cloudtrain.specfile import load_spec
from cloudtrain_runtime import config, environments
from cloudtrain_runtime.errors import ConfigError
from tests.cloudtrain_runtime.harness import runtime_config

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "binary_classifier" / "job.yaml"


# Every optional field away from its default, so a value the JSON loses or changes shows.
EVERY_FIELD = JobSpec(
    name="every-field",
    code={"module": "trainer.task", "args": ["--epochs", "3"]},
    resources={"accelerator": "a100-40gb", "per_host": 8, "hosts": 2, "allow_cpu_fallback": True},
    training={
        "epochs": 4,
        "steps_per_epoch": 50,
        "global_batch": 256,
        "learning_rate": {"base": 1, "scaling": "sqrt", "warmup_epochs": 2},
        "keras_backend": "jax",
        "layout_map": {".*dense/kernel": [None, "model"]},
        "model_parallel": 2,
        "steps_per_execution": 5,
        "jit_compile": True,
        "cache": False,
        "prefetch": False,
        "parallel_map": False,
        "hang_timeout": "5m",
    },
    storage={"root": "gs://bucket-a/run"},
    data={"train": "gs://bucket-a/train"},
    vertex={"project": "my-project"},
    tuning={
        "objective": {"metric": "val_loss", "goal": "minimize"},
        "parameters": {"units": {"type": "int", "min": 1, "max": 8}},
    },
    tracking={"uri": "http://127.0.0.1:5000", "experiment": "exp", "tags": {"team": "a"}, "log_model": True},
)


@pytest.mark.parametrize(
    "spec",
    [load_spec(EXAMPLE), EVERY_FIELD],
    ids=["example", "every-field"],
)
def test_the_plans_config_round_trips_through_the_json_the_runtime_parses(spec: JobSpec) -> None:
    planned = plan(spec, "vertex").with_bundle("gs://bucket-a/run/code/bundle.tar.gz").with_run("r1")
    parsed = config.parse(runtime_config_json(planned), "CLOUDTRAIN_CONFIG")
    assert parsed == planned.runtime


def test_the_plan_sets_every_field_the_runtime_defines() -> None:
    # An optional field the plan forgot would travel as its default without an error.
    planned = plan(EVERY_FIELD, "vertex").with_hparams({"units": 8})  # a trial of the sweep
    runtime = planned.with_bundle("gs://bucket-a/run/code/bundle.tar.gz").with_run("r1").runtime
    defaults = {
        field.name: field.default_factory() if field.default_factory is not MISSING else field.default
        for field in fields(config.RuntimeConfig)
        if field.default is not MISSING or field.default_factory is not MISSING
    }
    left_at_default = [name for name, default in defaults.items() if getattr(runtime, name) == default]
    assert left_at_default == ["script"]  # EVERY_FIELD sets code.module, so no script


def test_a_float_field_stays_a_float_however_it_was_written() -> None:
    planned = plan(EVERY_FIELD, "vertex")  # learning_rate: {base: 1, warmup_epochs: 2}
    assert [type(planned.runtime.base_learning_rate), type(planned.runtime.warmup_epochs)] == [float, float]
    assert '"base_learning_rate":1.0' in runtime_config_json(planned)


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
    assert config.load(str(file), env, "/", environments.hyperparameter_files()).name == "from-file"
    assert config.load(None, env, "/", environments.hyperparameter_files()).name == "from-env"


def test_sagemaker_hyperparameter_is_the_last_source(tmp_path: Path) -> None:
    hyperparameters = tmp_path / "opt/ml/input/config/hyperparameters.json"
    hyperparameters.parent.mkdir(parents=True)
    value = json.dumps(runtime_config(tmp_path, name="from-hp"))
    hyperparameters.write_text(json.dumps({"cloudtrain_config": value, "other": "1"}))
    assert config.load(None, {}, str(tmp_path), environments.hyperparameter_files()).name == "from-hp"


def test_sagemaker_hyperparameter_pieces_are_joined_in_numeric_order(tmp_path: Path) -> None:
    hyperparameters = tmp_path / "opt/ml/input/config/hyperparameters.json"
    hyperparameters.parent.mkdir(parents=True)
    value = json.dumps(runtime_config(tmp_path, name="from-pieces"))
    pieces = {f"cloudtrain_config_{i}": value[i * 20 : (i + 1) * 20] for i in range(len(value) // 20 + 1)}
    hyperparameters.write_text(json.dumps(dict(reversed(pieces.items()))))
    assert len(pieces) > 10  # _10 must come after _9, not after _1
    assert config.load(None, {}, str(tmp_path), environments.hyperparameter_files()).name == "from-pieces"


def test_environment_pieces_come_before_the_hyperparameters(tmp_path: Path) -> None:
    """A SageMaker sweep on a Deep Learning Container: the config in CLOUDTRAIN_CONFIG_0, _1, ... (≤ 512 each)."""
    hyperparameters = tmp_path / "opt/ml/input/config/hyperparameters.json"
    hyperparameters.parent.mkdir(parents=True)
    hyperparameters.write_text(
        json.dumps({"cloudtrain_config": json.dumps(runtime_config(tmp_path, name="hp"))})
    )
    value = json.dumps(runtime_config(tmp_path, name="from-env-pieces"))
    env = {f"CLOUDTRAIN_CONFIG_{i}": value[i * 20 : (i + 1) * 20] for i in range(len(value) // 20 + 1)}
    assert len(env) > 10  # _10 must come after _9, not after _1
    loaded = config.load(None, {**env, "HOME": "/root"}, str(tmp_path), environments.hyperparameter_files())
    assert loaded.name == "from-env-pieces"
    with pytest.raises(ConfigError, match="skip CLOUDTRAIN_CONFIG_1"):
        config.load(None, {"CLOUDTRAIN_CONFIG_0": "{", "CLOUDTRAIN_CONFIG_2": "}"}, str(tmp_path), [])


def test_no_source_names_all_three(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        config.load(None, {}, str(tmp_path), environments.hyperparameter_files())
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


def _printed(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_runtime_imports_no_sdk_pydantic_or_cloud_sdk() -> None:
    # The google.cloud namespace stub itself comes from a .pth file at startup, not from us.
    code = (
        "import sys, cloudtrain_runtime.main, cloudtrain_runtime.managed, cloudtrain_runtime.script;"
        "bad = ('pydantic', 'cloudtrain', 'boto3', 'botocore', 'sagemaker', 'tensorflow');"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in bad or m.startswith('google.cloud.')))"
    )
    assert _printed(code) == "[]"


def test_what_the_sdk_imports_is_standard_library_only() -> None:
    # The SDK's validate, plan and render import these; see tests/cloudtrain/test_startup.py.
    code = (
        "import sys; before = set(sys.modules); import cloudtrain_runtime.config, cloudtrain_runtime.rules;"
        "new = {m.split('.')[0] for m in set(sys.modules) - before};"
        "print(sorted(new - set(sys.stdlib_module_names)))"
    )
    assert _printed(code) == "['cloudtrain_runtime']"
