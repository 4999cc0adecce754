"""A trial's values reach the config as each provider hands them over; the objective is reported as each reads it."""

from __future__ import annotations

import json
from pathlib import Path

import hypertune
import pytest

from cloudtrain_runtime import hparams
from cloudtrain_runtime.config import RuntimeConfig, from_dict
from cloudtrain_runtime.errors import ConfigError
from cloudtrain_runtime.providers.vertex import HypertuneFile

TUNED = {"learning_rate": "float", "per_replica_batch": "int", "epochs": "int", "optimizer": "str"}


def config(**changes: object) -> RuntimeConfig:
    values = {
        "name": "demo", "module": "trainer.task", "epochs": 3, "per_replica_batch": 8, "replicas": 4,
        "learning_rate": 0.04, "base_learning_rate": 0.01, "mixed_precision": "off", "strategy": "auto",
        "keras_backend": "tensorflow", "accelerator": "cpu", "devices_per_host": 1, "hosts": 4,
        "backup_dir": "b", "tensorboard_dir": "t", "export_dir": "e", "tuned": TUNED, "objective": "val_loss",
    }  # fmt: skip
    return from_dict({**values, **changes}, "test")


@pytest.mark.parametrize(
    ("argv", "values", "rest"),
    [
        (["--learning_rate=0.1"], {"learning_rate": 0.1}, []),  # --name=value
        (["--epochs", "5"], {"epochs": 5}, []),  # --name value, as Vertex's docs show it
        (
            ["--per_replica_batch=16.0"],
            {"per_replica_batch": 16},
            [],
        ),  # a discrete value Vertex writes as 16.0
        (["--optimizer", "--sgd"], {"optimizer": "--sgd"}, []),  # a categorical value is taken as is
        (["--width=3", "train"], {}, ["--width=3", "train"]),  # not tuned: left for the caller
    ],
)
def test_values_come_from_the_command_line(argv: list[str], values: dict, rest: list[str]) -> None:
    assert hparams.from_flags(argv, TUNED) == (values, rest)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--epochs=2.5"], "'epochs' must be a whole number. Received: epochs='2.5'"),
        (["--learning_rate=nan"], "'learning_rate' must be a finite number. Received: learning_rate='nan'"),
        (["--learning_rate=1e999"], "must be a finite number"),  # overflows to inf
        (["--epochs"], "--epochs ends the command line"),
    ],
)
def test_bad_values_name_the_parameter(argv: list[str], message: str) -> None:
    with pytest.raises(
        ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace("?", r"\?")
    ):
        hparams.from_flags(argv, TUNED)


def test_overrides_set_the_spec_fields_and_scale_the_learning_rate_as_the_plan_did() -> None:
    trial = hparams.apply(
        config(), {"learning_rate": 0.02, "per_replica_batch": 16, "epochs": 5, "optimizer": "sgd"}
    )
    # The plan scaled 0.01 to 0.04 (linear, 4 replicas); the trial's base scales alike.
    assert (trial.base_learning_rate, trial.learning_rate) == (0.02, 0.08)
    assert (trial.per_replica_batch, trial.global_batch, trial.epochs) == (16, 64, 5)
    assert trial.hparams == {"learning_rate": 0.02, "per_replica_batch": 16, "epochs": 5, "optimizer": "sgd"}


def test_a_tuned_parameter_without_a_value_is_an_error() -> None:
    with pytest.raises(ConfigError, match="tuned parameter 'epochs' has no value"):
        hparams.apply(config(), {"learning_rate": 0.02, "per_replica_batch": 16, "optimizer": "sgd"})


def test_values_come_from_the_hyperparameters_file(tmp_path: Path) -> None:
    """SageMaker: the tuned values beside the static ones, all strings."""
    file = tmp_path / "opt/ml/input/config/hyperparameters.json"
    file.parent.mkdir(parents=True)
    values = {"learning_rate": "0.05", "per_replica_batch": "32", "epochs": "2", "optimizer": "adam"}
    file.write_text(json.dumps({**values, "cloudtrain_config_0": "{}"}))
    trial = hparams.for_trial(config(), [], str(tmp_path))
    assert trial.hparams == {"learning_rate": 0.05, "per_replica_batch": 32, "epochs": 2, "optimizer": "adam"}


def test_outside_a_sweep_an_unknown_argument_is_an_error(tmp_path: Path) -> None:
    plain = config(tuned={}, objective=None)
    assert hparams.for_trial(plain, [], str(tmp_path)) is plain
    with pytest.raises(ConfigError, match="unrecognized arguments: '--width=3'"):
        hparams.for_trial(plain, ["--width=3"], str(tmp_path))


def test_a_config_outside_a_sweep_travels_without_sweep_keys() -> None:
    from cloudtrain_runtime.config import as_dict

    assert not {"hparams", "tuned", "objective"} & set(as_dict(config(tuned={}, objective=None)))
    assert {"tuned", "objective"} <= set(as_dict(config()))


def test_the_vertex_metrics_file_is_what_cloudml_hypertune_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The library Vertex's docs name (cloudml-hypertune 0.1.0.dev6) against ours, report for report."""
    theirs, ours = tmp_path / "theirs/output.metrics", tmp_path / "ours/output.metrics"
    monkeypatch.setenv("CLOUD_ML_HP_METRIC_FILE", str(theirs))
    monkeypatch.setenv("CLOUD_ML_TRIAL_ID", "7")
    monkeypatch.setattr("time.time", lambda: 1234.5)
    library = hypertune.HyperTune()
    mine = HypertuneFile(ours, trial="7", clock=lambda: 1234.5)
    for epoch in range(1, 103):  # past the library's 100 kept reports
        library.report_hyperparameter_tuning_metric("val_loss", 1 / epoch, global_step=epoch)
        mine.report("val_loss", epoch, 1 / epoch)
    assert ours.read_text() == theirs.read_text()
    assert len(ours.read_text().splitlines()) == 100


def test_the_vertex_environment_writes_where_the_library_would(tmp_path: Path) -> None:
    from cloudtrain_runtime.providers.vertex import ENVIRONMENT

    report = ENVIRONMENT.objective_reporter({"CLOUD_ML_TRIAL_ID": "2"}, str(tmp_path))
    report("val_loss", 1, 0.5)
    line = json.loads((tmp_path / "tmp/hypertune/output.metrics").read_text())
    assert (line["trial"], line["val_loss"], line["global_step"]) == ("2", "0.5", "1")


def test_the_objective_report_refuses_a_metric_the_epoch_lacks() -> None:
    reported: list[tuple[int, float]] = []
    report = hparams.ObjectiveReport("val_auc", lambda epoch, value: reported.append((epoch, value)))
    with pytest.raises(
        ConfigError, match=r"'val_auc' is not among the metrics of epoch 1 \(loss, val_loss\)"
    ):
        report.on_epoch_end(0, {"loss": 0.5, "val_loss": 0.6})
    hparams.ObjectiveReport("val_loss", lambda e, v: reported.append((e, v))).on_epoch_end(
        1, {"val_loss": 0.25}
    )
    assert reported == [(2, 0.25)]
