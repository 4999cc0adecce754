"""The Keras 3 multi-worker fit defects are detected by probes, fixed once, and only when present."""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from keras.src.backend.tensorflow import trainer  # noqa: E402

from cloudtrain_runtime import keras_compat, schedule  # noqa: E402


@pytest.fixture
def restored(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the test patches in Keras's trainer is put back afterwards."""
    monkeypatch.setattr(
        trainer.TensorFlowTrainer, "_maybe_symbolic_build", trainer.TensorFlowTrainer._maybe_symbolic_build
    )
    monkeypatch.setattr(trainer, "reduce_per_replica", trainer.reduce_per_replica)


def test_this_keras_has_both_defects_and_the_fix_removes_them(restored: None) -> None:
    assert keras_compat.reduces_nested_batch(tf)
    assert keras_compat.reduces_scalars_on_axis_0(tf)

    applied = keras_compat.fix_multi_worker_fit(tf)

    assert applied == [keras_compat.BUILD_FROM_SPEC, "mean-of-scalar-logs"]
    assert not keras_compat.reduces_nested_batch(tf)
    assert not keras_compat.reduces_scalars_on_axis_0(tf)
    assert keras_compat.fix_multi_worker_fit(tf) == []  # a fixed Keras is left alone


def test_single_worker_reduction_is_unchanged_by_the_fix(restored: None) -> None:
    keras_compat.fix_multi_worker_fit(tf)
    logs = trainer.reduce_per_replica({"loss": tf.constant(2.0)}, tf.distribute.get_strategy(), "auto")
    assert float(logs["loss"]) == 2.0


def test_warmup_schedule_ramps_linearly_then_holds() -> None:
    import keras

    rate = schedule.learning_rate(keras, keras.ops, 0.4, 4)
    assert [round(float(rate(step)), 6) for step in (0, 1, 3, 10)] == [0.1, 0.2, 0.4, 0.4]
    assert schedule.learning_rate(keras, keras.ops, 0.4, 0) == 0.4
