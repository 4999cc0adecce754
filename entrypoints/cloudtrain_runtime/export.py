"""Export a servable SavedModel: every task exports, only the chief keeps it.

Under MultiWorkerMirroredStrategy saving runs collectives (tf_keras's SyncOnRead
metric and BatchNorm variables all-reduce on save), so a chief-only save hangs until
the peers leave, then fails (measured with tensorflow-cpu 2.21.0 and tf_keras 2.21.0, two
processes on one CPU host: UnavailableError after ~10 s). So every task
exports: the chief to the real location, the others to a temporary folder they
delete at once. The chief then reloads its export with ``tf.saved_model.load`` and
calls ``serving_default`` once, so a job only succeeds with a model that answers.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from cloudtrain_runtime.errors import UserCodeError


def save(tf: ModuleType, model: Any, path: Path, *, legacy: bool) -> None:
    """Write ``model`` as a SavedModel with a ``serving_default`` signature.

    Keras 3 rejects ``model.save(dir)``; ``model.export`` writes the serving signature
    with the Input layers' names as keys. tf_keras has no ``export``.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if legacy:
        tf.saved_model.save(model, str(path))
    else:
        model.export(str(path), format="tf_saved_model", verbose=False)


def export(
    tf: ModuleType, model: Any, *, target: Path, is_chief: bool, scratch: Path, legacy: bool
) -> Path | None:
    """Every task calls this; the chief's export lands at ``target`` and is returned."""
    if is_chief:
        # A restart after a kill here exports again: the old folder is replaced whole.
        partial = target.with_name(f"{target.name}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        save(tf, model, partial, legacy=legacy)
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
        return target
    temp = Path(tempfile.mkdtemp(prefix="export-", dir=scratch))
    try:
        save(tf, model, temp / "model", legacy=legacy)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return None


def serve_once(tf: ModuleType, path: Path) -> dict[str, Any]:
    """Reload the export and call ``serving_default`` on one all-zeros example.

    Returns:
        ``{"inputs": {name: shape}, "outputs": {name: values}}``.

    Raises:
        UserCodeError: when the export has no usable ``serving_default``.
    """
    loaded = tf.saved_model.load(str(path))
    if "serving_default" not in loaded.signatures:
        raise UserCodeError(
            f"the export at {path} has no serving_default signature. Give the model keras.Input layers."
        )
    serving = loaded.signatures["serving_default"]
    specs = serving.structured_input_signature[1]
    inputs = {name: tf.zeros(_example_shape(spec), spec.dtype) for name, spec in specs.items()}
    outputs = serving(**inputs)
    return {
        "inputs": {name: list(value.shape) for name, value in inputs.items()},
        "outputs": {
            name: np.round(value.numpy().astype(np.float64), 4).tolist() for name, value in outputs.items()
        },
    }


def weights_l1(model: Any) -> float:
    """Sum of |w| over every weight: a cheap fingerprint to compare runs."""
    return float(sum(np.abs(np.asarray(w, dtype=np.float64)).sum() for w in model.get_weights()))


def _example_shape(spec: Any) -> list[int]:
    return [1 if dim is None else dim for dim in spec.shape.as_list()]
