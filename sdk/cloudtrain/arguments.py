"""The Python API's check of its own arguments: a value of the wrong type is a SpecError naming it.

Python does not enforce annotations, so ``cloudtrain.stage("job.yaml", "local", run_id=123)``
used to get as far as a regular expression in planning and end in a bare ``TypeError``.
Each public function states what it takes with ``expect`` before it does anything, and a
wrong value is one ``SpecError`` (exit 2 in the CLI, as every bad input): the argument,
what it must be, and what was given.

Example:
>>> expect(run_id=(123, TEXT | None))
Traceback (most recent call last):
    ...
cloudtrain.errors.SpecError: run_id must be a string or None. Received: int 123.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cloudtrain.errors import SpecError


@dataclass(frozen=True)
class Kind:
    """What an argument may be: a test, and its words in the error."""

    accepts: Callable[[Any], bool]
    words: str

    def __or__(self, other: Kind | None) -> Kind:
        """This kind, or ``other`` (``None``: the argument may be None)."""
        if other is None:
            return Kind(lambda value: value is None or self.accepts(value), f"{self.words} or None")
        return Kind(
            lambda value: self.accepts(value) or other.accepts(value), f"{self.words} or {other.words}"
        )


TEXT = Kind(lambda value: isinstance(value, str), "a string")
FLAG = Kind(lambda value: isinstance(value, bool), "True or False")
COUNT = Kind(lambda value: type(value) is int and value >= 0, "a whole number >= 0")
PATH = Kind(lambda value: isinstance(value, str | os.PathLike), "a path (a string or a pathlib.Path)")
TEXTS = Kind(
    lambda value: (
        isinstance(value, Iterable)
        and not isinstance(value, str | bytes | Mapping)
        and all(isinstance(item, str) for item in value)
    ),
    "a list or tuple of strings",
)
MAPPING = Kind(lambda value: isinstance(value, Mapping), "a mapping")
CALLABLE = Kind(callable, "a function")


def instance_of(cls: type, words: str) -> Kind:
    """Instances of ``cls``, in ``words``."""
    return Kind(lambda value: isinstance(value, cls), words)


def expect(**arguments: tuple[Any, Kind]) -> None:
    """Refuse the first argument whose value is not of its kind.

    Args:
        **arguments: each argument's name, and its value and kind.

    Raises:
        SpecError: ``NAME must be KIND. Received: TYPE VALUE.``
    """
    for name, (value, kind) in arguments.items():
        if not kind.accepts(value):
            raise SpecError(f"{name} must be {kind.words}. Received: {received(value)}.")


def received(value: Any) -> str:
    """``TYPE VALUE``, the value cut short: what an error says it was given."""
    from cloudtrain.messages import quote

    return f"{type(value).__name__} {quote(value)}"
