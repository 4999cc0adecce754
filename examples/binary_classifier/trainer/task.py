"""The classic multi-GPU smoke test as a cloudtrain managed module.

8 standard-normal features; the label is ``0.9·x0 + 0.5·x1 − 0.4·x2 + 0.2·x3 > 0``.
512 training and 128 validation rows from fixed seeds, so every host generates the
same rows and cloudtrain's DATA sharding gives each its share. Dense 32-16-1, binary
cross-entropy, binary accuracy. cloudtrain batches, distributes, compiles with Adam
at the spec's learning rate, backs up, and exports the ``features`` input for serving.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import tensorflow as tf

FEATURES = 8
WEIGHTS = np.array([0.9, 0.5, -0.4, 0.2, 0.0, 0.0, 0.0, 0.0], dtype=np.float32)
TRAIN_ROWS, VALIDATION_ROWS = 512, 128


def rows(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` rows of features and 0/1 labels, the same on every host for a seed."""
    features = np.random.default_rng(seed).standard_normal((count, FEATURES)).astype(np.float32)
    labels = (features @ WEIGHTS > 0).astype(np.float32)[:, None]
    return features, labels


def build_model(config: Any) -> keras.Model:
    """Dense 32-16-1; the input is named so the serving signature takes ``features``."""
    inputs = keras.Input((FEATURES,), name="features")
    hidden = keras.layers.Dense(32, activation="relu")(inputs)
    hidden = keras.layers.Dense(16, activation="relu")(hidden)
    outputs = keras.layers.Dense(1, activation="sigmoid", dtype="float32")(hidden)
    return keras.Model(inputs, outputs, name="binary_classifier")


def compile_args(config: Any) -> dict[str, Any]:
    """Loss and metrics; cloudtrain supplies Adam at the plan's learning rate."""
    return {"loss": "binary_crossentropy", "metrics": ["binary_accuracy"]}


def make_dataset(context: Any) -> tf.data.Dataset:
    """Shuffled training examples; the shared seed keeps every host's order identical."""
    dataset = tf.data.Dataset.from_tensor_slices(rows(TRAIN_ROWS, seed=1))
    return dataset.shuffle(TRAIN_ROWS, seed=context.seed, reshuffle_each_iteration=True)


def make_validation_dataset(context: Any) -> tf.data.Dataset:
    """Held-out examples from another seed."""
    return tf.data.Dataset.from_tensor_slices(rows(VALIDATION_ROWS, seed=2))
