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
    "cloudtrain.cost",
    "cloudtrain.cost.budget",
    "cloudtrain.cost.compare",
    "cloudtrain.cost.inputs",
    "cloudtrain.cost.notes",
    "cloudtrain.cost.refresh",
    "cloudtrain.cost.refresh.aws",
    "cloudtrain.cost.refresh.gcp",
    "cloudtrain.cost.throughput",
    "cloudtrain.cost.units",
    "cloudtrain.errors",
    "cloudtrain.planning",
    "cloudtrain.spec",
    "cloudtrain.specfile",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_public_api_is_sorted_and_every_name_resolves() -> None:
    import cloudtrain

    assert cloudtrain.__all__ == sorted(cloudtrain.__all__)
    assert set(cloudtrain.__all__) == set(cloudtrain._EXPORTS)
    for name in cloudtrain.__all__:
        assert getattr(cloudtrain, name) is not None
    assert callable(cloudtrain.plan)  # the function, not the planning module
