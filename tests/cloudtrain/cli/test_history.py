"""``cloudtrain history``: a run's epochs as a table and as JSON, from its output folder and from MLflow.

The folder tests write a history as the chief does (``cloudtrain_runtime.history``); the
MLflow test trains a tracked run for real and reads it back from a real ``mlflow server``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from cloudtrain_runtime import history as history_lib
from cloudtrain_runtime.replica import HISTORY_FILE
from tests.cloudtrain_runtime.harness import launch, runtime_config
from tests.conftest import Result

Run = Callable[..., Result]


def written(folder: Path, epochs: list[tuple[int, dict[str, float]]], *, resumed_at: int = 0) -> Path:
    """A history of run ``run-1`` in ``folder``: epochs before ``resumed_at`` by attempt 1, the rest by attempt 2."""
    found = history_lib.new("run-1", started_at=1000.0, epochs=3)
    found = history_lib.begin_attempt(
        found, job="j", started_at=1000.0, resumed_from=0, replicas=2, global_batch=8
    )
    for epoch, metrics in epochs:
        if epoch == resumed_at:
            found = history_lib.begin_attempt(
                found,
                job="j",
                started_at=1000.0 + 60 * epoch,
                resumed_from=epoch - 1,
                replicas=2,
                global_batch=8,
            )
        found = history_lib.record_epoch(
            found, epoch=epoch, metrics=metrics, now=1000.0 + 60 * epoch, epoch_s=30.0, steps=4
        )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / HISTORY_FILE).write_text(json.dumps(found))
    return folder


def test_a_folders_history_is_one_row_an_epoch_with_every_metric(run_cli: Run, tmp_path: Path) -> None:
    folder = written(
        tmp_path / "out",
        [(1, {"loss": 0.5, "val_loss": 1 / 3}), (2, {"loss": 0.25, "val_loss": 2 / 7})],
        resumed_at=2,
    )
    result = run_cli("history", str(folder))
    assert result.code == 0, result.err
    about, header, _, first, second = result.out.splitlines()
    # no result file: the shape is the last attempt's replicas alone
    assert about == "run-1: 1 host × 2 unknown, 2 replicas, global batch 8, 2 attempts"
    assert header.split() == [
        "epoch",
        "attempt",
        "time",
        "epoch",
        "time",
        "examples",
        "seen",
        "loss",
        "val_loss",
    ]
    assert first.split() == ["1", "1", "1.0m", "30s", "32", "0.5", "0.333333"]
    assert second.split() == ["2", "2", "2.0m", "30s", "64", "0.25", "0.285714"]


def test_history_json_has_every_digit(run_cli: Run, tmp_path: Path) -> None:
    folder = written(tmp_path / "out", [(1, {"loss": 1 / 3})])
    result = run_cli("history", str(folder), "--json")
    assert result.code == 0, result.err
    [epoch] = json.loads(result.out)["epochs"]
    assert (epoch["epoch"], epoch["metrics"]) == (1, {"loss": 1 / 3})


def test_a_run_with_no_epoch_yet_says_so(run_cli: Run, tmp_path: Path) -> None:
    result = run_cli("history", str(written(tmp_path / "out", [])))
    assert result.code == 0 and result.out.splitlines()[-1] == "No epoch has ended yet."


def test_history_from_mlflow_without_a_uri_exits_2(run_cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    result = run_cli("history", "a", "--from", "mlflow")
    assert result.code == 2 and "--from mlflow needs the MLflow tracking URI" in result.err


@pytest.mark.multiprocess
@pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy is deprecated")
def test_history_from_mlflow_is_the_table_of_the_output_folder(
    tmp_path: Path, mlflow_server: str, run_cli: Run
) -> None:
    config = runtime_config(
        tmp_path,
        replicas=1,
        hosts=1,
        run_id="historied",
        tracking_uri=mlflow_server,
        tracking_experiment="history",
    )
    assert launch(1, config, tmp_path).ok
    folder = str(tmp_path / "out")

    from_files = run_cli("history", folder)
    from_mlflow = run_cli("history", "historied", "--from", "mlflow", "--tracking", mlflow_server)
    assert from_files.code == 0 and from_mlflow.code == 0, from_files.err + from_mlflow.err
    assert from_mlflow.out == from_files.out and len(from_files.out.splitlines()) == 3 + 3  # 3 epochs
    as_json = [
        json.loads(run_cli("history", *where, "--json").out)["epochs"]
        for where in ((folder,), ("historied", "--from", "mlflow", "--tracking", mlflow_server))
    ]
    assert as_json[0] == as_json[1]
