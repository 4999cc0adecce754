"""Script mode: your own training script, with cloudtrain's strategy, batches, backups and export.

The script builds and fits the model itself; ``cloudtrain_runtime.setup()`` hands it
the strategy scope, the scaled learning rate, the input distribution, the callbacks
(backups, progress, throughput) and ``export()``, which every task calls and only
the chief keeps. The same script runs unchanged on 1 device, several devices, or
several hosts.

    cloudtrain submit job.yaml        # 1 host × 2 emulated devices: MirroredStrategy
"""

from __future__ import annotations

import argparse

import numpy as np
import tensorflow as tf

import cloudtrain_runtime

WEIGHTS = np.array([0.9, 0.5, -0.4, 0.2, 0.0, 0.0, 0.0, 0.0], dtype=np.float32)


def examples(count: int, seed: int) -> tf.data.Dataset:
    """Single (features, label) examples; label = weighted sum > 0."""
    features = np.random.default_rng(seed).standard_normal((count, 8)).astype(np.float32)
    labels = (features @ WEIGHTS > 0).astype(np.float32)[:, None]
    return tf.data.Dataset.from_tensor_slices((features, labels))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hidden", type=int, default=32, help="units in the first hidden layer")
    args = parser.parse_args()

    session = cloudtrain_runtime.setup()
    keras = session.keras
    train = session.distribute(examples(512, seed=1).shuffle(512, seed=session.context("train").seed))
    validation = session.distribute(examples(128, seed=2), "validation")
    with session.scope():
        inputs = keras.Input((8,), name="features")
        hidden = keras.layers.Dense(args.hidden, activation="relu")(inputs)
        outputs = keras.layers.Dense(1, activation="sigmoid")(hidden)
        model = keras.Model(inputs, outputs)
        rate = session.learning_rate(steps_per_epoch=512 // session.global_batch)
        model.compile(
            optimizer=keras.optimizers.Adam(rate), loss="binary_crossentropy", metrics=["binary_accuracy"]
        )
    model.fit(
        train,
        validation_data=validation,
        epochs=session.config.epochs,
        callbacks=session.callbacks,
        verbose=0,
    )
    session.export(model)


if __name__ == "__main__":
    main()
