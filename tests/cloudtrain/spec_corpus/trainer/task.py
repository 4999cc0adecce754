"""The managed module the specs beside this folder name (code.module: trainer.task).

validate checks that the module exists and defines the managed-mode functions, so the
specs here need one; it is never run.
"""

from typing import Any


def build_model(config: Any) -> Any:
    raise NotImplementedError


def make_dataset(context: Any) -> Any:
    raise NotImplementedError
