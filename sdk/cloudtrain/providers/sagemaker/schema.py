"""SageMaker's own request constraints: what botocore's service model states for CreateTrainingJob.

botocore's shapes carry, for every member, the lengths, patterns, enums and ranges
SageMaker enforces; its client checks only types, required members and minimums, so a
request that breaks a maximum or a pattern is refused by the service after the code was
uploaded. ``catalog/sagemaker_request.csv`` holds those constraints for every member
cloudtrain renders, generated from the installed botocore by ``python -m
cloudtrain.providers.sagemaker.generate_schema``; ``tests/cloudtrain/providers/
sagemaker/test_schema.py`` checks the file still matches the model. ``problems`` applies
them to a rendered request without importing botocore, so ``validate`` and ``render`` know
every constraint the service's schema states.

A row's ``path`` names a member as ``Tags[].Key`` (each item of a list), ``Environment{key}``
and ``Environment{}`` (each key and each value of a map). Its ``pattern`` is botocore's as
written; ``python_pattern`` the same in Python's ``re`` with the semantics Smithy models state
(ECMA-262: ``.`` stops at line ends, ``\\d`` and ``\\w`` are ASCII), and the Unicode classes
``\\p{L}``, ``\\p{N}`` and ``\\p{Z}`` spelt out.

Example:
>>> problems({"Tags": [{"Key": "team", "Value": "x" * 300}]}, fields={"Tags[].Value": "sagemaker.tags"})
["sagemaker.tags: the value of the tag 'team' has 300 characters; SageMaker takes at most 256 (CreateTrainingJob Tags[].Value)."]
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from cloudtrain.messages import quote

OPERATION = "CreateTrainingJob"
CATALOG_FILE = "sagemaker_request.csv"


@dataclass(frozen=True)
class Constraint:
    """What the model states for one member: its type and, where given, bounds, pattern and enum."""

    path: str
    type: str
    min: int | None
    max: int | None
    pattern: str
    python_pattern: str
    enum: tuple[str, ...]


@functools.cache
def constraints() -> dict[str, Constraint]:
    """Every generated constraint by path (``catalog/sagemaker_request.csv``)."""
    from cloudtrain import catalog

    return {
        row["path"]: Constraint(
            path=row["path"],
            type=row["type"],
            min=int(row["min"]) if row["min"] else None,
            max=int(row["max"]) if row["max"] else None,
            pattern=row["pattern"],
            python_pattern=row["python_pattern"],
            enum=tuple(row["enum"].split("|")) if row["enum"] else (),
        )
        for row in catalog.rows(CATALOG_FILE)
    }


def problems(request: Mapping[str, Any], *, fields: Mapping[str, str]) -> list[str]:
    """Every way ``request`` breaks a constraint of the model, one line each.

    Args:
        request: ``create_training_job`` keyword arguments.
        fields: the spec field each request path comes from (``Tags[].Value`` ->
            ``sagemaker.tags``), named first in each line; a path without one is named itself.

    Values are never quoted (an environment value may be private); keys and counts are.
    """
    found = []
    for path, what, value in _members(request, ""):
        constraint = constraints().get(path)
        if constraint is None:
            continue
        problem = _breaks(constraint, value)
        if problem:
            field = next((fields[p] for p in _prefixes(path) if p in fields), path)
            found.append(f"{field}: {what}{problem} ({OPERATION} {path}).")
    return found


def _prefixes(path: str) -> list[str]:
    """``path`` and the paths it sits under, longest first: ``A.B[].C``, ``A.B[]``, ``A.B``, ``A``."""
    cuts = [i for i, char in enumerate(path) if char in ".[{"]
    return [path, *(path[:i] for i in reversed(cuts))]


def _members(value: Any, path: str, what: str = "the value") -> Iterator[tuple[str, str, Any]]:
    """(path, words for the member, value) of ``value`` and everything inside it."""
    if path:
        yield path, what, value
    if isinstance(value, Mapping) and f"{path}{{key}}" in constraints():
        for key, item in value.items():
            yield f"{path}{{key}}", f"the key {quote(key)}", key
            yield from _members(item, f"{path}{{}}", f"the value of {quote(key)}")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _members(item, f"{path}.{key}" if path else key, _words(path, key, value))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _members(item, f"{path}[]", f"item {index}")


def _words(path: str, key: str, structure: Mapping[str, Any]) -> str:
    """How a message names member ``key`` of ``structure`` at ``path``: a tag by its key."""
    if path == "Tags[]":
        tag = quote(structure.get("Key"))
        return f"the tag key {tag}" if key == "Key" else f"the value of the tag {tag}"
    return f"the {key}"


def _breaks(constraint: Constraint, value: Any) -> str | None:
    """How ``value`` breaks ``constraint``, in words after "the value ", or None."""
    low, high = constraint.min, constraint.max
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        if (low is not None and value < low) or (high is not None and value > high):
            return f" is {value}; SageMaker takes {_bounds(low, high)}"
        return None
    if isinstance(value, str | list | Mapping):
        unit = "characters" if isinstance(value, str) else "entries"
        if (low is not None and len(value) < low) or (high is not None and len(value) > high):
            return f" has {len(value)} {unit}; SageMaker takes {_bounds(low, high)}"
    if isinstance(value, str):
        if constraint.enum and value not in constraint.enum:
            return f" is not one of {', '.join(constraint.enum)}"
        if constraint.python_pattern and not re.fullmatch(constraint.python_pattern, value):
            return f" does not match SageMaker's pattern {constraint.pattern}"
    return None


def _bounds(low: int | None, high: int | None) -> str:
    if low is not None and high is not None:
        return f"{low} to {high}" if low else f"at most {high}"
    return f"at least {low}" if low is not None else f"at most {high}"
