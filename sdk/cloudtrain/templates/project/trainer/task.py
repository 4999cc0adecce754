"""The model and data of ${name}, in cloudtrain's managed mode.

cloudtrain calls these functions; it creates the distribution strategy first, batches
by the global batch, shards the input across hosts, compiles with its optimizer at the
scaled learning rate, backs up every epoch and exports a SavedModel from the chief:

- ``build_model(config)``: the Keras model. Give it ``keras.Input`` layers, so the
  export has a ``serving_default`` signature.
- ``make_dataset(context)``: single ``(features, label)`` examples, not batches.
- ``make_validation_dataset(context)`` and ``compile_args(config)``: optional.

The rows below are synthetic (label = x0 + x1 > 0), so the project trains at once.
Replace them with your data: files under a ``data:`` channel are at
``context.channel(name)``, and shuffle with ``context.seed`` so every host agrees.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import tensorflow as tf

FEATURES = 4
TRAIN_ROWS, VALIDATION_ROWS = 256, 64  # job.yaml says training.examples_per_epoch: 256


def rows(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` rows of features and 0/1 labels, the same on every host for a seed."""
    features = np.random.default_rng(seed).standard_normal((count, FEATURES)).astype(np.float32)
    labels = (features[:, 0] + features[:, 1] > 0).astype(np.float32)[:, None]
    return features, labels


def build_model(config: Any) -> keras.Model:
    """A small dense network; the input is named so the serving signature takes ``features``."""
    inputs = keras.Input((FEATURES,), name="features")
    hidden = keras.layers.Dense(16, activation="relu")(inputs)
    outputs = keras.layers.Dense(1, activation="sigmoid", dtype="float32")(hidden)
    return keras.Model(inputs, outputs)


def compile_args(config: Any) -> dict[str, Any]:
    """Loss and metrics; cloudtrain supplies the optimizer at the plan's learning rate."""
    return {"loss": "binary_crossentropy", "metrics": ["binary_accuracy"]}


def make_dataset(context: Any) -> tf.data.Dataset:
    """Training examples, shuffled with the seed every host shares."""
    dataset = tf.data.Dataset.from_tensor_slices(rows(TRAIN_ROWS, seed=1))
    return dataset.shuffle(TRAIN_ROWS, seed=context.seed, reshuffle_each_iteration=True)


def make_validation_dataset(context: Any) -> tf.data.Dataset:
    """Held-out examples from another seed."""
    return tf.data.Dataset.from_tensor_slices(rows(VALIDATION_ROWS, seed=2))
