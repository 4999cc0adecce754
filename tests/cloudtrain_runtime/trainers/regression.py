"""A tiny deterministic regression for equality checks: no shuffling, a fixed stream.

Runs on Keras 3 (TensorFlow or JAX backend) and on tf_keras (TF_USE_LEGACY_KERAS=1),
so one module checks every flavour against a single-process reference.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import tensorflow as tf

if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
    import tf_keras as keras
else:
    import keras

ROWS = 160  # 5 steps of a global batch of 32


def build_model(config: Any) -> Any:
    inputs = keras.Input((8,), name="features")
    hidden = keras.layers.Dense(16, activation="relu")(inputs)
    return keras.Model(inputs, keras.layers.Dense(1)(hidden))


def compile_args(config: Any) -> dict[str, Any]:
    return {"loss": "mse", "metrics": ["mae"]}


def make_dataset(context: Any) -> tf.data.Dataset:
    x = np.random.default_rng(1).standard_normal((ROWS, 8)).astype(np.float32)
    y = x.sum(axis=1, keepdims=True)
    return tf.data.Dataset.from_tensor_slices((x, y))


def make_validation_dataset(context: Any) -> tf.data.Dataset:
    x = np.random.default_rng(2).standard_normal((64, 8)).astype(np.float32)
    return tf.data.Dataset.from_tensor_slices((x, x.sum(axis=1, keepdims=True)))
