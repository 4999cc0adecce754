"""The entrypoint's TensorBoard callback writes summaries only at the frequency asked for.

Keras 3.15's own callback calls ``tf.summary.scalar`` for every metric after every step
even with ``update_freq="epoch"``, where nothing records them (about 110 us a step for
two metrics). A spy around ``tf.summary`` sees every call the callback makes; the event
files show what reached the disk.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from tensorflow.core.util import event_pb2  # noqa: E402

from cloudtrain_runtime import callbacks  # noqa: E402

# Keras's TensorBoard reads the learning rate with np.asarray on a Keras variable, whose
# __array__ takes no copy argument (keras/src/callbacks/tensorboard.py, _collect_learning_rate).
pytestmark = pytest.mark.filterwarnings(
    "ignore:__array__ implementation doesn't accept a copy keyword:DeprecationWarning"
)

STEPS, EPOCHS = 10, 2


class _Spy:
    """``tf.summary`` as the callback sees it, noting each ``scalar`` call's name and step."""

    def __init__(self) -> None:
        self.scalars: list[tuple[str, int]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(tf.summary, name)

    def scalar(self, name: str, data: Any, step: Any = None, **kwargs: Any) -> Any:
        self.scalars.append((name, int(step)))
        return tf.summary.scalar(name, data, step=step, **kwargs)


def _fit(log_dir: Path, **options: Any) -> _Spy:
    features = np.linspace(-1, 1, STEPS * 8 * 4, dtype=np.float32).reshape(-1, 4)
    data = tf.data.Dataset.from_tensor_slices((features, features.sum(axis=1, keepdims=True))).batch(8)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    callback = callbacks.tensorboard(keras, str(log_dir), **options)
    spy = callback._summary_module = _Spy()
    model.fit(
        data, epochs=EPOCHS, validation_data=data.take(2), callbacks=[callback], shuffle=False, verbose=0
    )
    return spy


def _written(folder: Path) -> dict[str, list[int]]:
    """Each scalar tag in the event files under ``folder``, with the steps it was written at."""
    tags: dict[str, list[int]] = {}
    for path in sorted(folder.glob("events.out.tfevents.*")):
        for record in tf.data.TFRecordDataset(str(path)):
            event = event_pb2.Event.FromString(record.numpy())
            for value in event.summary.value:
                tags.setdefault(value.tag, []).append(event.step)
    return tags


def test_epoch_frequency_makes_no_per_step_summary_calls_and_writes_epoch_scalars(tmp_path: Path) -> None:
    spy = _fit(tmp_path)

    assert [name for name, _ in spy.scalars if name.startswith("batch_")] == []
    train, validation = _written(tmp_path / "train"), _written(tmp_path / "validation")
    assert train["epoch_loss"] == train["epoch_mae"] == [0, 1]
    assert validation["epoch_loss"] == validation["epoch_mae"] == [0, 1]
    assert not [tag for tag in train if tag.startswith("batch_")]


def test_an_integer_frequency_writes_every_nth_step_only(tmp_path: Path) -> None:
    spy = _fit(tmp_path, update_freq=3)

    steps = [step for name, step in spy.scalars if name == "batch_loss"]
    assert steps == [3, 6, 9, 12, 15, 18]  # not one call per step: 20 steps, 6 written
    assert _written(tmp_path / "train")["batch_loss"] == steps
