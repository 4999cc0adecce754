"""Validate SageMaker (and AWS Batch) requests against the service models shipped with botocore.

botocore's ParamValidator checks types, required members and minimums, but not maximum
lengths, patterns or enums; SageMaker enforces all of them. ``problems`` runs botocore's
validator and then those checks, so a request that passes here is one SageMaker's own
model accepts (quotas and account-level checks aside).
"""

from __future__ import annotations

import functools
import re
from typing import Any

import botocore.session
from botocore.model import OperationModel, ServiceModel, Shape
from botocore.validate import ParamValidator

# Java-style Unicode classes in the model's patterns, as Python re understands them (\w is a
# little wider than \p{L}: it adds digits and "_", which those patterns allow anyway).
_UNICODE_CLASSES = {r"\p{L}": r"\w", r"\p{Z}": r"\s", r"\p{N}": r"\d"}


@functools.cache
def service_model(service: str = "sagemaker") -> ServiceModel:
    return botocore.session.get_session().get_service_model(service)


def operation(name: str, service: str = "sagemaker") -> OperationModel:
    return service_model(service).operation_model(name)


def problems(operation_name: str, params: dict[str, Any], service: str = "sagemaker") -> list[str]:
    """Every way ``params`` breaks the model's input shape for ``operation_name`` of ``service``
    (SageMaker's; AWS Batch's for ``service="batch"``)."""
    shape = operation(operation_name, service).input_shape
    report = ParamValidator().validate(params, shape)
    found = [report.generate_report()] if report.has_errors() else []
    return found + _strict(shape, params, operation_name)


def _strict(shape: Shape, value: Any, path: str) -> list[str]:
    if shape.type_name == "structure" and isinstance(value, dict):
        members = shape.members
        return [p for k, v in value.items() if k in members for p in _strict(members[k], v, f"{path}.{k}")]
    if shape.type_name == "list" and isinstance(value, list):
        return _length(shape, value, path) + [
            p for i, item in enumerate(value) for p in _strict(shape.member, item, f"{path}[{i}]")
        ]
    if shape.type_name == "map" and isinstance(value, dict):
        return _length(shape, value, path) + [
            p
            for k, v in value.items()
            for p in _strict(shape.key, k, f"{path} key {k!r}") + _strict(shape.value, v, f"{path}[{k!r}]")
        ]
    if shape.type_name == "string" and isinstance(value, str):
        return _length(shape, value, path) + _pattern(shape, value, path) + _enum(shape, value, path)
    if shape.type_name in ("integer", "long") and isinstance(value, int):
        return _range(shape, value, path)
    return []


def _length(shape: Shape, value: Any, path: str) -> list[str]:
    limit = shape.metadata.get("max")
    return [f"{path}: length {len(value)} > max {limit}"] if limit is not None and len(value) > limit else []


def _range(shape: Shape, value: int, path: str) -> list[str]:
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    if (low is not None and value < low) or (high is not None and value > high):
        return [f"{path}: {value} outside [{low}, {high}]"]
    return []


def _pattern(shape: Shape, value: str, path: str) -> list[str]:
    pattern = shape.metadata.get("pattern")
    if pattern is None or re.fullmatch(_python_pattern(pattern), value, re.DOTALL):
        return []
    return [f"{path}: {value[:60]!r} does not match {pattern!r}"]


@functools.cache
def _python_pattern(pattern: str) -> str:
    for java, python in _UNICODE_CLASSES.items():
        pattern = pattern.replace(java, python)
    return pattern


def _enum(shape: Shape, value: str, path: str) -> list[str]:
    allowed = shape.enum
    return [f"{path}: {value!r} not in the enum"] if allowed and value not in allowed else []
