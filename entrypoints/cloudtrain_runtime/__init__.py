"""The cloudtrain container runtime: environment → cluster → strategy → training → export.

It runs inside every training container (Vertex AI, SageMaker, the local provider),
as the ``cloudtrain-runtime`` console script, ``python -m cloudtrain_runtime``, or
through the ``image: auto`` bootstrap. It imports TensorFlow, Keras and JAX, never
pydantic, the ``cloudtrain`` SDK or a cloud SDK, so it runs in a stock TensorFlow image.

Environment it reads:

- ``CLOUDTRAIN_CONFIG``: the plan's runtime configuration as JSON (or ``--config FILE``,
  or on SageMaker the hyperparameter ``cloudtrain_config``).
- ``CLOUDTRAIN_ROOT`` (default ``/``): the folder every fixed container path lives
  under: ``/gcs/...``, ``/opt/ml/...``, ``/tmp/cloudtrain/...``. The local provider sets it
  to stand in for Vertex's FUSE mount and SageMaker's tree; nothing else tells the
  runtime that it is emulated.
- ``CLOUDTRAIN_BUNDLE``: the code bundle's path in the container (under the root),
  checked and unpacked by the runtime. Without it, the code is in the current folder.
- ``TF_CONFIG``, ``CLUSTER_SPEC``, ``AIP_MODEL_DIR``, ``AIP_CHECKPOINT_DIR``,
  ``AIP_TENSORBOARD_LOG_DIR`` (Vertex); ``/opt/ml/input/config/resourceconfig.json``
  (SageMaker). See ``cluster``, ``locations`` and ``providers``.
- ``CLOUDTRAIN_HOSTS``: ``algo-1=127.0.0.1:41231,...``, a resolver override for emulated
  SageMaker hosts on one machine.
- ``CLOUDTRAIN_CPU_DEVICES=N``: emulate N devices per host on the CPU (local provider).
- ``CLOUDTRAIN_FAULT=<task_type>:<index>@epoch:<n>`` or ``@step:<n>``: that task SIGKILLs
  itself at the end of epoch n (after its backup) or after global step n; ``spot@...``:
  every task does, as when a spot interruption reclaims the machines.
- ``CLOUDTRAIN_TRACE_STEPS=EPOCH:FIRST-LAST``: the chief traces those steps with the TensorFlow
  Profiler into the TensorBoard folder (``training.profile``, see ``profiling``).
- ``TF_USE_LEGACY_KERAS=1``: run the user's code on tf_keras (Keras 2).
- ``CLOUDTRAIN_DEBUG=1``: print tracebacks with errors.

Output: the chief logs the strategy and its reason, one line per epoch
(``epoch 2/3 loss=0.1509 binary_accuracy=0.9570 val_loss=...``), then ``replicas=N``,
``global_batch=N``, ``final_val_<metric>=...``, ``export=<path>`` and the answer of the
exported model's ``serving_default``. It writes ``cloudtrain-result.json`` (replicas,
global batch, the history and throughput of every attempt, which attempt did what, export
path, resumed_from_epoch, weights_l1), ``cloudtrain-throughput.json`` and, after every
epoch, ``cloudtrain-history.json`` (``history``) in the export's parent folder, or on
SageMaker in ``/opt/ml/output/data/`` (under the root); the history also in the backup folder.

User code: a managed module (``build_model``/``make_dataset``, see ``managed``) or a
script calling ``setup()`` (see ``script``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cloudtrain_runtime.session import Session

__all__ = ["setup"]


def setup() -> Session:
    """The training session for a user script: strategy, batches, callbacks, export.

    Under the entrypoint it returns the session the entrypoint started; run directly
    (``python train.py`` with ``CLOUDTRAIN_CONFIG`` set) it starts one from the
    environment. Call it before any other TensorFlow op.
    """
    from cloudtrain_runtime import main

    return main.active() or main.prepare(None, os.environ, enter_code=False)[0]
