"""``cloudtrain compare`` on output folders whose histories the runtime's own functions wrote.

Each folder holds what a run leaves: ``cloudtrain-history.json`` built with
``cloudtrain_runtime.history`` (the functions the chief calls after every epoch) and a
``cloudtrain-result.json``. The runs here are made up so each verdict's numbers are known;
real runs are compared in tests/cloudtrain/providers/test_compare_runs.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

import cloudtrain
from cloudtrain.errors import CloudtrainError, SpecError
from cloudtrain.scaling import analysis, compare
from cloudtrain.spec import JobSpec
from cloudtrain.specfile import load_spec
from cloudtrain_runtime import history
from tests.conftest import Result

SETTINGS = JobSpec(name="compare-test", code={"module": "trainer.task"}, storage={"root": "/tmp/unused"})
EXAMPLES = 512


def write_run(
    folder: Path,
    *,
    replicas: int,
    hosts: int,
    epoch_s: float,
    accuracy: Sequence[float],
    restart_before: int | None = None,
    lost_s: float = 0.0,
    result: bool = True,
) -> Path:
    """A run's outputs: one attempt (two when ``restart_before`` an epoch), epochs of ``epoch_s``."""
    batch = 16 * replicas
    found = history.new(folder.name, started_at=1000.0, epochs=len(accuracy))
    found = history.begin_attempt(
        found, job="job", started_at=1000.0, resumed_from=0, replicas=replicas, global_batch=batch
    )
    now = 1000.0
    for epoch, value in enumerate(accuracy, 1):
        if epoch == restart_before:
            now += lost_s
            found = history.begin_attempt(
                found,
                job="job",
                started_at=now,
                resumed_from=epoch - 1,
                replicas=replicas,
                global_batch=batch,
            )
        now += epoch_s
        metrics = {"loss": 1.0 - value, "val_loss": 1.1 - value, "val_accuracy": value}
        found = history.record_epoch(
            found, epoch=epoch, metrics=metrics, now=now, epoch_s=epoch_s, steps=EXAMPLES // batch
        )
    folder.mkdir(parents=True)
    history.write(found, [folder / "cloudtrain-history.json"])
    if result:
        shape = {"replicas": replicas, "hosts": hosts, "devices_per_host": replicas // hosts}
        written = {**shape, "global_batch": batch, "learning_rate": 0.01, "accelerator": "t4"}
        (folder / "cloudtrain-result.json").write_text(json.dumps({**written, "strategy": "auto"}))
    return folder


def test_a_scaled_run_sooner_at_the_target_for_more_dollars_paid_in_time_only(tmp_path: Path) -> None:
    one = write_run(tmp_path / "one", replicas=1, hosts=1, epoch_s=10.0, accuracy=[0.8, 0.9, 0.95, 0.97])
    four = write_run(
        tmp_path / "four", replicas=4, hosts=2, epoch_s=4.0, accuracy=[0.5, 0.6, 0.7, 0.8, 0.9, 0.95]
    )

    found = compare(str(one), str(four), settings=SETTINGS)

    assert str(found.target) == "val_accuracy ≥ 0.95"  # the best the slower-converging run reached
    (verdict,) = found.verdicts
    assert verdict.speedup == pytest.approx(2.5)  # 512 examples in 4 s against 10 s
    assert verdict.epochs_ratio == pytest.approx(2.0)  # 6 epochs against 3
    assert verdict.time_ratio == pytest.approx(24 / 30)  # 6 × 4 s against 3 × 10 s
    one_rate, four_rate = (run.cost.usd_per_hour for run in found.runs)
    assert one_rate is not None and four_rate is not None and four_rate > 2 * one_rate  # 2 hosts × 2 T4
    assert verdict.cost_ratio == pytest.approx(24 / 30 * four_rate / one_rate)
    assert verdict.kind == analysis.PAID_IN_TIME
    assert "Scaling paid in time, not in money" in verdict.text


def test_a_speed_up_eaten_by_epochs_did_not_pay(tmp_path: Path) -> None:
    one = write_run(tmp_path / "one", replicas=1, hosts=1, epoch_s=10.0, accuracy=[0.9, 0.95])
    two = write_run(tmp_path / "two", replicas=2, hosts=1, epoch_s=6.0, accuracy=[0.6, 0.7, 0.8, 0.95])

    (verdict,) = compare(str(one), str(two), settings=SETTINGS).verdicts

    assert (verdict.speedup, verdict.epochs_ratio) == (pytest.approx(10 / 6), 2.0)
    assert verdict.kind == analysis.NOT_PAID
    assert verdict.text.endswith("Scaling did not pay: 2.00× the epochs ate the 1.67× speed-up.")


def test_the_time_a_restart_lost_shows_in_the_verdict_and_the_equal_time_values(tmp_path: Path) -> None:
    one = write_run(tmp_path / "one", replicas=1, hosts=1, epoch_s=10.0, accuracy=[0.8, 0.9, 0.95])
    two = write_run(
        tmp_path / "two",
        replicas=2,
        hosts=2,
        epoch_s=6.0,
        accuracy=[0.8, 0.9, 0.95],
        restart_before=2,
        lost_s=40.0,
    )

    found = compare(str(one), str(two), settings=SETTINGS)

    assert found.runs[1].time_lost_s == 40.0 and found.runs[1].attempts == 2
    assert [p.wall_s for p in found.runs[1].points] == [6.0, 52.0, 58.0]
    assert found.equal_time_s == 30.0  # the shorter run's wall time
    assert found.at_equal_time == (0.95, 0.8)  # the restarted run had only its first epoch by then
    (verdict,) = found.verdicts
    assert verdict.kind == analysis.NOT_PAID
    assert "restarts lost 40s" in verdict.text


def test_a_lower_is_better_target_and_equal_cost(tmp_path: Path) -> None:
    one = write_run(tmp_path / "one", replicas=1, hosts=1, epoch_s=10.0, accuracy=[0.8, 0.9, 0.95])
    two = write_run(tmp_path / "two", replicas=2, hosts=1, epoch_s=5.0, accuracy=[0.8, 0.9, 0.95])

    found = compare(str(one), str(two), target="val_loss=0.21", settings=SETTINGS)

    assert str(found.target) == "val_loss ≤ 0.21" and found.target.basis == "--target"
    assert [reached.epoch for reached in found.reached if reached] == [2, 2]
    one_rate, two_rate = (run.cost.usd_per_hour for run in found.runs)
    assert one_rate is not None and two_rate is not None
    assert found.equal_usd == pytest.approx(min(one_rate * 30, two_rate * 15) / 3600)
    (verdict,) = found.verdicts
    assert verdict.time_ratio == pytest.approx(0.5)
    assert verdict.kind == (analysis.PAID if two_rate * 10 <= one_rate * 20 else analysis.PAID_IN_TIME)


def test_a_run_still_training_is_read_from_its_history_alone(tmp_path: Path) -> None:
    one = write_run(tmp_path / "one", replicas=1, hosts=1, epoch_s=10.0, accuracy=[0.8, 0.9])
    busy = write_run(tmp_path / "busy", replicas=2, hosts=2, epoch_s=5.0, accuracy=[0.7], result=False)

    found = compare(str(one), str(busy), settings=SETTINGS)

    assert (found.runs[1].replicas, found.runs[1].global_batch, found.runs[1].learning_rate) == (2, 32, None)
    assert found.table() == [(1, [0.8, 0.7]), (2, [0.9, None])]


def test_json_has_every_run_the_table_and_the_verdicts(
    tmp_path: Path, run_cli: Callable[..., Result]
) -> None:
    one = write_run(tmp_path / "one", replicas=1, hosts=1, epoch_s=10.0, accuracy=[0.8, 0.9])
    two = write_run(tmp_path / "two", replicas=2, hosts=2, epoch_s=6.0, accuracy=[0.7, 0.9])

    result = run_cli("compare", str(one), str(two), "--json")

    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert [run["label"] for run in data["runs"]] == [str(one), str(two)]
    assert data["runs"][1]["shape"] == "2 hosts × 1 t4"
    assert data["runs"][1]["cost"]["source"].startswith("catalog: 2 × ")
    assert data["table"] == [{"epoch": 1, "values": [0.8, 0.7]}, {"epoch": 2, "values": [0.9, 0.9]}]
    assert data["verdicts"][0]["verdict"] in (analysis.PAID, analysis.PAID_IN_TIME, analysis.NOT_PAID)
    assert data["runs"][0]["epochs"][0] | {"usd": None} == {
        "epoch": 1,
        "wall_s": 10.0,
        "epoch_s": 10.0,
        "examples": 512,
        "attempt": 1,
        "usd": None,
        "metrics": {"loss": pytest.approx(0.2), "val_loss": pytest.approx(0.3), "val_accuracy": 0.8},
    }


def test_the_table_and_the_plot(tmp_path: Path, run_cli: Callable[..., Result]) -> None:
    one = write_run(tmp_path / "one", replicas=1, hosts=1, epoch_s=10.0, accuracy=[0.8, 0.9])
    two = write_run(tmp_path / "two", replicas=2, hosts=2, epoch_s=6.0, accuracy=[0.7, 0.9])
    picture = tmp_path / "scaling.png"

    result = run_cli("compare", str(one), str(two), "--plot", str(picture))

    assert result.code == 0, result.err
    assert f"Plot written to {picture}" in result.err
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    lines = result.out.splitlines()
    assert "val_accuracy at equal epochs" in lines
    assert [f"A = {one}", f"B = {two}"] == [line for line in lines if line.startswith(("A = ", "B = "))]
    assert any(line.startswith("verdict  B (2 hosts × 1 t4, 2 replicas) against A (") for line in lines)
    assert any(line.startswith("cost     A: catalog: 1 × ") for line in lines)


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("--target", "val_accuracy"), "Error: --target must be METRIC=VALUE with a finite number"),
        (("--target", "val_accuracy=nan"), "Error: --target must be METRIC=VALUE with a finite number"),
        (("--target", "val_acuracy=0.9"), "logged no 'val_acuracy'. Did you mean 'val_accuracy'?"),
        (("--metric", "auc"), "logged no 'auc'."),
    ],
)
def test_a_bad_target_or_metric_is_one_error_line(
    tmp_path: Path, run_cli: Callable[..., Result], args: tuple[str, ...], error: str
) -> None:
    one = write_run(tmp_path / "one", replicas=1, hosts=1, epoch_s=10.0, accuracy=[0.8])
    two = write_run(tmp_path / "two", replicas=2, hosts=2, epoch_s=6.0, accuracy=[0.7])

    result = run_cli("compare", str(one), str(two), *args)

    assert result.code == 2
    assert result.err.count("\n") == 1 and error in result.err, result.err


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b'{"format": 1, "run": "x"', "is not JSON"),  # cut short
        (b"\xff\xfe", "is not JSON"),  # not UTF-8
        (
            b'{"format": 1, "run": "x", "started_at": 1, "epochs_planned": 1, "attempts": [], "epochs": [1]}',
            "is not a history",
        ),
        (b"NaN", "is not JSON"),  # not JSON at all
    ],
)
def test_a_history_that_cannot_be_trusted_is_refused_by_name(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    one = write_run(tmp_path / "one", replicas=1, hosts=1, epoch_s=10.0, accuracy=[0.8])
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "cloudtrain-history.json").write_bytes(content)

    with pytest.raises(CloudtrainError, match=problem) as error:
        compare(str(one), str(tmp_path / "bad"), settings=SETTINGS)
    assert str(tmp_path / "bad" / "cloudtrain-history.json") in str(error.value)


