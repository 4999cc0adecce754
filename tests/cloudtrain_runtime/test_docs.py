"""Every runtime module's documented examples run, found by walking the package."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import cloudtrain_runtime

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(cloudtrain_runtime.__path__, "cloudtrain_runtime.")
    if not info.name.endswith("__main__")  # running it starts a replica
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_the_walk_finds_the_modules_with_examples() -> None:
    assert {"cloudtrain_runtime.rules", "cloudtrain_runtime.providers.vertex"} <= set(MODULES)
