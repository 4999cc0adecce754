"""Managed mode: cloudtrain trains the user's module.

The module (``code.module`` in the spec) exposes:

- ``build_model(config) -> keras.Model``: required. Called inside the strategy scope
  (or with the keras.distribution installed), after the mixed-precision policy is
  set. ``config`` is the ``RuntimeConfig`` (replicas, global_batch, epochs, ...).
- ``make_dataset(context) -> tf.data.Dataset``: required. Single ``(features, label)``
  examples, not batches: cloudtrain batches, shards and caches or prefetches them. ``context`` is a
  ``DataContext`` (batch sizes, replicas, channel paths, seed, is_chief).
- ``make_validation_dataset(context)``: optional; the same, for validation.
- ``compile_args(config) -> dict``: optional; ``model.compile`` keyword arguments
  (``loss``, ``metrics``, ...) except the optimizer. With it, cloudtrain compiles the
  model with its optimizer at the plan's scaled learning rate and warm-up. Without it,
  ``build_model`` must return a compiled model (its own rate is then used as is).
  Its ``steps_per_execution`` and ``jit_compile`` count where the spec leaves them
  ``auto`` (``cloudtrain_runtime.tuning``).
- ``make_optimizer(learning_rate)``: optional; the optimizer for ``compile_args``
  (default Adam). ``learning_rate`` is a float or a Keras schedule.

Example: examples/binary_classifier/trainer/task.py.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from cloudtrain_runtime import data, peers, usercode
from cloudtrain_runtime.contract import REQUIRED, SIGNATURES
from cloudtrain_runtime.errors import RuntimeFailure, UserCodeError
from cloudtrain_runtime.session import Session


def run(session: Session, module_name: str, directory: Path) -> Path | None:
    """Import, build, compile, fit, back up and export; returns the chief's export path.

    An attempt of a run that already ended with a verified export trains nothing.
    """
    finished = session.backups.finished()
    if finished is not None:
        session.say(
            f"run {finished['run']} already completed with a verified export at {finished['export']} "
            f"({finished.get('completed_at', 'time unknown')}); nothing to redo"
        )
        return Path(finished["export"]) if session.is_chief else None
    model, validation = train(session, module_name, directory)
    if validation is not None:
        with failures(session, "model.evaluate()", directory):
            session.evaluate(model, validation)
    return session.export(model)


def train(session: Session, module_name: str, directory: Path) -> tuple[Any, Any]:
    """Import, build, compile and fit (with backups); returns the model and the validation data."""
    prepared = prepare(session, module_name, directory)
    model = prepared.model(session)
    session.log_speed(model)
    with failures(session, "model.fit()", directory):
        model.fit(
            prepared.examples,
            validation_data=prepared.validation,
            epochs=session.config.epochs,
            steps_per_epoch=session.config.steps_per_epoch,
            callbacks=session.callbacks,
            shuffle=False,  # the user's dataset shuffles, with the seed every host shares
            verbose=0,
        )
    return model, prepared.validation


@dataclass(frozen=True)
class Prepared:
    """The user's module with its datasets batched and sharded, ready to build the compiled model.

    ``cloudtrain_runtime.bench`` builds the model more than once (under each precision policy),
    exactly as training builds it once.
    """

    user: _User
    examples: Any
    validation: Any
    steps_per_epoch: int | None

    def model(self, session: Session) -> Any:
        """``build_model()``, compiled as the spec says, inside the strategy's scope."""
        with session.scope():
            return self.user.model(session, self.steps_per_epoch)


def prepare(session: Session, module_name: str, directory: Path) -> Prepared:
    """Import the module and build its datasets as training does (same batching, sharding, switches)."""
    user = _User(usercode.import_module(module_name, directory), directory)
    examples = user.dataset(session, "make_dataset", "train")
    validation = user.dataset(session, "make_validation_dataset", "validation")
    steps = session.config.steps_per_epoch or _cardinality(session, examples)
    return Prepared(user, examples, validation, steps)


@contextlib.contextmanager
def failures(session: Session, doing: str, directory: Path) -> Iterator[None]:
    """A dead peer becomes ``PeerLost`` naming it; anything else names the user's code."""
    try:
        yield
    except RuntimeFailure:
        raise
    except Exception as err:
        lost = peers.lost_peer(err, session.cluster, doing)
        raise (lost or usercode.user_error(err, doing, directory)) from None


class _User:
    """The user's module, with every call checked and its errors naming the module's file."""

    def __init__(self, module: ModuleType, directory: Path) -> None:
        self.module, self.directory = module, directory
        self.file = usercode.source_file(module, directory)
        missing = [name for name in REQUIRED if not callable(getattr(module, name, None))]
        if missing:
            raise UserCodeError(
                f"{self.file} must define {' and '.join(f'{name}()' for name in missing)} "
                "(see cloudtrain_runtime.managed for the contract), or set code.script for script mode."
            )

    def call(self, name: str, *args: Any) -> Any:
        assert name in SIGNATURES, name  # every call is part of the documented contract
        return usercode.call(getattr(self.module, name), *args, directory=self.directory)

    def dataset(self, session: Session, name: str, split: str) -> Any:
        if not callable(getattr(self.module, name, None)):
            return None
        dataset = self.call(name, session.context(split))
        data.check_dataset(session.tf, dataset, f"{self.file}: {name}()")
        return session.distribute(dataset, split)

    def model(self, session: Session, steps_per_epoch: int | None) -> Any:
        model = self.call("build_model", session.config)
        session.check_model(model, f"{self.file}: build_model()")
        if callable(getattr(self.module, "compile_args", None)):
            args = self.compile_args(session)
            args.update(session.compile_options(args))
            model.compile(optimizer=self.optimizer(session, steps_per_epoch), **args)
        elif not _compiled(model):
            raise UserCodeError(
                f"{self.file}: build_model() returned an uncompiled model and the module has no "
                "compile_args(config). Define compile_args returning {'loss': ..., 'metrics': [...]}."
            )
        return model

    def compile_args(self, session: Session) -> dict[str, Any]:
        args = self.call("compile_args", session.config)
        if not isinstance(args, dict) or "optimizer" in args:
            raise UserCodeError(
                f"{self.file}: compile_args() must return a dict of model.compile arguments without "
                "'optimizer' (define make_optimizer(learning_rate) to choose it). "
                f"Received: {type(args).__name__}"
            )
        return args

    def optimizer(self, session: Session, steps_per_epoch: int | None) -> Any:
        rate = session.learning_rate(steps_per_epoch)
        if callable(getattr(self.module, "make_optimizer", None)):
            return self.call("make_optimizer", rate)
        return session.keras.optimizers.Adam(learning_rate=rate)


def _compiled(model: Any) -> bool:
    return bool(getattr(model, "compiled", getattr(model, "_is_compiled", False)))


def _cardinality(session: Session, dataset: Any) -> int | None:
    count = int(dataset.cardinality())
    return count if count > 0 else None