def test_what_is_not_a_run_says_what_would_be(tmp_path: Path, run_cli: Callable[..., Result]) -> None:
    one = write_run(tmp_path / "one", replicas=1, hosts=1, epoch_s=10.0, accuracy=[0.8])
    (tmp_path / "empty").mkdir()

    missing = run_cli("compare", str(one), "no-such-run")
    empty = run_cli("compare", str(one), str(tmp_path / "empty"))
    alone = run_cli("compare", str(one))

    assert missing.code == 1 and "'no-such-run' is not a job ID, a local run, an output folder" in missing.err
    assert (
        empty.code == 1 and f"{tmp_path / 'empty' / 'cloudtrain-history.json'}: cannot be read" in empty.err
    )
    assert alone.code == 2 and "compare needs 2 to 26 runs. Received: 1." in alone.err


def test_the_python_api_exports_compare(tmp_path: Path) -> None:
    one = write_run(tmp_path / "one", replicas=1, hosts=1, epoch_s=10.0, accuracy=[0.8])
    two = write_run(tmp_path / "two", replicas=2, hosts=2, epoch_s=6.0, accuracy=[0.8])
    assert "compare" in cloudtrain.__all__
    found: Any = cloudtrain.compare(str(one), str(two), settings=SETTINGS)
    assert found.verdicts[0].kind == analysis.PAID_IN_TIME  # as sure, sooner, on twice the hosts


