"""Input pipelines: what the user's dataset functions get, and what cloudtrain does to their datasets.

The user returns a ``tf.data.Dataset`` of single examples; cloudtrain batches it with
the global batch (``drop_remainder=True``: every replica must step in lockstep, and
a short last batch would make the all-reduce wait forever), repeats it when
``steps_per_epoch`` is set and shards it. For speed (``InputSpeed``, from the
``training.cache``, ``prefetch`` and ``parallel_map`` switches) it caches the examples in
memory, lets tf.data parallelise stateless maps and batching, and prefetches training batches.

Sharding across hosts: a dataset that reads files (TFRecord, text lines or
fixed-length records) is sharded by FILE, so each worker reads only its files. Any
other dataset falls back to DATA sharding, where every worker reads everything and
keeps its share, and a warning says how to fix it. Validation data is always
sharded by DATA, so every worker evaluates the same number of batches. On Keras-on-JAX each process
reads ``dataset.shard(num_hosts, rank)`` itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from cloudtrain_runtime.errors import ConfigError, UserCodeError

# Dataset ops TensorFlow's FILE auto-sharding recognises as file readers.
_READER_OPS = (b"TFRecordDataset", b"TextLineDataset", b"FixedLengthRecordDataset")


@dataclass(frozen=True)
class DataContext:
    """What ``make_dataset(context)`` and ``make_validation_dataset(context)`` receive.

    Attributes:
        split: ``train`` or ``validation``.
        per_replica_batch: examples per replica per step.
        global_batch: examples per step over all replicas.
        replicas: replicas in sync.
        num_input_pipelines: hosts reading input (cloudtrain shards across them).
        input_pipeline_id: this host's rank among them.
        channels: data channel name → local path (``data:`` in the spec).
        epochs: epochs to train.
        steps_per_epoch: fixed steps per epoch, or None to run each dataset to its end.
        is_chief: whether this host is the chief.
        seed: the seed every task shares; shuffle with it so all hosts agree.
        hparams: a sweep trial's hyperparameter values by name; empty outside a sweep.
    """

    split: str
    per_replica_batch: int
    global_batch: int
    replicas: int
    num_input_pipelines: int
    input_pipeline_id: int
    channels: Mapping[str, Path]
    epochs: int
    steps_per_epoch: int | None
    is_chief: bool
    seed: int
    hparams: Mapping[str, Any] = field(default_factory=dict)

    def channel(self, name: str) -> Path:
        """The local path of data channel ``name``.

        Raises:
            ConfigError: naming the channels the spec declares.
        """
        if name not in self.channels:
            raise ConfigError(
                f"data channel {name!r} is not in the spec. Declared: {sorted(self.channels) or 'none'}. "
                f"Add it under data: in job.yaml."
            )
        return self.channels[name]


def reads_files(tf: ModuleType, dataset: Any) -> bool:
    """Whether ``dataset``'s graph (interleave functions included) contains a file reader op."""
    graph = tf.raw_ops.DatasetToGraphV2(input_dataset=dataset._variant_tensor).numpy()
    return any(op in graph for op in _READER_OPS)


def check_dataset(tf: ModuleType, dataset: Any, producer: str) -> None:
    """The user's function must return a ``tf.data.Dataset``.

    Raises:
        UserCodeError: naming the function and what it returned instead.
    """
    if not isinstance(dataset, tf.data.Dataset):
        raise UserCodeError(
            f"{producer} must return a tf.data.Dataset of single examples, not {type(dataset).__name__}. "
            "Wrap arrays with tf.data.Dataset.from_tensor_slices((features, labels))."
        )


@dataclass(frozen=True)
class InputSpeed:
    """What ``prepare`` adds for speed (``training.cache``, ``prefetch``, ``parallel_map``, resolved)."""

    cache: bool = False
    prefetch: bool = True
    parallel_map: bool = True


def prepare(
    tf: ModuleType,
    dataset: Any,
    *,
    context: DataContext,
    shard_by_process: bool,
    log: Callable[[str], None],
    speed: InputSpeed = InputSpeed(),
) -> Any:
    """Cache, repeat, batch, shard and prefetch a user dataset for this replica (see module docstring)."""
    batch = context.global_batch
    if shard_by_process:
        dataset = dataset.shard(context.num_input_pipelines, context.input_pipeline_id)
        batch //= context.num_input_pipelines
    if speed.cache:
        dataset = dataset.cache()
    if context.steps_per_epoch and context.split == "train":
        dataset = dataset.repeat()
    dataset = dataset.batch(batch, drop_remainder=True)
    if context.num_input_pipelines > 1 and not shard_by_process:
        dataset = dataset.with_options(_shard_options(tf, dataset, context, log))
    dataset = dataset.with_options(_parallel_options(tf, speed.parallel_map))
    # Training data only: an AUTOTUNE prefetch on the validation data left tf.data's tuning at
    # work during the next epoch's training, 0.94x its examples/s on CPU (entrypoint_overhead.py).
    return dataset.prefetch(tf.data.AUTOTUNE) if speed.prefetch and context.split == "train" else dataset


