"""The run's history across attempts: deduplicated by epoch, lost time, throughput merged, hostile files.

The recorder is driven as ``callbacks.EpochHistory`` drives it, with a fake clock; the
real multi-process restarts are in test_fault.py, test_finish.py and the local provider's
training tests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cloudtrain_runtime import history
from cloudtrain_runtime.errors import ConfigError

THROUGHPUT = {"examples_per_sec": 100.0, "measured_steps": 10, "measured_seconds": 3.2}


class Clock:
    """Unix seconds that only move when told."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def recorder(folder: Path, clock: Clock) -> history.Recorder:
    """A recorder whose attempt starts now, as a fresh process's session does."""
    return history.Recorder(
        durable=folder / "backup" / "cloudtrain-history.json",
        published=folder / "results" / "cloudtrain-history.json",
        started_at=clock(),
        epochs_planned=6,
        replicas=2,
        global_batch=32,
        clock=clock,
    )


def train(found: history.Recorder, clock: Clock, epochs: range, *, seconds: float = 10.0) -> None:
    """Epochs of ``seconds`` each, 16 steps, a loss that falls."""
    for epoch in epochs:
        clock.now += seconds
        found.epoch(epoch, {"loss": 1.0 / epoch, "val_accuracy": 0.5 + epoch / 20}, epoch_s=seconds, steps=16)


def test_one_attempt_records_every_epoch_with_times_and_examples(tmp_path: Path) -> None:
    clock = Clock(1000.0)
    first = recorder(tmp_path, clock)
    first.begin("run-a", "job-1", resumed_from=0)
    train(first, clock, range(1, 4))

    written = json.loads((tmp_path / "results" / "cloudtrain-history.json").read_text())
    assert written == json.loads((tmp_path / "backup" / "cloudtrain-history.json").read_text())
    assert [(r["epoch"], r["wall_s"], r["epoch_s"], r["examples"]) for r in written["epochs"]] == [
        (1, 10.0, 10.0, 512),  # 16 steps × global batch 32
        (2, 20.0, 10.0, 1024),
        (3, 30.0, 10.0, 1536),
    ]
    assert written["attempts"][0] | {"epochs": None} == {
        "attempt": 1,
        "job": "job-1",
        "restart": 0,
        "started_s": 0.0,
        "resumed_from_epoch": 0,
        "lost_s": 0.0,
        "epochs": None,
        "discarded_epochs": [],
        "replicas": 2,
        "global_batch": 32,
        "throughput": None,
    }
    assert history.curves(written)["loss"] == [1.0, 0.5, 1 / 3]


def test_a_restart_continues_the_curve_without_a_duplicate_epoch_and_shows_the_time_lost(
    tmp_path: Path,
) -> None:
    clock = Clock(1000.0)
    first = recorder(tmp_path, clock)
    first.begin("run-a", "job-1", resumed_from=0)
    train(first, clock, range(1, 6))  # epoch 5 recorded, then killed before its backup: resumes after 4
    (tmp_path / "results" / "cloudtrain-history.json").unlink()  # SageMaker: a fresh /opt/ml/output/data

    clock.now += 45.0  # the rest of the kill, the restart, the new process's start-up
    second = recorder(tmp_path, clock)
    second.begin("run-a", "job-1", resumed_from=4)
    train(second, clock, range(5, 7))

    found = history.read(tmp_path / "results" / "cloudtrain-history.json")
    assert found is not None
    assert history.epochs(found) == [1, 2, 3, 4, 5, 6]
    assert [r["attempt"] for r in found["epochs"]] == [1, 1, 1, 1, 2, 2]
    assert [r["wall_s"] for r in found["epochs"]] == [10.0, 20.0, 30.0, 40.0, 105.0, 115.0]
    assert found["epochs"][-1]["examples"] == 6 * 512  # what the model saw, not what was thrown away
    restarted = found["attempts"][1]
    assert (restarted["restart"], restarted["resumed_from_epoch"], restarted["discarded_epochs"]) == (
        1,
        4,
        [5],
    )
    assert restarted["lost_s"] == 55.0  # from the end of epoch 4 (40 s) to the restart (95 s)
    assert restarted["epochs"] == [5, 6] and found["attempts"][0]["epochs"] == [1, 2, 3, 4, 5]
    assert history.lost_seconds(found) == 55.0


def test_a_restart_after_the_last_epoch_keeps_every_epoch(tmp_path: Path) -> None:
    clock = Clock(1000.0)
    first = recorder(tmp_path, clock)
    first.begin("run-a", "job-1", resumed_from=0)
    train(first, clock, range(1, 7))
    clock.now += 30.0
    second = recorder(tmp_path, clock)
    second.begin("run-a", "job-2", resumed_from=6)  # a new job of the same run: a resubmit

    assert second.history is not None
    assert history.epochs(second.history) == [1, 2, 3, 4, 5, 6]
    resumed = second.history["attempts"][1]
    assert (resumed["job"], resumed["restart"], resumed["epochs"], resumed["lost_s"]) == (
        "job-2",
        0,
        [],
        30.0,
    )


