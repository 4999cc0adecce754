"""The tuning section: what it accepts and refuses, and the search a local sweep runs."""

from __future__ import annotations

from typing import Any

import pytest

from cloudtrain.api import plan
from cloudtrain.errors import SpecError
from cloudtrain.spec import JobSpec
from cloudtrain.sweep import check_sweep_run_id, search, space, trial_run_id
from cloudtrain.sweep.objective import epoch_value

OBJECTIVE = {"metric": "val_loss", "goal": "minimize"}


def spec(parameters: dict[str, Any], **tuning: Any) -> JobSpec:
    return JobSpec(
        name="demo", code={"module": "t"}, tuning={"objective": OBJECTIVE, "parameters": parameters, **tuning}
    )


@pytest.mark.parametrize(
    ("parameters", "tuning", "message"),
    [
        (
            {"x": {"type": "float", "min": 1, "max": 1}},
            {},
            "tuning.parameters.x: min (1) must be below max (1)",
        ),
        ({"x": {"type": "float", "min": 0, "max": 1, "scale": "log"}}, {}, "scale log needs min above 0"),
        ({"x": {"type": "int", "min": 1.5, "max": 4}}, {}, "whole-number min and max"),
        ({"x": {"type": "float", "values": [1]}}, {}, "float parameters take min and max, not values"),
        ({"x": {"type": "categorical", "values": [1, 2]}}, {}, "categorical parameter takes strings"),
        ({"x": {"type": "discrete", "values": [4, 2]}}, {}, "discrete: in ascending order"),
        ({"x": {"type": "discrete", "values": [2, 2]}}, {}, "values must be distinct"),
        ({"Bad": {"type": "int", "min": 1, "max": 2}}, {}, "'Bad' is not a parameter name"),
        (
            {"config": {"type": "int", "min": 1, "max": 2}},
            {},
            "'config' is not a parameter name",
        ),  # the runtime's flag
        ({"cloudtrain_config_0": {"type": "int", "min": 1, "max": 2}}, {}, "is not a parameter name"),
        ({"epochs": {"type": "float", "min": 1, "max": 3}}, {}, "'epochs' sets training.epochs"),
        ({"per_replica_batch": {"type": "discrete", "values": [0, 8]}}, {}, "its values must be above 0"),
        ({"x": {"type": "int", "min": 1, "max": 9}}, {"parallel_trials": 11}, "parallel_trials (11) exceeds"),
        ({"x": {"type": "float", "min": 1, "max": 9}}, {"algorithm": "grid"}, "'x' is a float range"),
        ({"x": {"type": "int", "min": 1, "max": 9}}, {"max_trials": 0}, "tuning.max_trials"),
        ({"x": {"type": "int", "min": 1, "max": 9}}, {"algorithm": "hyperband"}, "tuning.algorithm"),
        ({}, {}, "tuning.parameters"),
        # hostile input: a YAML boolean, NaN, a NUL byte, a nested list, a huge number
        ({"x": {"type": "categorical", "values": [True, "no"]}}, {}, "values[0] is a YAML boolean"),
        (
            {"x": {"type": "discrete", "values": [1, float("nan")]}},
            {},
            "values[1] must be a string or a finite number",
        ),
        (
            {"x": {"type": "categorical", "values": ["a\x00b"]}},
            {},
            "values[0] must be non-empty text without control",
        ),
        (
            {"x": {"type": "discrete", "values": [1, [2]]}},
            {},
            "values[1] must be a string or a finite number",
        ),
        (
            {"x": {"type": "discrete", "values": [1, 10**30]}},
            {},
            "values[1] must be a string or a finite number",
        ),
        ({"x": {"type": "float", "min": 0, "max": 10**30}}, {}, "tuning.parameters.x.max"),
        (
            {"x": {"type": "int", "min": 1, "max": 9}},
            {"max_trials": True},
            "tuning.max_trials must be a whole number",
        ),
    ],
)
def test_a_bad_tuning_section_names_the_field(parameters: dict, tuning: dict, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        spec(parameters, **tuning)
    assert message in "\n".join(caught.value.problems)


def test_a_trial_sets_the_spec_fields_its_values_name() -> None:
    base = spec(
        {
            "learning_rate": {"type": "float", "min": 0.001, "max": 0.1},
            "width": {"type": "int", "min": 1, "max": 8},
        }
    )
    trial = space.trial_spec(base, {"learning_rate": 0.05, "per_replica_batch": 64, "epochs": 7, "width": 3})
    planned = plan(trial, "local").with_hparams({"learning_rate": 0.05, "width": 3})
    assert (planned.base_learning_rate, planned.per_replica_batch, trial.training.epochs) == (0.05, 64, 7)
    runtime = planned.runtime
    assert runtime.hparams == {"learning_rate": 0.05, "width": 3}
    assert runtime.tuned == {"learning_rate": "float", "width": "int"}
    assert runtime.objective == "val_loss"


def test_a_grid_covers_every_combination_once() -> None:
    tuning = spec(
        {
            "units": {"type": "int", "min": 1, "max": 3},
            "act": {"type": "categorical", "values": ["relu", "tanh"]},
        },
        algorithm="grid",
        max_trials=100,
    ).tuning
    assert tuning is not None
    assert search.trials_in_all(tuning) == 6  # fewer than max_trials: the grid has 6 points
    study = search.create_study(tuning)
    seen = {tuple(sorted(search.values(search.ask(study, tuning), tuning).items())) for _ in range(6)}
    assert len(seen) == 6


def test_values_stay_in_their_ranges_and_kinds() -> None:
    tuning = spec(
        {
            "learning_rate": {"type": "float", "min": 1e-4, "max": 1e-1, "scale": "log"},
            "width": {"type": "discrete", "values": [4, 16, 64]},
            "depth": {"type": "int", "min": 1, "max": 3},
        },
        algorithm="random",
    ).tuning
    assert tuning is not None
    study = search.create_study(tuning)
    for _ in range(20):
        values = search.values(search.ask(study, tuning), tuning)
        assert 1e-4 <= values["learning_rate"] <= 1e-1
        assert values["width"] in (4, 16, 64) and type(values["width"]) is int
        assert values["depth"] in (1, 2, 3)


@pytest.mark.parametrize(
    ("line", "found"),
    [
        ("[chief-0] epoch 2/3 loss=0.2500 val_loss=0.3000", (2, 0.3)),
        ("epoch 10/10 val_loss=1e-05", (10, 1e-05)),  # as SageMaker reads the line, no prefix
        ("[chief-0] epoch 1/3 loss=0.2500", None),  # no val_loss: loss must not match inside it
        ("[chief-0] epoch 1/3 val_loss=nan", None),  # a diverged trial reports nothing
        ("[chief-0] final_val_loss=0.2", None),  # not an epoch line
    ],
)
def test_the_objective_is_read_off_the_epoch_lines(line: str, found: tuple | None) -> None:
    assert epoch_value(line, "val_loss") == found


def test_trial_run_ids_stay_run_ids() -> None:
    assert trial_run_id("nightly", 12) == "nightly-t12"
    with pytest.raises(SpecError, match="cannot name a sweep"):
        check_sweep_run_id("x" * 60)


def test_a_spec_without_tuning_renders_as_before() -> None:
    """regression: the sweep fields of the runtime config must not reach a plain job's request."""
    plain = JobSpec(name="demo", code={"module": "t"})
    from cloudtrain import container

    assert '"tuned"' not in container.runtime_config_json(plan(plain, "local").with_bundle("/tmp/b.tar.gz"))


def test_early_stopping_prunes_a_trial_below_the_median_from_its_second_epoch() -> None:
    tuning = spec({"units": {"type": "int", "min": 1, "max": 9}}, early_stopping=True).tuning
    assert tuning is not None
    study = search.create_study(tuning)  # minimize val_loss
    for _ in range(search.PRUNE_AFTER_TRIALS):
        done = search.ask(study, tuning)
        for epoch, loss in ((1, 0.5), (2, 0.3)):
            done.report(loss, epoch)
        study.tell(done, 0.3)
    worse = search.ask(study, tuning)
    worse.report(0.9, 1)
    assert not worse.should_prune()  # the first epoch is never compared
    worse.report(0.8, 2)
    assert worse.should_prune()  # above the others' median at epoch 2
    plain = spec({"units": {"type": "int", "min": 1, "max": 9}}).tuning
    assert plain is not None
    never = search.create_study(plain)
    trial = search.ask(never, plain)
    trial.report(9.9, 5)
    assert not trial.should_prune()  # without early_stopping nothing is pruned


INT32_MAX = 2**31 - 1


@pytest.mark.parametrize(
    ("parameters", "tuning", "message"),
    [
        # regression: list(range(1, 2_000_000_001)) ran out of memory in validate, render, cost
        (
            {"units": {"type": "int", "min": 1, "max": 2_000_000_000}},
            {"algorithm": "grid"},
            "tuning.parameters.units: algorithm grid runs every value, and min 1 to max 2,000,000,000 are "
            "2,000,000,000 values; a sweep runs at most 10,000 trials. Narrow the range, list the values "
            "to try (type: discrete), or use algorithm random or bayesian.",
        ),
        (  # each parameter within the limit, their product past it
            {
                "units": {"type": "int", "min": 1, "max": 200},
                "act": {"type": "categorical", "values": [f"a{i}" for i in range(100)]},
            },
            {"algorithm": "grid"},
            "tuning.parameters: algorithm grid runs every combination, units 200 × act 100 = 20,000; a sweep "
            "runs at most 10,000 trials. Use fewer values, or algorithm random or bayesian.",
        ),
        # tuned training values obey the bounds of the fixed ones (and the runtime's: int32)
        (
            {"epochs": {"type": "int", "min": 1, "max": 10**17}},
            {},
            "tuning.parameters.epochs: its max 100000000000000000 sets training.epochs of a trial, which "
            "the spec refuses: training.epochs must be <= 1000000.",
        ),
        (
            {"per_replica_batch": {"type": "discrete", "values": [16, 3_000_000_000]}},
            {},
            f"training.per_replica_batch must be <= {INT32_MAX}.",
        ),
        (
            {"per_replica_batch": {"type": "int", "min": 8, "max": 10**17}},
            {},
            "tuning.parameters.per_replica_batch: its max 100000000000000000 sets training.per_replica_batch",
        ),
        (
            {"learning_rate": {"type": "float", "min": 0.001, "max": 50}},
            {},
            "tuning.parameters.learning_rate: its max 50 sets training.learning_rate.base of a trial, which "
            "the spec refuses: training.learning_rate.base must be <= 10.",
        ),
    ],
)
def test_a_sweep_is_bounded_before_anything_is_built(parameters: dict, tuning: dict, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        spec(parameters, **tuning)
    assert message in "\n".join(caught.value.problems)


def test_a_tuned_epoch_count_keeps_the_trials_rules() -> None:
    """The cross-field rules hold for every trial too: the warm-up fits the fewest epochs tried."""
    with pytest.raises(SpecError) as caught:
        JobSpec(
            name="demo",
            code={"module": "t"},
            training={"learning_rate": {"warmup_epochs": 3}},
            tuning={"objective": OBJECTIVE, "parameters": {"epochs": {"type": "int", "min": 2, "max": 9}}},
        )
    assert caught.value.problems == [
        "tuning.parameters.epochs: its min 2 sets training.epochs of a trial, which the spec refuses: "
        "training: learning_rate.warmup_epochs=3 is longer than epochs=2; set "
        "training.learning_rate.warmup_epochs to 2 or less. Narrow the parameter to what training.epochs takes."
    ]


def test_a_grid_at_the_limit_is_counted_not_listed() -> None:
    tuning = spec({"units": {"type": "int", "min": 1, "max": 10_000}}, algorithm="grid", max_trials=10).tuning
    assert tuning is not None
    assert (space.grid_size(tuning), search.trials_in_all(tuning)) == (10_000, 10)
    # a random search over a huge range is fine: nothing is listed
    wide = spec({"units": {"type": "int", "min": 1, "max": 2_000_000_000}}, algorithm="random").tuning
    assert wide is not None and search.trials_in_all(wide) == 10
