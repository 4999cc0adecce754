"""Input sharding: FILE for datasets that read files, DATA with a warning otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

tf = pytest.importorskip("tensorflow")

from cloudtrain_runtime import data  # noqa: E402
from cloudtrain_runtime.errors import ConfigError, UserCodeError  # noqa: E402

POLICY = tf.data.experimental.AutoShardPolicy


def _context(split: str = "train", pipelines: int = 2, steps: int | None = 4) -> data.DataContext:
    return data.DataContext(split, 4, 8, 2, pipelines, 0, {}, 1, steps, True, 0)


def _records(tmp_path: Path) -> tf.data.Dataset:
    for i in range(2):
        with tf.io.TFRecordWriter(str(tmp_path / f"part-{i}.tfrecord")) as writer:
            writer.write(b"x")
    return tf.data.Dataset.list_files(str(tmp_path / "*.tfrecord"), shuffle=False).interleave(
        tf.data.TFRecordDataset
    )


def test_file_reader_inside_interleave_is_detected(tmp_path: Path) -> None:
    assert data.reads_files(tf, _records(tmp_path))
    assert not data.reads_files(tf, tf.data.Dataset.range(8).map(lambda x: x * 2))


def test_files_shard_by_file_and_say_so(tmp_path: Path) -> None:
    lines: list[str] = []
    prepared = data.prepare(
        tf, _records(tmp_path), context=_context(), shard_by_process=False, log=lines.append
    )
    assert prepared.options().experimental_distribute.auto_shard_policy == POLICY.FILE
    assert lines == ["input: the train dataset reads files, sharded by FILE over 2 hosts"]


def test_in_memory_data_falls_back_to_data_with_a_warning() -> None:
    lines: list[str] = []
    prepared = data.prepare(
        tf, tf.data.Dataset.range(64), context=_context(), shard_by_process=False, log=lines.append
    )
    assert prepared.options().experimental_distribute.auto_shard_policy == POLICY.DATA
    assert len(lines) == 1 and lines[0].startswith("warning: ") and "falls back to DATA" in lines[0]
    assert "list_files" in lines[0]


def test_validation_is_sharded_by_data_silently(tmp_path: Path) -> None:
    lines: list[str] = []
    prepared = data.prepare(
        tf, _records(tmp_path), context=_context("validation"), shard_by_process=False, log=lines.append
    )
    assert prepared.options().experimental_distribute.auto_shard_policy == POLICY.DATA
    assert lines == []


def test_file_sharding_needs_fixed_steps(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"Set training\.steps_per_epoch"):
        data.prepare(tf, _records(tmp_path), context=_context(steps=None), shard_by_process=False, log=print)


def test_batches_by_the_global_batch_and_drops_the_remainder() -> None:
    prepared = data.prepare(
        tf,
        tf.data.Dataset.range(20),
        context=_context(pipelines=1, steps=None),
        shard_by_process=False,
        log=print,
    )
    assert [len(batch) for batch in prepared] == [8, 8]


def test_jax_processes_take_their_own_shard() -> None:
    context = data.DataContext("train", 4, 8, 2, 2, 1, {}, 1, None, False, 0)
    prepared = data.prepare(tf, tf.data.Dataset.range(16), context=context, shard_by_process=True, log=print)
    assert [list(batch.numpy()) for batch in prepared] == [[1, 3, 5, 7], [9, 11, 13, 15]]


def test_a_non_dataset_is_a_user_error() -> None:
    with pytest.raises(
        UserCodeError, match=r"task\.py: make_dataset\(\) must return a tf.data.Dataset .* not ndarray"
    ):
        import numpy as np

        data.check_dataset(tf, np.zeros(3), "task.py: make_dataset()")


def test_unknown_channel_lists_the_declared_ones() -> None:
    context = data.DataContext("train", 4, 8, 2, 1, 0, {"train": Path("/d")}, 1, None, True, 0)
    assert context.channel("train") == Path("/d")
    with pytest.raises(ConfigError, match=r"'eval' is not in the spec. Declared: \['train'\]"):
        context.channel("eval")
