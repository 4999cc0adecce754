"""Make Keras 3 ``model.fit`` work under MultiWorkerMirroredStrategy, where it is broken.

Keras 3's TensorFlow trainer fails under MWMS (keras-team/keras#20585,
tensorflow/tensorflow#72388) through two defects in
``keras/src/backend/tensorflow/trainer.py``:

1. ``_maybe_symbolic_build`` reduces the first *nested* batch with
   ``strategy.reduce``, which the collective path cannot do ("Attempt to convert a
   value (PerReplica...) to a Tensor"). Only shapes and dtypes matter there, so the
   fix takes replica 0's local batch instead.
2. ``reduce_per_replica`` reduces scalar logs along ``axis=0`` in multi-worker mode
   ("Invalid reduction dimension 0 for input with 0 dimensions"). The fix reduces them
   with ``axis=None``, the mean over replicas, as the single-worker path does.

Why a narrow fix rather than cloudtrain's own training loop: users keep ``fit`` with
their callbacks, metrics and ``train_step`` overrides, and a 2-process run still equals
a single-process run with the same global batch (tests/cloudtrain_runtime). Each
defect is detected by a probe that runs the trainer's own function against a
recording stand-in for the strategy; a Keras release that fixes one is left alone.
tf_keras (``TF_USE_LEGACY_KERAS=1``) has neither defect and is never touched.
"""

from __future__ import annotations

import contextlib
from types import ModuleType
from typing import Any


class _Recorded(Exception):
    """Raised by the probe strategy to stop the trainer once the call is recorded."""


def _trainer_module() -> Any:
    """Keras's private TensorFlow trainer module, whose functions the fixes replace."""
    from keras.src.backend.tensorflow import trainer

    return trainer


def _probe_strategy(tf: ModuleType, calls: list[tuple[Any, Any]]) -> Any:
    """A MultiWorkerMirroredStrategy stand-in in multi-worker mode that records ``reduce``."""

    class _Extended:
        def _in_multi_worker_mode(self) -> bool:
            return True

    strategy: Any = tf.distribute.MultiWorkerMirroredStrategy

    class _Probe(strategy):
        def __init__(self) -> None:  # no cluster: only the class and mode matter to Keras
            self._extended = _Extended()

        def reduce(self, reduce_op: str, value: Any, axis: Any) -> Any:
            calls.append((value, axis))
            raise _Recorded

        def experimental_local_results(self, value: Any) -> Any:
            raise _Recorded

        def scope(self) -> contextlib.AbstractContextManager[None]:
            return contextlib.nullcontext()

    return _Probe()


def reduces_nested_batch(tf: ModuleType) -> bool:
    """Defect 1: does ``_maybe_symbolic_build`` hand a nested batch to ``strategy.reduce``?"""
    trainer = _trainer_module()
    calls: list[tuple[Any, Any]] = []
    strategy = _probe_strategy(tf, calls)
    model = type("Model", (), {"_distribute_strategy": strategy, "distribute_strategy": strategy})()
    model._symbolic_build = lambda data_batch: None
    value = type("PerReplica", (tf.distribute.DistributedValues,), {})()
    with contextlib.suppress(_Recorded):
        trainer.TensorFlowTrainer._maybe_symbolic_build(model, iterator=[(0, 0, iter([(value, value)]))])
    return any(isinstance(batch, tuple) for batch, _ in calls)


def reduces_scalars_on_axis_0(tf: ModuleType) -> bool:
    """Defect 2: does ``reduce_per_replica`` reduce scalar logs along axis 0 on multi-worker?"""
    trainer = _trainer_module()
    calls: list[tuple[Any, Any]] = []
    with contextlib.suppress(_Recorded):
        trainer.reduce_per_replica(tf.zeros(()), _probe_strategy(tf, calls), "auto")
    return any(axis == 0 for _, axis in calls)


def fix_multi_worker_fit(tf: ModuleType) -> list[str]:
    """Patch the defects this Keras has; returns the names of the fixes applied."""
    trainer, applied = _trainer_module(), []
    if reduces_nested_batch(tf):
        trainer.TensorFlowTrainer._maybe_symbolic_build = _symbolic_build_from_local_batch(tf, trainer)
        applied.append("symbolic-build-from-local-batch")
    if reduces_scalars_on_axis_0(tf):
        trainer.reduce_per_replica = _reduce_scalars_as_mean(trainer, trainer.reduce_per_replica)
        applied.append("mean-of-scalar-logs")
    return applied


def _local_value(tf: ModuleType, strategy: Any, value: Any) -> Any:
    if isinstance(value, tf.distribute.DistributedValues):
        return strategy.experimental_local_results(value)[0]
    return value


def _symbolic_build_from_local_batch(tf: ModuleType, trainer: ModuleType) -> Any:
    from keras.src import tree

    def _maybe_symbolic_build(self: Any, iterator: Any = None, data_batch: Any = None) -> None:
        if self._distribute_strategy is None:
            return
        strategy = self.distribute_strategy
        if iterator is not None:
            for _, _, it in iterator:
                data_batch = tree.map_structure(lambda v: _local_value(tf, strategy, v), next(it))
                break
        with strategy.scope():
            self._symbolic_build(data_batch=data_batch)

    return _maybe_symbolic_build


def _reduce_scalars_as_mean(trainer: ModuleType, original: Any) -> Any:
    from keras.src import tree

    def reduce_per_replica(values: Any, strategy: Any, reduction: str) -> Any:
        if trainer._collective_all_reduce_multi_worker(strategy) and reduction in ("auto", "mean"):
            return tree.map_structure(lambda v: strategy.reduce("MEAN", v, axis=None), values)
        return original(values, strategy, reduction)

    return reduce_per_replica
