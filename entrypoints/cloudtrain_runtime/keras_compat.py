"""Make Keras 3 ``model.fit`` work under MultiWorkerMirroredStrategy, where it is broken.

Keras 3's TensorFlow trainer fails under MWMS (keras-team/keras#20585,
tensorflow/tensorflow#72388) through two defects in
``keras/src/backend/tensorflow/trainer.py``:

1. ``_maybe_symbolic_build`` reduces the first *nested* batch with
   ``strategy.reduce``, which the collective path cannot do ("Attempt to convert a
   value (PerReplica...) to a Tensor"). Only shapes and dtypes matter there, so the
   fix builds from the dataset's ``element_spec`` instead.
2. ``reduce_per_replica`` reduces scalar logs along ``axis=0`` in multi-worker mode
   ("Invalid reduction dimension 0 for input with 0 dimensions"). The fix reduces them
   with ``axis=None``, the mean over replicas, as the single-worker path does.

Why a narrow fix rather than cloudtrain's own training loop: users keep ``fit`` with
their callbacks, metrics and ``train_step`` overrides, and a 2-process run still equals
a single-process run with the same global batch (tests/cloudtrain_runtime). Each
defect is detected by a probe that runs the trainer's own function against a
recording stand-in for the strategy; a Keras release that fixes one is left alone.
tf_keras (``TF_USE_LEGACY_KERAS=1``) has neither defect and is never touched.

Under any strategy (MirroredStrategy too) that same ``_maybe_symbolic_build`` draws one
batch from a fresh iterator before training; the one-device path does not. A dataset
shuffled with ``reshuffle_each_iteration=True`` then trains epoch k on epoch k+1's
order, so one device and N replicas part ways. ``build_without_drawing`` installs the
element-spec build on every Keras 3 path, so no path draws.
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
    if getattr(trainer.TensorFlowTrainer._maybe_symbolic_build, "builds_from_spec", False):
        return False
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
        applied += build_without_drawing()
    if reduces_scalars_on_axis_0(tf):
        trainer.reduce_per_replica = _reduce_scalars_as_mean(trainer, trainer.reduce_per_replica)
        applied.append("mean-of-scalar-logs")
    return applied


BUILD_FROM_SPEC = "symbolic-build-from-element-spec"


def build_without_drawing() -> list[str]:
    """Build models from the input's ``element_spec``, never from a drawn batch.

    Returns:
        ``[BUILD_FROM_SPEC]`` when installed now, ``[]`` when it already was.
    """
    trainer = _trainer_module()
    if getattr(trainer.TensorFlowTrainer._maybe_symbolic_build, "builds_from_spec", False):
        return []
    trainer.TensorFlowTrainer._maybe_symbolic_build = _symbolic_build_from_spec()
    return [BUILD_FROM_SPEC]


def _symbolic_build_from_spec() -> Any:
    def _maybe_symbolic_build(self: Any, iterator: Any = None, data_batch: Any = None) -> None:
        if self._distribute_strategy is None:
            return
        if iterator is not None:
            # Only shapes and dtypes are read (Trainer._symbolic_build makes KerasTensors),
            # and a TensorSpec has both: no iterator is created, so no reshuffle is spent.
            data_batch = iterator.data_adapter.get_tf_dataset().element_spec
        with self.distribute_strategy.scope():
            self._symbolic_build(data_batch=data_batch)

    _maybe_symbolic_build.builds_from_spec = True  # type: ignore[attr-defined]
    return _maybe_symbolic_build


def _reduce_scalars_as_mean(trainer: ModuleType, original: Any) -> Any:
    from keras.src import tree

    def reduce_per_replica(values: Any, strategy: Any, reduction: str) -> Any:
        if trainer._collective_all_reduce_multi_worker(strategy) and reduction in ("auto", "mean"):
            return tree.map_structure(lambda v: strategy.reduce("MEAN", v, axis=None), values)
        return original(values, strategy, reduction)

    return reduce_per_replica