def whole_passes(dataset: Any, context: DataContext) -> bool:
    """Whether every epoch reads the user's training dataset exactly once, so epoch N is its Nth pass.

    True without ``steps_per_epoch`` (an epoch ends with the data), and where the
    steps of an epoch cover the dataset's known size exactly; a resumed run can then
    start its input at the pass an uninterrupted run would be at (``start_at_epoch``).
    """
    if not context.steps_per_epoch:
        return True
    rows = int(dataset.cardinality())
    return rows >= 0 and rows // context.global_batch == context.steps_per_epoch


def start_at_epoch(
    dataset: Any, epochs_done: int, *, repeated: bool, whole_passes: bool, log: Callable[[str], None]
) -> None:
    """Move ``dataset`` on to where an uninterrupted run's input is after ``epochs_done`` epochs.

    A dataset shuffled with a seed and ``reshuffle_each_iteration`` draws a new order from
    a seed generator each time an iterator over it starts a pass, counting from the
    dataset's creation, so a run resumed after epoch N would otherwise read its next
    epoch in the first pass's order. Creating (and dropping) iterators moves the
    generator on as ``fit`` would have, and reads nothing: tf.data's shuffle draws its
    seeds when an iterator is created and fills its buffer only when asked for an
    element. It must happen before ``fit`` distributes the dataset: the per-worker
    copies start from the generator as it is then. How many iterators ``fit`` made in N
    epochs is Keras 3's ``EpochIterator._enumerate_iterator`` (keras 3.15): one, whose
    repeat starts one pass an epoch, when ``repeated`` (``steps_per_epoch`` set); else two
    an epoch where the number of batches is known (one for the epoch, one made when it
    ends) and one where it is not. Where an epoch is not one whole pass over the data
    (``whole_passes``) the order cannot be recovered this way, and a warning says so.
    """
    if not epochs_done:
        return
    if not whole_passes:
        log(
            "warning: an epoch here is not one whole pass over the training data, so the resumed "
            "epochs read it in another order than an uninterrupted run would"
        )
        return
    per_epoch = 1 if repeated or int(dataset.cardinality()) < 0 else 2
    for _ in range(epochs_done * per_epoch):
        iter(dataset)


def sharded_by_file(tf: ModuleType, dataset: Any, context: DataContext, *, shard_by_process: bool) -> bool:
    """Whether ``prepare`` will shard ``dataset`` by FILE across hosts (see ``_shard_options``)."""
    several = context.num_input_pipelines > 1 and not shard_by_process
    return several and context.split == "train" and reads_files(tf, dataset)


def _parallel_options(tf: ModuleType, parallel: bool) -> Any:
    """tf.data's own rewrites that run stateless ``map`` calls and batching on several threads.

    TensorFlow 2.21 turns both on when unset; they are set here so ``parallel_map: false``
    can turn them off and a TensorFlow that changes its default does not change ours.
    """
    options = tf.data.Options()
    options.experimental_optimization.map_parallelization = parallel
    options.experimental_optimization.parallel_batch = parallel
    return options


def _shard_options(tf: ModuleType, dataset: Any, context: DataContext, log: Callable[[str], None]) -> Any:
    options = tf.data.Options()
    policy = tf.data.experimental.AutoShardPolicy
    if context.split != "train":
        # Validation runs to the dataset's end on every worker: equal DATA shards keep them in step.
        options.experimental_distribute.auto_shard_policy = policy.DATA
        return options
    if reads_files(tf, dataset):
        if context.steps_per_epoch is None:
            raise ConfigError(
                f"The {context.split} dataset reads files and is sharded by FILE over "
                f"{context.num_input_pipelines} hosts, whose shards may hold different numbers of "
                "batches; workers must step in lockstep. Set training.steps_per_epoch in the spec."
            )
        options.experimental_distribute.auto_shard_policy = policy.FILE
        log(f"input: the train dataset reads files, sharded by FILE over {context.num_input_pipelines} hosts")
        return options
    log(
        f"warning: the {context.split} dataset does not read files, so sharding falls back to DATA: each of "
        f"the {context.num_input_pipelines} hosts reads all of it and keeps 1/{context.num_input_pipelines}. "
        "Write TFRecord shards and read them with tf.data.Dataset.list_files() to shard by FILE."
    )
    options.experimental_distribute.auto_shard_policy = policy.DATA
    return options
