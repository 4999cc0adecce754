"""Defaults beneath a spec file: one precedence, the user config file, and where each value came from.

    --set  >  the spec file  >  the profile  >  the environment  >  the built-in default

Every test starts with no profile and no cloud settings (tests/conftest.py); each sets
the layers it needs through the environment and files, as a user would.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

import cloudtrain
from cloudtrain import defaults
from cloudtrain.errors import ConfigError, SpecError
from cloudtrain.planning import plan
from cloudtrain.spec import JobSpec
from cloudtrain.specfile import load_spec, load_spec_sources
from tests.conftest import Result

SPEC = """\
name: demo-job
code: {module: trainer.task}
"""
TASK = "def build_model(config): ...\n\n\ndef make_dataset(context): ...\n"


@pytest.fixture
def job(tmp_path: Path) -> Path:
    """A project whose spec names no provider setting."""
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "__init__.py").write_text("")
    (tmp_path / "trainer" / "task.py").write_text(TASK)
    path = tmp_path / "job.yaml"
    path.write_text(SPEC)
    return path


def config_file() -> Path:
    """Where cloudtrain reads the user config file in this test (conftest sets XDG_CONFIG_HOME)."""
    return Path(os.environ["XDG_CONFIG_HOME"]) / "cloudtrain" / "config.yaml"


def write_config(text: str | bytes) -> Path:
    path = config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


PROFILES = """\
profiles:
  default:
    vertex: {region: europe-west4, storage_root: gs://my-bucket/jobs}
    sagemaker: {role: "arn:aws:iam::123456789012:role/Training"}
  work:
    vertex: {region: asia-east1}
"""


@pytest.mark.parametrize(
    ("layers", "region", "source"),
    [
        ((), "us-central1", "default"),  # nothing set: the built-in default
        (("environment",), "europe-west1", "environment:GOOGLE_CLOUD_REGION"),  # environment > default
        (("environment", "profile"), "europe-west4", "profile"),  # profile > environment
        (("environment", "profile", "spec"), "us-east1", "spec"),  # spec > profile
        (("environment", "profile", "spec", "set"), "us-west1", "set"),  # --set > spec
        (("environment", "set"), "us-west1", "set"),  # --set > environment
    ],
)
def test_one_precedence_for_every_layer(
    job: Path, monkeypatch: pytest.MonkeyPatch, layers: tuple[str, ...], region: str, source: str
) -> None:
    if "environment" in layers:
        monkeypatch.setenv("GOOGLE_CLOUD_REGION", "europe-west1")
    if "profile" in layers:
        write_config("profiles: {default: {vertex: {region: europe-west4}}}\n")
    if "spec" in layers:
        job.write_text(SPEC + "vertex: {region: us-east1}\n")
    overrides = ["vertex.region=us-west1"] if "set" in layers else []
    spec, sources = load_spec_sources(job, overrides)
    assert (spec.vertex.region, sources.fields["vertex.region"]) == (region, source)


def test_google_cloud_project_answers_vertex_project_is_required(
    run_cli: Callable[..., Result], job: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job.write_text(SPEC + "vertex: {storage_root: gs://my-bucket/demo}\n")
    before = run_cli("validate", str(job), "--provider", "vertex")
    assert (before.code, before.errors) == (
        2,
        ["vertex.project is required on Vertex AI. Set it to your Google Cloud project ID."],
    )
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-project")
    after = run_cli("validate", str(job), "--provider", "vertex", "--json")
    assert (after.code, json.loads(after.out)["valid"]) == (0, True)


def test_aws_region_moves_the_sagemaker_plan(
    run_cli: Callable[..., Result], job: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job.write_text(
        SPEC + "sagemaker: {role: 'arn:aws:iam::123456789012:role/T', storage_root: s3://my-bucket/d}\n"
    )
    assert json.loads(run_cli("plan", str(job), "-p", "sagemaker", "--json").out)["region"] == "us-east-1"
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    planned = json.loads(run_cli("plan", str(job), "-p", "sagemaker", "--json").out)
    assert planned["region"] == "eu-west-1"
    assert planned["sources"]["sagemaker.region"] == "environment:AWS_REGION"


def test_the_aws_profiles_region_counts_as_environment(job: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    aws_config = Path(os.environ["AWS_CONFIG_FILE"])
    aws_config.write_text("[profile dev]\nregion = ap-south-1\n")
    monkeypatch.setenv("AWS_PROFILE", "dev")
    spec, sources = load_spec_sources(job)
    assert spec.sagemaker.region == "ap-south-1"
    assert sources.fields["sagemaker.region"] == f"environment:{aws_config} [profile dev]"


def test_plan_json_says_where_every_field_came_from(
    run_cli: Callable[..., Result], job: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(PROFILES)
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-project")
    result = run_cli("plan", str(job), "-p", "vertex", "--json", "--set", "training.epochs=2")
    assert result.code == 0, result.err
    sources = json.loads(result.out)["sources"]
    assert set(sources) == set(defaults.leaves())  # every field, none left out
    assert {path: source for path, source in sources.items() if source != "default"} == {
        "name": "spec",
        "code.module": "spec",
        "training.epochs": "set",
        "vertex.project": "environment:GOOGLE_CLOUD_PROJECT",
        "vertex.region": "profile",
        "vertex.storage_root": "profile",
        "sagemaker.role": "profile",
    }


def test_plan_table_notes_values_from_the_profile_and_environment(
    run_cli: Callable[..., Result], job: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(PROFILES)
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-project")
    result = run_cli("plan", str(job), "-p", "vertex")
    assert result.code == 0, result.err
    assert result.out.endswith(
        "from profile and environment\n"
        "  vertex.project       my-project (from GOOGLE_CLOUD_PROJECT)\n"
        "  vertex.region        europe-west4 (from profile 'default')\n"
        "  vertex.storage_root  gs://my-bucket/jobs/demo-job (from profile 'default')\n"
    )


def test_the_plan_table_has_no_notes_when_the_spec_sets_everything(
    run_cli: Callable[..., Result], example_job: Path
) -> None:
    assert "from profile and environment" not in run_cli("plan", str(example_job), "-p", "vertex").out


def test_a_profile_storage_root_gives_each_job_its_own_folder(job: Path) -> None:
    write_config(PROFILES)
    spec = load_spec(job, ["name=other-job", "vertex.project=my-project"])
    assert spec.vertex.storage_root == "gs://my-bucket/jobs/other-job"
    assert plan(spec, "vertex").storage.export == "gs://my-bucket/jobs/other-job/runs/{run}/model"


@pytest.mark.parametrize(
    ("argument", "variable", "region"),
    [
        (None, None, "europe-west4"),  # neither: the profile called 'default'
        (None, "work", "asia-east1"),  # CLOUDTRAIN_PROFILE
        ("default", "work", "europe-west4"),  # --profile beats CLOUDTRAIN_PROFILE
    ],
)
def test_the_profile_is_chosen_by_argument_then_variable_then_default(
    job: Path, monkeypatch: pytest.MonkeyPatch, argument: str | None, variable: str | None, region: str
) -> None:
    write_config(PROFILES)
    if variable:
        monkeypatch.setenv("CLOUDTRAIN_PROFILE", variable)
    assert load_spec(job, profile=argument).vertex.region == region


def test_profile_option_on_the_cli(run_cli: Callable[..., Result], job: Path) -> None:
    write_config(PROFILES)
    settings = ("--set", "vertex.project=my-project", "--set", "vertex.storage_root=gs://my-bucket/x")
    result = run_cli("plan", str(job), "-p", "vertex", "--profile", "work", *settings)
    assert result.code == 0, result.err
    assert result.out.endswith(
        "from profile and environment\n  vertex.region  asia-east1 (from profile 'work')\n"
    )


def test_without_a_config_file_no_profile_is_needed(job: Path) -> None:
    assert not config_file().exists()
    assert load_spec(job).vertex.region == "us-central1"


@pytest.mark.parametrize(
    ("config", "variable", "error"),
    [
        (
            PROFILES,
            None,
            "Profile 'wrok' is not in {path}. Did you mean 'work'? Add it under profiles:, or choose another.",
        ),
        (
            PROFILES,
            "wrok",  # the same, named by the variable
            "Profile 'wrok' (chosen by CLOUDTRAIN_PROFILE) is not in {path}. Did you mean 'work'? "
            "Add it under profiles:, or choose another.",
        ),
        (
            None,
            None,
            "Profile 'wrok' needs the config file {path}, which does not exist. "
            "Create it with a 'profiles: wrok:' section, or choose no profile.",
        ),
        (
            "profiles:\n",
            None,
            "Profile 'wrok' is not in {path}. It defines no profile. Add it under profiles:, or choose another.",
        ),
    ],
)
def test_a_profile_asked_for_must_exist(
    run_cli: Callable[..., Result],
    job: Path,
    monkeypatch: pytest.MonkeyPatch,
    config: str | None,
    variable: str | None,
    error: str,
) -> None:
    if config is not None:
        write_config(config)
    if variable:
        monkeypatch.setenv("CLOUDTRAIN_PROFILE", variable)
        result = run_cli("validate", str(job))
    else:
        result = run_cli("validate", str(job), "--profile", "wrok")
    assert (result.code, result.errors) == (2, [error.format(path=config_file())])


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ("profiles: [a, b]\n", "{path}: profiles must be a mapping (key: value lines). Received: list."),
        ("- profiles\n", "{path}: the top level must be a mapping (key: value lines). Received: list."),
        (
            "profile: {}\n",  # a typo of the one top-level key
            "{path}: profile: unknown key. Did you mean 'profiles'? A profile's settings go under profiles: NAME:.",
        ),
        (
            "profiles: {default: {vertx: {}}}\n",
            "{path}: profiles.default.vertx: unknown key. Did you mean 'vertex'? A profile holds provider sections.",
        ),
        (
            "profiles: {default: {storage: {root: gs://my-bucket/x}}}\n",  # not a provider section
            "{path}: profiles.default.storage: unknown key. Valid keys: sagemaker, vertex. "
            "A profile holds provider sections.",
        ),
        (
            "profiles: {default: {vertex: {projet: p}}}\n",
            "{path}: profiles.default.vertex.projet: unknown key. Did you mean 'project'?",
        ),
        (
            "profiles: {default: {vertex: region}}\n",
            "{path}: profiles.default.vertex must be a mapping (key: value lines). Received: str.",
        ),
        (
            "profiles:\n  default: [\n",
            "{path} line 3: could not parse YAML (expected the node content, but found '<stream end>'). "
            "Check indentation and quoting.",
        ),
        ("base: &b {}\nprofiles: {default: *b}\n", "{path}: uses a YAML alias (*name). Write the value out."),
        ("profiles:\n  a: {}\n  a: {}\n", "{path}: line 3: 'a' is written twice. Keep one."),
        ("[" * 50, "{path}: nested deeper than 16 levels. A profile needs 3."),
        (
            "x: !!python/object:os.system ls\n",
            "{path} line 1: could not parse YAML (could not determine a "
            "constructor for the tag 'tag:yaml.org,2002:python/object:os.system'). Check indentation and quoting.",
        ),
        (
            "x: !!int abc\n",
            "{path}: holds a value YAML cannot build (invalid literal for int() with base 10: 'abc').",
        ),
        (b"\xff\xfeprofiles: {}\n", "{path}: not UTF-8 text (byte 0). Save it as UTF-8."),
        (b"profiles: {}\x00\n", "{path}: holds a NUL byte. Save it as plain text."),
        (
            "# " + "x" * 70_000,
            "{path}: not a regular file of at most 65,536 bytes. A cloudtrain config file is a short YAML file; "
            "replace it, or remove it.",
        ),
    ],
)
def test_a_bad_config_file_is_one_clear_error_naming_it(
    run_cli: Callable[..., Result], job: Path, content: str | bytes, error: str
) -> None:
    path = write_config(content)
    result = run_cli("validate", str(job))
    assert (result.code, result.errors) == (2, [error.format(path=path)])
    assert "Traceback" not in result.err


def test_a_folder_where_the_config_file_goes_is_refused(run_cli: Callable[..., Result], job: Path) -> None:
    config_file().mkdir(parents=True)
    result = run_cli("validate", str(job))
    assert result.code == 2
    assert result.errors == [
        f"{config_file()}: not a regular file of at most 65,536 bytes. A cloudtrain config file is a short "
        "YAML file; replace it, or remove it."
    ]


def test_a_bad_value_from_beneath_the_spec_says_where_it_came_from(
    run_cli: Callable[..., Result], job: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "Not_A_Project")
    write_config("profiles: {default: {sagemaker: {role: admin}}}\n")
    result = run_cli("validate", str(job))
    assert result.code == 2
    assert result.errors == [
        "vertex.project: 'Not_A_Project' is not a Google Cloud project ID; use 6-30 lowercase letters, digits "
        "and '-', starting with a letter. It came from GOOGLE_CLOUD_PROJECT: fix it there, or set "
        "vertex.project in the spec.",
        "sagemaker.role: 'admin' is not an IAM role ARN; use arn:aws:iam::123456789012:role/NAME. It came from "
        f"profile 'default' of {config_file()}: fix it there, or set sagemaker.role in the spec.",
    ]


def test_a_spec_value_wins_over_a_bad_one_beneath_it(job: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "Not_A_Project")
    assert load_spec(job, ["vertex.project=my-project"]).vertex.project == "my-project"


def test_a_section_the_spec_writes_whole_still_takes_the_fields_it_leaves_out(job: Path) -> None:
    write_config(PROFILES)
    job.write_text(SPEC + "vertex: {labels: {team: search}}\n")
    spec, sources = load_spec_sources(job)
    assert (spec.vertex.labels, spec.vertex.region) == ({"team": "search"}, "europe-west4")
    assert (sources.fields["vertex.labels"], sources.fields["vertex.region"]) == ("spec", "profile")


def test_a_mapping_field_is_replaced_whole_never_merged(job: Path) -> None:
    write_config("profiles: {default: {vertex: {labels: {owner: me}}}}\n")
    job.write_text(SPEC + "vertex: {labels: {team: search}}\n")
    assert load_spec(job).vertex.labels == {"team": "search"}


def test_a_jobspec_built_in_python_is_used_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    write_config("profiles: {default: {sagemaker: {region: ap-south-1}}}\n")
    spec = JobSpec(name="demo-job", code={"module": "trainer.task"}, sagemaker={"role": None})
    assert spec.sagemaker.region == "us-east-1"  # no file or variable read behind its back
    assert cloudtrain.with_defaults(spec).sagemaker.region == "ap-south-1"  # profile > environment
    explicit = JobSpec(name="demo-job", code={"module": "trainer.task"}, sagemaker={"region": "us-west-2"})
    assert cloudtrain.with_defaults(explicit).sagemaker.region == "us-west-2"  # what it sets stays


def test_with_defaults_reports_a_bad_value_with_its_source(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "moon-base-1")
    spec = JobSpec(name="demo-job", code={"module": "trainer.task"})
    with pytest.raises(SpecError) as raised:
        cloudtrain.with_defaults(spec)
    assert raised.value.problems == [
        "sagemaker.region: 'moon-base-1' is not an AWS region; use a region like us-east-1. "
        "It came from AWS_REGION: fix it there, or set sagemaker.region in the spec."
    ]


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"XDG_CONFIG_HOME": "/xdg", "HOME": "/home/me"}, "/xdg/cloudtrain/config.yaml"),  # XDG first
        ({"HOME": "/home/me"}, "/home/me/.config/cloudtrain/config.yaml"),  # else under home
        (
            {"XDG_CONFIG_HOME": "relative", "HOME": "/home/me"},
            "/home/me/.config/cloudtrain/config.yaml",
        ),  # ignored
    ],
)
def test_the_config_file_honours_xdg_config_home(environ: dict[str, str], expected: str) -> None:
    assert defaults.config_path(environ) == Path(expected)


def test_the_home_folder_is_read_from_home(
    job: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home" / ".config" / "cloudtrain").mkdir(parents=True)
    (tmp_path / "home" / ".config" / "cloudtrain" / "config.yaml").write_text(PROFILES)
    assert load_spec(job).vertex.region == "europe-west4"


def test_a_config_error_is_a_spec_error_for_validate_json(run_cli: Callable[..., Result], job: Path) -> None:
    path = write_config("profiles: {default: {vertx: {}}}\n")
    result = run_cli("validate", str(job), "--json")
    assert result.code == 2
    assert json.loads(result.out)["errors"][0]["message"].startswith(f"{path}: profiles.default.vertx")
    assert issubclass(ConfigError, SpecError)


def test_no_developer_setting_reaches_a_test() -> None:
    """tests/conftest.py clears them; were it not to, every spec test would depend on its machine."""
    assert defaults.environment_defaults(os.environ) == {}
    assert defaults.read_profile(None, os.environ).name is None


@pytest.mark.parametrize(
    "command",
    [
        ("validate",),
        ("plan",),
        ("render",),
        ("submit", "--dry-run"),
        ("cost", "--throughput", "100@cpu"),
    ],
    ids=lambda command: command[0],
)
def test_every_command_that_reads_a_spec_takes_profile(
    run_cli: Callable[..., Result], job: Path, command: tuple[str, ...]
) -> None:
    write_config(PROFILES)
    name, *rest = command
    result = run_cli(name, str(job), *rest, "--profile", "wrok")
    assert (result.code, result.errors) == (
        2,
        [
            f"Profile 'wrok' is not in {config_file()}. Did you mean 'work'? Add it under profiles:, or choose another."
        ],
    )
