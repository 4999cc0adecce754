"""The regression trainer with dropout and deterministic ops: a resume must restore the random state too.

Op determinism (``tf.config.experimental.enable_op_determinism``) makes two runs of the
same steps give the same weights bit for bit, so an interrupted run can be compared with
an uninterrupted one to 1e-6.
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf
from regression import compile_args, make_dataset, make_validation_dataset

tf.config.experimental.enable_op_determinism()

__all__ = ["build_model", "compile_args", "make_dataset", "make_validation_dataset"]


def build_model(config: Any) -> Any:
    inputs = keras.Input((8,), name="features")
    hidden = keras.layers.Dropout(0.25)(keras.layers.Dense(16, activation="relu")(inputs))
    return keras.Model(inputs, keras.layers.Dense(1)(hidden))
