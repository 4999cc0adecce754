"""The regression trainer with a wider hidden layer: another model on the same storage."""

from __future__ import annotations

from typing import Any

from regression import compile_args, keras, make_dataset, make_validation_dataset

__all__ = ["build_model", "compile_args", "make_dataset", "make_validation_dataset"]


def build_model(config: Any) -> Any:
    inputs = keras.Input((8,), name="features")
    hidden = keras.layers.Dense(32, activation="relu")(inputs)
    return keras.Model(inputs, keras.layers.Dense(1)(hidden))
