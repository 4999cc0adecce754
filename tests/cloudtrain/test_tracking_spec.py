"""The ``tracking:`` section: its forms, its defaults beneath the spec, and the errors it gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cloudtrain.errors import SpecError
from cloudtrain.spec import JobSpec
from cloudtrain.specfile import load_spec
from cloudtrain.tracker import Tracking

SERVER = "http://127.0.0.1:5000"


def spec_file(tmp_path: Path, tracking: str = "") -> Path:
    (tmp_path / "trainer").mkdir(exist_ok=True)
    (tmp_path / "trainer" / "task.py").write_text(
        "def build_model(config): ...\ndef make_dataset(context): ...\n"
    )
    path = tmp_path / "job.yaml"
    path.write_text(f"name: churn\ncode: {{module: trainer.task}}\n{tracking}")
    return path


def test_off_by_default_even_with_mlflow_tracking_uri_set(tmp_path: Path) -> None:
    spec = load_spec(spec_file(tmp_path), environ={"HOME": str(tmp_path), "MLFLOW_TRACKING_URI": SERVER})
    assert spec.tracking is None


@pytest.mark.parametrize(
    ("written", "environ", "expected"),
    [
        ("tracking: mlflow\n", {"MLFLOW_TRACKING_URI": SERVER}, (SERVER, "churn")),  # shorthand, URI from env
        (
            "tracking: {kind: mlflow, uri: databricks}\n",
            {"MLFLOW_TRACKING_URI": SERVER},
            ("databricks", "churn"),
        ),
        ("tracking: {uri: 'sqlite:////srv/m.db', experiment: exp}\n", {}, ("sqlite:////srv/m.db", "exp")),
    ],
)
def test_forms_and_the_uri_beneath_them(
    tmp_path: Path, written: str, environ: dict[str, str], expected: tuple[str, str]
) -> None:
    spec = load_spec(spec_file(tmp_path, written), environ={"HOME": str(tmp_path), **environ})
    assert spec.tracking is not None
    assert (spec.tracking.uri, spec.tracking.experiment_for(spec.name)) == expected


def test_set_fills_a_field_of_the_shorthand(tmp_path: Path) -> None:
    spec = load_spec(spec_file(tmp_path, "tracking: mlflow\n"), ["tracking.uri=databricks"], environ={})
    assert spec.tracking == Tracking(uri="databricks")


@pytest.mark.parametrize(
    ("tracking", "words"),
    [
        ("wandb", "tracking: 'wandb' is not a tracker; write tracking: mlflow"),
        ({"uri": "ftp://host/x"}, "tracking.uri: 'ftp://host/x' is not an MLflow tracking URI"),
        ({"uri": "http://me:hunter22@host:5000"}, "tracking.uri: "),  # a password is never shown
        ({"kind": "wandb"}, "tracking.kind"),
        (
            {"tags": {"cloudtrain.run_id": "x"}},
            "tracking.tags: 'cloudtrain.run_id' is a name cloudtrain sets",
        ),
        ({"tags": {"bad\nkey": "x"}}, "tracking.tags"),
        ({"experimnt": "x"}, "tracking.experimnt"),
    ],
)
def test_bad_values_name_the_field(tracking: object, words: str) -> None:
    with pytest.raises(SpecError) as raised:
        JobSpec(name="churn", code={"module": "trainer.task"}, tracking=tracking)
    assert words in str(raised.value)
    assert "hunter22" not in str(raised.value)


def test_cli_tracking_option_turns_tracking_on_and_travels_to_the_replicas(run_cli, tmp_path: Path) -> None:
    job = spec_file(tmp_path)
    result = run_cli("submit", str(job), "--dry-run", "--tracking", SERVER)
    assert result.code == 0, result.err
    config = json.loads(json.loads(result.out)["replicas"][0]["env"]["CLOUDTRAIN_CONFIG"])
    assert (config["tracking_uri"], config["tracking_experiment"]) == (SERVER, "churn")


def test_cli_untracked_config_has_no_tracking_keys(run_cli, tmp_path: Path) -> None:
    result = run_cli("submit", str(spec_file(tmp_path)), "--dry-run")
    config = json.loads(json.loads(result.out)["replicas"][0]["env"]["CLOUDTRAIN_CONFIG"])
    assert not [key for key in config if "tracking" in key or key == "log_model"]


def test_cli_tracking_without_uri_exits_2_with_the_fix(run_cli, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    result = run_cli("validate", str(spec_file(tmp_path, "tracking: mlflow\n")))
    assert result.code == 2
    assert "tracking.uri: tracking is on but no MLflow tracking URI is set" in result.err
    assert "Traceback" not in result.err


def test_cli_bad_tracking_exits_2(run_cli, tmp_path: Path) -> None:
    result = run_cli("validate", str(spec_file(tmp_path, "tracking: wandb\n")))
    assert result.code == 2
    assert "tracking: 'wandb' is not a tracker" in result.err