def test_throughput_merges_the_attempts_that_measured_one(tmp_path: Path) -> None:
    clock = Clock(1000.0)
    first = recorder(tmp_path, clock)
    first.begin("run-a", "job-1", resumed_from=0)
    first.throughput({**THROUGHPUT, "examples_per_sec": None, "measured_steps": 0, "measured_seconds": 0.0})
    train(first, clock, range(1, 2))
    second = recorder(tmp_path, clock)
    second.begin("run-a", "job-1", resumed_from=1)
    second.throughput(THROUGHPUT)
    train(second, clock, range(2, 4))
    third = recorder(tmp_path, clock)
    third.begin("run-a", "job-1", resumed_from=3)
    third.throughput({**THROUGHPUT, "measured_steps": 30, "measured_seconds": 4.8})
    train(third, clock, range(4, 5))

    assert third.history is not None
    merged = history.merged_throughput(third.history, global_batch=32)
    assert merged["examples_per_sec"] == pytest.approx(40 * 32 / 8.0)  # 40 steps in 3.2 + 4.8 s
    assert merged["attempts_measured"] == [2, 3]
    assert merged["by_attempt"] == {"1": None, "2": 100.0, "3": 100.0}


def test_another_runs_history_is_left_as_it_is_and_stops_the_attempt(tmp_path: Path) -> None:
    clock = Clock(1000.0)
    earlier = recorder(tmp_path, clock)
    earlier.begin("run-a", "job-1", resumed_from=0)
    train(earlier, clock, range(1, 3))
    before = (tmp_path / "backup" / "cloudtrain-history.json").read_bytes()

    with pytest.raises(ConfigError) as error:
        recorder(tmp_path, clock).begin("run-b", "job-2", resumed_from=0)

    assert "belongs to run 'run-a', not to run 'run-b', so it was left as it is" in str(error.value)
    assert (tmp_path / "backup" / "cloudtrain-history.json").read_bytes() == before


@pytest.mark.parametrize(
    "text",
    [
        "",  # cut short before anything was written
        '{"format": 1, "run": "run-a", "started_at": 1000.0',  # cut short mid-write
        "[]",  # not an object
        '{"format": 2, "run": "run-a"}',  # another format
        "\x00\x00",  # garbage
    ],
)
def test_a_durable_history_that_cannot_be_trusted_is_one_error_and_left_alone(
    tmp_path: Path, text: str
) -> None:
    (tmp_path / "backup").mkdir()
    (tmp_path / "backup" / "cloudtrain-history.json").write_text(text)

    with pytest.raises(ConfigError, match="cannot be read \\(cut short or edited\\), not to run 'run-a'"):
        recorder(tmp_path, Clock(1000.0)).begin("run-a", None, resumed_from=0)
    assert (tmp_path / "backup" / "cloudtrain-history.json").read_text() == text


def valid() -> dict[str, Any]:
    found = history.new("run-a", started_at=1000.0, epochs=3)
    found = history.begin_attempt(
        found, job=None, started_at=1000.0, resumed_from=0, replicas=1, global_batch=8
    )
    return history.record_epoch(found, epoch=1, metrics={"loss": 0.5}, now=1010.0, epoch_s=10.0, steps=4)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("epochs", 0, "epoch"), 0),  # epochs are 1-based
        (("epochs", 0, "epoch"), True),  # a YAML-ish boolean is not a count
        (("epochs", 0, "metrics", "loss"), "0.5"),  # a metric is a number
        (("epochs", 0, "wall_s"), 1e400),  # not finite
        (("epochs", 0, "steps"), -1),
        (("attempts", 0, "job"), 7),
        (("attempts", 0, "replicas"), 2**31),  # more than TensorFlow counts replicas in
        (("epochs", 0, "examples"), 10**400),  # more than any run sees
        (("started_at",), None),
    ],
)
def test_parse_refuses_a_history_with_a_wrong_value(path: tuple[Any, ...], value: Any) -> None:
    found = valid()
    assert history.parse(found) is not None
    target = found
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert history.parse(found) is None


def test_parse_refuses_epochs_out_of_order() -> None:
    found = valid()
    found["epochs"] = [found["epochs"][0], found["epochs"][0]]
    assert history.parse(found) is None


def test_identity_reads_the_run_from_the_config_and_the_job_from_the_provider() -> None:
    from cloudtrain_runtime.config import from_dict
    from tests.cloudtrain_runtime.harness import runtime_config

    config = from_dict(runtime_config(Path("/tmp/unused"), run_id="r1"), "test")
    plain = from_dict(runtime_config(Path("/tmp/unused")), "test")
    assert history.identity(config, {"CLOUD_ML_JOB_ID": "123"}) == history.Identity(run="r1", job="123")
    assert history.identity(config, {"TRAINING_JOB_NAME": "churn-r2"}) == history.Identity(
        run="r1", job="churn-r2"
    )
    assert history.identity(plain, {"CLOUDTRAIN_RUN_ID": "r9"}) == history.Identity(run="r9", job="r9")
    assert history.identity(plain, {}) == history.Identity(run=None, job=None)
