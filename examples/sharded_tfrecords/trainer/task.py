"""A larger example whose input is sharded TFRecord files, so each host reads only its files.

8 training shards of 1,024 examples (16 standard-normal features; the label says
whether a fixed linear score is positive) and 1 validation shard. Because
``make_dataset`` reads the files through ``tf.data.Dataset.list_files``, cloudtrain
shards the input by FILE: with 2 hosts each reads 4 shards, instead of every host
reading everything and dropping half (DATA sharding). FILE sharding needs a fixed
``training.steps_per_epoch`` (job.yaml), because hosts' shards may differ in length.

The shards are generated on first run into ``data/`` next to this package (or into
the ``train`` data channel when the spec declares one). Every host writes identical
bytes and renames atomically, so hosts starting together never see half a file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

FEATURES = 16
SHARDS, ROWS_PER_SHARD, VALIDATION_ROWS = 8, 1024, 1024
SCORE = np.random.default_rng(0).standard_normal(FEATURES).astype(np.float32)
DATA = Path(__file__).resolve().parents[1] / "data"


def _example(features: np.ndarray, label: float) -> bytes:
    feature = {
        "features": tf.train.Feature(float_list=tf.train.FloatList(value=features.tolist())),
        "label": tf.train.Feature(float_list=tf.train.FloatList(value=[label])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def write_shard(path: Path, rows: int, seed: int) -> None:
    """Write one shard atomically: a temporary file per process, then a rename."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    features = np.random.default_rng(seed).standard_normal((rows, FEATURES)).astype(np.float32)
    labels = (features @ SCORE > 0).astype(np.float32)
    temp = path.with_name(f".{path.name}.{os.getpid()}")
    with tf.io.TFRecordWriter(str(temp)) as writer:
        for row, label in zip(features, labels, strict=True):
            writer.write(_example(row, float(label)))
    os.replace(temp, path)


def _folder(context: Any) -> Path:
    return context.channels.get("train", DATA)


def _parse(record: tf.Tensor) -> tuple[dict[str, tf.Tensor], tf.Tensor]:
    spec = {
        "features": tf.io.FixedLenFeature([FEATURES], tf.float32),
        "label": tf.io.FixedLenFeature([1], tf.float32),
    }
    parsed = tf.io.parse_single_example(record, spec)
    return {"features": parsed["features"]}, parsed["label"]


def _read(pattern: str, seed: int) -> tf.data.Dataset:
    files = tf.data.Dataset.list_files(pattern, shuffle=True, seed=seed)
    records = files.interleave(tf.data.TFRecordDataset, cycle_length=2, num_parallel_calls=tf.data.AUTOTUNE)
    return records.map(_parse, num_parallel_calls=tf.data.AUTOTUNE)


def make_dataset(context: Any) -> tf.data.Dataset:
    """Training examples read from the shards (FILE-sharded across hosts by cloudtrain)."""
    folder = _folder(context)
    for shard in range(SHARDS):
        write_shard(folder / f"train-{shard:05d}-of-{SHARDS:05d}.tfrecord", ROWS_PER_SHARD, seed=100 + shard)
    dataset = _read(str(folder / "train-*.tfrecord"), context.seed)
    return dataset.shuffle(4 * ROWS_PER_SHARD // SHARDS, seed=context.seed)


def make_validation_dataset(context: Any) -> tf.data.Dataset:
    """Validation examples from their own shard."""
    path = _folder(context) / "validation-00000-of-00001.tfrecord"
    write_shard(path, VALIDATION_ROWS, seed=99)
    return _read(str(path), context.seed)


def build_model(config: Any) -> keras.Model:
    """Dense 64-32-1 over a named ``features`` input, so serving takes {"features": ...}."""
    inputs = keras.Input((FEATURES,), name="features")
    hidden = keras.layers.Dense(64, activation="relu")(inputs)
    hidden = keras.layers.Dense(32, activation="relu")(hidden)
    outputs = keras.layers.Dense(1, activation="sigmoid", dtype="float32")(hidden)
    return keras.Model(inputs, outputs, name="sharded_tfrecords")


def compile_args(config: Any) -> dict[str, Any]:
    """Loss and metric; cloudtrain adds Adam at the scaled rate with its warm-up."""
    return {"loss": "binary_crossentropy", "metrics": ["binary_accuracy"]}
