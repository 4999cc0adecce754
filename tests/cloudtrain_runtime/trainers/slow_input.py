"""A model whose input is far slower than its step: reading each example takes 2 ms.

The wait is a ``tf.py_function`` that sleeps, so it costs no CPU and tf.data cannot run it
in parallel (a py_function is stateful): 16 examples make a step wait 32 ms for input,
against well under a millisecond of compute for this model.
"""

from __future__ import annotations

import time
from typing import Any

import keras
import numpy as np
import tensorflow as tf

ROWS = 64
READ_S = 0.002


def build_model(config: Any) -> Any:
    inputs = keras.Input((8,), name="features")
    return keras.Model(inputs, keras.layers.Dense(1)(inputs))


def compile_args(config: Any) -> dict[str, Any]:
    return {"loss": "mse"}


def _read(features: Any) -> Any:
    time.sleep(READ_S)
    return features


def _slow(features: Any, label: Any) -> tuple[Any, Any]:
    read = tf.py_function(_read, [features], tf.float32)
    read.set_shape(features.shape)
    return read, label


def make_dataset(context: Any) -> tf.data.Dataset:
    x = np.random.default_rng(1).standard_normal((ROWS, 8)).astype(np.float32)
    examples = tf.data.Dataset.from_tensor_slices((x, x.sum(axis=1, keepdims=True)))
    # Shuffled, so training.cache: auto does not keep the read examples (nor would training).
    return examples.shuffle(ROWS, seed=context.seed).map(_slow)
