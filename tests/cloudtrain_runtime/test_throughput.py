"""The throughput measurement counts real optimizer steps, whatever steps_per_execution is.

Real fits of a one-layer model. With ``steps_per_execution=4`` Keras calls the batch
hooks once per execution (3 times for an epoch of 10 batches), so counting hook calls
reported a quarter of the steps and a rate 4x too low.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from cloudtrain_runtime import callbacks  # noqa: E402

BATCH = 8


def _batches(count: int) -> Any:
    rows = count * BATCH
    features = np.linspace(-1, 1, rows * 4, dtype=np.float32).reshape(rows, 4)
    return tf.data.Dataset.from_tensor_slices((features, features.sum(axis=1, keepdims=True))).batch(BATCH)


def _model(steps_per_execution: int) -> Any:
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", steps_per_execution=steps_per_execution)
    return model


class _HookCalls(keras.callbacks.Callback):
    """Counts the batch-end calls Keras makes, to show they are not the steps."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self.calls += 1


def _throughput(warmup_steps: int) -> Any:
    return callbacks.keras_callback(keras, callbacks.Throughput, BATCH, warmup_steps)


def test_steps_per_execution_4_counts_every_optimizer_step() -> None:
    model, hooks, throughput = _model(4), _HookCalls(), _throughput(warmup_steps=10)

    model.fit(_batches(10), epochs=4, callbacks=[hooks, throughput], shuffle=False, verbose=0)

    assert hooks.calls == 4 * 3  # executions of 4, 4 and 2 steps per epoch
    assert int(model.optimizer.iterations.numpy()) == 40
    result = throughput.result()
    # Epoch 1 is the first; epoch 2 starts after 10 steps, the warm-up: epochs 2 to 4 count.
    assert (result["warmup_steps"], result["measured_steps"]) == (10, 30)
    assert result["measured_examples"] == 30 * BATCH
    assert result["examples_per_sec"] == result["measured_examples"] / result["measured_seconds"]
    assert (result["steady"], result["note"]) == (True, None)


def test_a_fixed_steps_per_epoch_on_repeated_data_counts_each_epochs_steps() -> None:
    model, throughput = _model(4), _throughput(warmup_steps=8)

    model.fit(
        _batches(5).repeat(), epochs=3, steps_per_epoch=8, callbacks=[throughput], shuffle=False, verbose=0
    )

    result = throughput.result()
    assert (result["warmup_steps"], result["measured_steps"]) == (8, 16)
    assert result["measured_examples"] == 16 * BATCH


def test_validation_and_a_later_evaluate_are_not_counted_as_training() -> None:
    model, throughput = _model(2), _throughput(warmup_steps=6)
    validation = _batches(7)

    model.fit(
        _batches(6), epochs=3, validation_data=validation, callbacks=[throughput], shuffle=False, verbose=0
    )
    measured = throughput.result()
    model.evaluate(validation, callbacks=[throughput], verbose=0)

    assert (measured["warmup_steps"], measured["measured_steps"]) == (6, 12)
    assert throughput.result() == measured


# regression: a new project's 5 epochs of 8 steps wrote "examples_per_sec": null, which cost refused
def test_a_run_too_short_for_the_warm_up_times_every_epoch_after_the_first_and_says_so() -> None:
    model, throughput = _model(1), _throughput(warmup_steps=callbacks.WARMUP_STEPS)

    model.fit(_batches(16), epochs=3, callbacks=[throughput], shuffle=False, verbose=0)

    result = throughput.result()
    assert (result["warmup_steps"], result["measured_steps"], result["steady"]) == (16, 32, False)
    assert result["examples_per_sec"] == 32 * BATCH / result["measured_seconds"] > 0
    assert result["note"].startswith("timed over every epoch after the first, after a warm-up of 16 steps")


def test_one_epoch_has_nothing_timed_and_says_how_to_get_a_rate() -> None:
    model, throughput = _model(1), _throughput(warmup_steps=callbacks.WARMUP_STEPS)

    model.fit(_batches(16), epochs=1, callbacks=[throughput], shuffle=False, verbose=0)

    result = throughput.result()
    assert result["examples_per_sec"] is None and result["measured_steps"] == 0
    assert "Train 2 epochs or more" in result["note"]