def test_parse_target_refuses_what_is_not_metric_equals_number() -> None:
    for text in ("=0.9", "acc=", "acc=inf", "acc=1e999", "acc"):
        with pytest.raises(SpecError, match="--target must be METRIC=VALUE"):
            analysis.parse_target(text)


def test_more_runs_than_letters_are_refused(tmp_path: Path) -> None:
    one = compare(
        str(write_run(tmp_path / "one", replicas=1, hosts=1, epoch_s=10.0, accuracy=[0.8])),
        str(write_run(tmp_path / "two", replicas=2, hosts=2, epoch_s=6.0, accuracy=[0.8])),
        settings=SETTINGS,
    ).runs[0]
    with pytest.raises(SpecError, match=r"compare needs 2 to 26 runs\. Received: 27\."):
        compare(*[one] * 27)


def test_run_ids_of_a_spec_are_read_under_its_runs_folder(tmp_path: Path, example_job: Path) -> None:
    spec = JobSpec(
        **{**load_spec(example_job).model_dump(exclude_unset=True), "storage": {"root": str(tmp_path)}}
    )
    write_run(tmp_path / "runs" / "week-1", replicas=1, hosts=1, epoch_s=10.0, accuracy=[0.8, 0.9])
    write_run(tmp_path / "runs" / "week-2", replicas=2, hosts=2, epoch_s=6.0, accuracy=[0.7, 0.9])

    found = compare("week-1", "week-2", spec=spec, provider="local", settings=SETTINGS)

    assert [(run.label, run.replicas) for run in found.runs] == [("week-1", 1), ("week-2", 2)]
    with pytest.raises(SpecError, match="Week 3"):  # not a run id: refused by the plan's rule
        compare("week-1", "Week 3", spec=spec, provider="local", settings=SETTINGS)
