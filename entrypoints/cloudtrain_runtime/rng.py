"""The model's random state, saved with each backup: the seed generators of its layers.

Keras 3 keeps a layer's randomness (Dropout, RandomFlip, GaussianNoise, ...) in a
``SeedGenerator`` whose state is a variable that moves on at every call, and lists those
states among ``model.variables`` but not among ``model.weights``, which is all that
``save_weights`` writes (keras/src/layers/layer.py, ``Layer.variables`` and
``save_own_variables``, keras 3.15). A run resumed within an epoch would otherwise draw the
dropout masks of its first steps again. The states go into ``cloudtrain-rng.json`` in the
backup's folder before its manifest is written, so the manifest covers them.

tf_keras has no such variables (its randomness is per-op seeds): nothing is saved.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RNG_FILE = "cloudtrain-rng.json"


def states(model: Any) -> list[Any]:
    """The model's seed-generator states: its variables that are neither weights nor metrics."""
    weights = {id(weight) for weight in model.weights}
    return [variable for variable in model.variables if id(variable) not in weights]


def save(model: Any, path: Path) -> None:
    """Write the value of each state, by its path, to ``path``."""
    import numpy as np  # here, not above: a runtime without TensorFlow (``doctor`` on a bare host) has no numpy

    values = {_name(state): np.asarray(state.numpy()).tolist() for state in states(model)}
    path.write_text(json.dumps(values) + "\n")


def restore(model: Any, path: Path) -> None:
    """Assign the states ``save`` wrote; a backup without the file (an older one) leaves them as they are."""
    if not path.is_file():
        return
    import numpy as np

    values = json.loads(path.read_text())
    for state in states(model):
        if _name(state) in values:
            state.assign(np.asarray(values[_name(state)], dtype=_dtype(state)))


def _name(variable: Any) -> str:
    return str(getattr(variable, "path", variable.name))


def _dtype(variable: Any) -> Any:
    return getattr(variable.dtype, "name", variable.dtype)
