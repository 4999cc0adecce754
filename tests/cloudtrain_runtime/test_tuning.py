"""The speed switches: checked alike by the spec and the runtime, carried by the plan, resolved here.

``training.steps_per_execution``, ``jit_compile``, ``cache``, ``prefetch`` and
``parallel_map`` are defined once in ``cloudtrain_runtime.config``; ``auto`` is decided by
``cloudtrain_runtime.tuning`` from the strategy, the Keras in use and the dataset.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cloudtrain.api import plan
from cloudtrain.container import runtime_config_json
from cloudtrain.errors import SpecError
from cloudtrain.spec import JobSpec
from cloudtrain.specfile import parse_spec
from cloudtrain_runtime import config, data, tuning
from cloudtrain_runtime.errors import ConfigError
from tests.cloudtrain_runtime.harness import runtime_config

SWITCHES = {
    "steps_per_execution": 4,
    "jit_compile": False,
    "cache": True,
    "prefetch": False,
    "parallel_map": False,
}


def _spec(**training: Any) -> dict[str, Any]:
    return {"name": "demo", "code": {"module": "trainer.task"}, "training": training}


def test_the_switches_travel_from_the_spec_to_the_runtime_config() -> None:
    spec = JobSpec(**_spec(steps_per_epoch=8, **SWITCHES))
    parsed = config.parse(runtime_config_json(plan(spec, "local")), "CLOUDTRAIN_CONFIG")
    assert {name: getattr(parsed, name) for name in SWITCHES} == SWITCHES


def test_a_spec_without_switches_gets_the_runtimes_defaults() -> None:
    runtime = plan(JobSpec(**_spec()), "local").runtime
    assert {name: getattr(runtime, name) for name in config.SWITCH_DOCS} == {
        "steps_per_execution": "auto",
        "jit_compile": "auto",
        "cache": "auto",
        "prefetch": True,
        "parallel_map": True,
    }


@pytest.mark.parametrize(
    ("training", "line"),
    [
        (  # a word other than auto
            {"steps_per_execution": "max"},
            "training.steps_per_execution: must be 'auto' or a whole number from 1 to 2147483647. "
            "Received: training.steps_per_execution='max'.",
        ),
        (  # zero steps per call
            {"steps_per_execution": 0},
            "training.steps_per_execution: must be 'auto' or a whole number from 1 to 2147483647. "
            "Received: training.steps_per_execution=0.",
        ),
        (  # YAML's yes is a boolean, not a count
            {"steps_per_execution": True},
            "training.steps_per_execution: must be 'auto' or a whole number from 1 to 2147483647. "
            "Received: training.steps_per_execution=True.",
        ),
        (  # a string where true/false is meant
            {"jit_compile": "on"},
            "training.jit_compile: must be 'auto', true or false. Received: training.jit_compile='on'.",
        ),
        (  # prefetch has no auto
            {"prefetch": "auto"},
            "training.prefetch: must be true or false. Received: training.prefetch='auto'.",
        ),
        (  # 10 steps at 4 per call would train 12 per epoch
            {"steps_per_epoch": 10, "steps_per_execution": 4},
            "training.steps_per_execution: does not divide training.steps_per_epoch=10: each epoch would "
            "train 12 steps. Set training.steps_per_execution to a divisor of 10, or to auto. "
            "Received: training.steps_per_execution=4.",
        ),
    ],
)
def test_bad_switches_name_the_field_the_value_and_the_fix(training: dict[str, Any], line: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_spec(_spec(**training))
    assert line in str(err.value)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("steps_per_execution", -1, "'auto' or a whole number from 1 to 2147483647"),  # negative
        ("steps_per_execution", 2.0, "'auto' or a whole number from 1 to 2147483647"),  # float
        ("cache", "sometimes", "'auto', true or false"),  # unknown word
        ("parallel_map", 1, "true or false"),  # a number for a boolean
    ],
)
def test_the_runtime_refuses_what_the_spec_refuses(
    tmp_path: Path, key: str, value: Any, expected: str
) -> None:
    with pytest.raises(ConfigError) as err:
        config.from_dict(runtime_config(tmp_path, **{key: value}), "CLOUDTRAIN_CONFIG")
    assert f"key {key!r} must be {expected}. Received: {key}={value!r}" in str(err.value)


def test_the_runtime_refuses_executions_that_overrun_the_epoch(tmp_path: Path) -> None:
    raw = runtime_config(tmp_path, steps_per_epoch=10, steps_per_execution=4)
    with pytest.raises(
        ConfigError, match=r"steps_per_execution=4 does not divide training.steps_per_epoch=10"
    ):
        config.from_dict(raw, "CLOUDTRAIN_CONFIG")


@pytest.mark.parametrize(
    ("requested", "strategy", "keras", "steps_per_epoch", "expected"),
    [
        ("auto", "one-device", "keras", None, 16),  # the measured default
        ("auto", "one-device", "keras", 100, 10),  # a divisor, so no epoch trains extra steps
        ("auto", "one-device", "keras", 64, 16),  # 16 divides 64
        ("auto", "mirrored", "keras", None, 1),  # keras-team/keras#19246
        ("auto", "multi-worker", "keras", None, 1),  # keras-team/keras#19246
        ("auto", "one-device", "tf_keras", None, 1),  # not measured
        ("auto", "one-device", "jax", None, 1),  # not measured
        (8, "one-device", "keras", None, 8),  # the spec's number
        (8, "multi-worker", "tf_keras", None, 8),  # tf_keras runs it under tf.distribute
        ("auto", "tpu", "keras", None, 1),  # not measured on TPUs
        (8, "tpu", "keras", None, 8),  # the spec's number, where Keras is not known to fail
        (1, "mirrored", "keras", None, 1),  # one step is always possible
    ],
)
def test_steps_per_execution(
    requested: int | str, strategy: str, keras: str, steps_per_epoch: int | None, expected: int
) -> None:
    chosen = tuning.steps_per_execution(
        requested, strategy=strategy, keras=keras, steps_per_epoch=steps_per_epoch
    )
    assert chosen.value == expected


def test_several_steps_per_call_under_tf_distribute_is_refused_with_the_fix() -> None:
    with pytest.raises(ConfigError) as err:
        tuning.steps_per_execution(4, strategy="mirrored", keras="keras", steps_per_epoch=None)
    assert "keras-team/keras#19246" in str(err.value)
    assert "Set training.steps_per_execution: auto (or 1)." in str(err.value)


@pytest.mark.parametrize(
    ("requested", "strategy", "expected"),
    [
        ("auto", "mirrored", "auto"),  # Keras decides: off under tf.distribute and on CPU
        (True, "one-device", True),  # forced on
        (False, "multi-worker", False),  # forced off is always possible
    ],
)
def test_jit_compile(requested: bool | str, strategy: str, expected: bool | str) -> None:
    assert tuning.jit_compile(requested, strategy=strategy, keras="keras").value == expected


def test_xla_under_tf_distribute_is_refused_with_the_fix() -> None:
    with pytest.raises(ConfigError, match=r"Set training.jit_compile: auto \(or false\)"):
        tuning.jit_compile(True, strategy="multi-worker", keras="keras")


def test_the_spec_wins_over_compile_args_which_win_over_auto(tmp_path: Path) -> None:
    user = {"steps_per_execution": 4, "jit_compile": True}
    settings = tuning.compile_settings(
        config.from_dict(runtime_config(tmp_path, jit_compile=False), "test"),
        user,
        strategy="one-device",
        keras="keras",
        steps_per_epoch=None,
    )
    assert settings["steps_per_execution"] == tuning.Setting(4, "set by compile_args()")
    assert settings["jit_compile"] == tuning.Setting(False, "set in the spec")


tf = pytest.importorskip("tensorflow")


def _examples(rows: int = 64) -> Any:
    features = np.arange(rows * 4, dtype=np.float32).reshape(rows, 4)
    return tf.data.Dataset.from_tensor_slices((features, features[:, :1]))


def _scaled(features: Any, label: Any) -> tuple[Any, Any]:
    return features / 10.0, label


@pytest.mark.parametrize(
    ("dataset", "reason"),
    [
        (lambda: _examples().shuffle(64, seed=0).map(_scaled), "shuffles"),  # each epoch in a new order
        (lambda: _examples().map(lambda x, y: (x + tf.random.uniform((4,)), y)), "random"),  # augmentation
        (lambda: _examples(), "nothing to save"),  # already in memory
        (lambda: _examples().map(_scaled).repeat(), "repeats"),  # endless
        (lambda: _examples().map(_scaled).filter(lambda x, y: y[0] > 3), "unknown"),  # length unknown
        (
            lambda: tf.data.Dataset.from_tensor_slices(["a", "b"]).map(tf.strings.upper),
            "no fixed size",
        ),  # strings
    ],
)
def test_auto_cache_refuses_what_it_cannot_keep_safely(dataset: Any, reason: str) -> None:
    chosen = tuning.cache(tf, dataset(), "auto", sharded_by_file=False)
    assert chosen.value is False and reason in chosen.reason


def test_auto_cache_keeps_a_steady_mapped_dataset_that_fits() -> None:
    chosen = tuning.cache(tf, _examples().map(_scaled), "auto", sharded_by_file=False)
    assert chosen == tuning.Setting(True, "auto: the same 64 examples every epoch, 0.0 MiB")


def test_auto_cache_leaves_file_sharded_input_alone() -> None:
    chosen = tuning.cache(tf, _examples().map(_scaled), "auto", sharded_by_file=True)
    assert chosen.value is False and "FILE" in chosen.reason


def test_auto_cache_keeps_within_a_quarter_of_the_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    # 64 examples of 5 float32 are 1,280 bytes: more than a quarter of 4 KiB.
    monkeypatch.setattr(tuning, "memory_bytes", lambda: 4096)
    chosen = tuning.cache(tf, _examples().map(_scaled), "auto", sharded_by_file=False)
    assert chosen.value is False and "1/4 of this host's memory" in chosen.reason


def test_memory_is_the_containers_limit_when_it_has_one(tmp_path: Path) -> None:
    limit = tmp_path / "memory.max"
    limit.write_text("1048576\n")
    assert tuning.memory_bytes(str(limit)) == 1048576
    limit.write_text("max\n")  # no limit: the machine's memory
    assert tuning.memory_bytes(str(limit)) > 1048576


def test_cache_true_on_an_endless_dataset_is_refused() -> None:
    with pytest.raises(ConfigError, match="repeats forever"):
        tuning.cache(tf, _examples().repeat(), True, sharded_by_file=False)


def _ops(dataset: Any) -> bytes:
    return tf.raw_ops.DatasetToGraphV2(input_dataset=dataset._variant_tensor).numpy()


def test_prepare_caches_and_prefetches_when_told() -> None:
    context = data.DataContext("train", 8, 8, 1, 1, 0, {}, 1, None, True, 0)
    fast = data.prepare(
        tf,
        _examples(),
        context=context,
        shard_by_process=False,
        log=print,
        speed=data.InputSpeed(True, True, True),
    )
    plain = data.prepare(
        tf,
        _examples(),
        context=context,
        shard_by_process=False,
        log=print,
        speed=data.InputSpeed(False, False, False),
    )
    assert b"CacheDataset" in _ops(fast) and b"CacheDataset" not in _ops(plain)
    assert b"PrefetchDataset" in _ops(fast) and b"PrefetchDataset" not in _ops(plain)
    assert fast.options().experimental_optimization.map_parallelization is True
    assert plain.options().experimental_optimization.map_parallelization is False
    assert plain.options().experimental_optimization.parallel_batch is False
    assert [len(batch[0]) for batch in fast] == [len(batch[0]) for batch in plain] == [8] * 8


def test_validation_data_is_not_prefetched() -> None:
    # An AUTOTUNE prefetch there kept tf.data's tuning busy during the next epoch's training.
    context = data.DataContext("validation", 8, 8, 1, 1, 0, {}, 1, None, True, 0)
    prepared = data.prepare(tf, _examples(), context=context, shard_by_process=False, log=print)
    assert b"PrefetchDataset" not in _ops(prepared)


def test_the_speed_line_lists_each_setting_and_its_reason() -> None:
    settings = {
        "cache_train": tuning.Setting(False, "auto: it repeats"),
        "steps_per_execution": tuning.Setting(16, "auto"),
        "prefetch": tuning.Setting(False, "default"),
    }
    assert tuning.line(settings) == (
        "speed: steps_per_execution=16 (auto), cache_train=off (auto: it repeats), prefetch=off (default)"
    )
