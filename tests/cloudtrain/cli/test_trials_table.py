"""The trials table ``submit`` and ``status`` print for a sweep: one row per trial, the best marked."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from cloudtrain.cli import trials_table
from cloudtrain.provider.sweeps import Trial, best_of


@dataclass
class Sweep:
    """A sweep's trials as any provider's handle reports them (``HasTrials``)."""

    found: list[Trial] = field(default_factory=list)
    goal: str = "maximize"
    metric: str = "val_accuracy"

    def trials(self) -> list[Trial]:
        return self.found

    def best(self) -> Trial | None:
        return best_of(self.found, self.goal)


def test_the_table_has_a_column_per_parameter_and_marks_the_best(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "150")
    sweep = Sweep(
        [
            Trial(1, "r-t1", "succeeded", {"learning_rate": 0.012345, "width": 4}, 0.75, 2, job="local:a"),
            Trial(2, "r-t2", "succeeded", {"learning_rate": 0.08, "width": 16}, 0.9688, 2, job="local:b"),
            Trial(3, "r-t3", "failed", {"learning_rate": 0.5, "width": 64}, None, 0, job="local:c"),
        ]
    )
    trials_table.echo(sweep)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["trial", "state", "learning_rate", "width", "val_accuracy", "epochs", "id"]
    assert lines[2].split() == ["1", "succeeded", "0.01235", "4", "0.7500", "2", "local:a"]
    assert lines[3].split() == ["*2", "succeeded", "0.08", "16", "0.9688", "2", "local:b"]
    assert lines[4].split() == ["3", "failed", "0.5", "64", "-", "0", "local:c"]
    assert lines[-1] == "Best: trial 2 val_accuracy=0.9688 learning_rate=0.08 width=16"


def test_before_any_trial_ends_there_is_no_best(capsys: pytest.CaptureFixture[str]) -> None:
    trials_table.echo(Sweep([Trial(1, "r-t1", "running", {"width": 4})]))
    assert capsys.readouterr().out.splitlines()[-1] == "Best: no trial succeeded with an objective yet."
    assert trials_table.as_json(Sweep())["best"] is None


def test_the_best_trials_model_is_printed_under_it(capsys: pytest.CaptureFixture[str]) -> None:
    # regression: the sweep ended with its best trial's values, never where its model is
    best = Trial(1, "r-t1", "succeeded", {"width": 4}, 0.9, 2, job="local:a", model="/o/runs/r-t1/model")
    trials_table.echo(Sweep([best]))
    assert capsys.readouterr().out.splitlines()[-2:] == [
        "Best: trial 1 val_accuracy=0.9000 width=4",
        "Model: /o/runs/r-t1/model",
    ]


def test_a_sweeps_outputs_and_tensorboard_say_what_each_trial_writes() -> None:
    # regression: "tensorboard --logdir .../runs/{trial}/logs", a folder that never exists
    from cloudtrain.cli.job_commands import _hints
    from cloudtrain.cli.spec_commands import describe_outputs
    from cloudtrain.outputs import standard

    outputs = standard("/o/runs/{trial}", logs="/home/runs/{job}/output.log")
    handle = SimpleNamespace(id="local-sweep:s", provider="local", outputs=outputs)
    assert (
        _hints(handle)
        .splitlines()[-1]
        .startswith("TensorBoard: tensorboard --logdir /o/runs   # every trial's")
    )
    assert describe_outputs(outputs).splitlines()[0] == (
        "outputs of each trial ({trial}: the trial's id; the best trial's are shown once the sweep ends)"
    )
