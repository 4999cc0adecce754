"""The runtime's documented examples run."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "bundle",
    "callbacks",
    "cluster",
    "config",
    "environments",
    "inputs",
    "main",
    "paths",
    "providers.sagemaker",
    "providers.vertex",
    "replica",
    "rules",
    "schedule",
    "strategy",
    "tfconfig",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(f"cloudtrain_runtime.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
