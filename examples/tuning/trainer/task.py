"""A sweep over the learning rate and the hidden layer's width, as a cloudtrain managed module.

The data is the binary classifier's (8 standard-normal features, label
``0.9·x0 + 0.5·x1 − 0.4·x2 + 0.2·x3 > 0``). ``width`` is read from ``config.hparams``,
where every trial finds its values on every provider; ``learning_rate`` is also a
field of the spec (``training.learning_rate.base``), so cloudtrain compiles Adam at the
trial's rate itself. Each trial reports ``val_binary_accuracy`` after every epoch.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import tensorflow as tf

FEATURES = 8
WEIGHTS = np.array([0.9, 0.5, -0.4, 0.2, 0.0, 0.0, 0.0, 0.0], dtype=np.float32)
TRAIN_ROWS, VALIDATION_ROWS = 256, 128
DEFAULT_WIDTH = 16  # outside a sweep (cloudtrain submit --set tuning=null)


def rows(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` rows of features and 0/1 labels, the same on every host for a seed."""
    features = np.random.default_rng(seed).standard_normal((count, FEATURES)).astype(np.float32)
    labels = (features @ WEIGHTS > 0).astype(np.float32)[:, None]
    return features, labels


def build_model(config: Any) -> keras.Model:
    """One hidden layer of ``hparams["width"]`` units; the input is named ``features`` for serving."""
    width = int(config.hparams.get("width", DEFAULT_WIDTH))
    inputs = keras.Input((FEATURES,), name="features")
    hidden = keras.layers.Dense(width, activation="relu")(inputs)
    outputs = keras.layers.Dense(1, activation="sigmoid", dtype="float32")(hidden)
    return keras.Model(inputs, outputs, name=f"width_{width}")


def compile_args(config: Any) -> dict[str, Any]:
    """Loss and metric; cloudtrain supplies Adam at the trial's learning rate."""
    return {"loss": "binary_crossentropy", "metrics": ["binary_accuracy"]}


def make_dataset(context: Any) -> tf.data.Dataset:
    """Shuffled training examples; the shared seed keeps every host's order identical."""
    dataset = tf.data.Dataset.from_tensor_slices(rows(TRAIN_ROWS, seed=1))
    return dataset.shuffle(TRAIN_ROWS, seed=context.seed, reshuffle_each_iteration=True)


def make_validation_dataset(context: Any) -> tf.data.Dataset:
    """Held-out examples from another seed."""
    return tf.data.Dataset.from_tensor_slices(rows(VALIDATION_ROWS, seed=2))
