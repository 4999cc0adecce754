"""The examples in public docstrings run and give the output they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "cloudtrain",
    "cloudtrain.api",
    "cloudtrain.bundle",
    "cloudtrain.catalog",
    "cloudtrain.errors",
    "cloudtrain.planning",
    "cloudtrain.spec",
    "cloudtrain.specfile",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
