"""The examples in public docstrings run and give the output they show."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import re
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

import cloudtrain
from tests.conftest import Result

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(cloudtrain.__path__, "cloudtrain.")
    if not info.name.endswith("__main__")  # running it runs the CLI
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_the_walk_finds_every_package() -> None:
    assert {
        "cloudtrain.cost.refresh.aws",
        "cloudtrain.providers.vertex.render",
        "cloudtrain.usercode",
    } <= set(MODULES)


def test_public_api_is_sorted_and_every_name_resolves() -> None:
    assert cloudtrain.__all__ == sorted(cloudtrain.__all__)
    assert set(cloudtrain.__all__) == set(cloudtrain._EXPORTS)
    for name in cloudtrain.__all__:
        assert getattr(cloudtrain, name) is not None
    assert callable(cloudtrain.plan)  # the function, not the planning module


def test_the_concepts_page_shows_the_errors_as_printed(
    run_cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each ``$ cloudtrain ...`` line of the error block under the commands at a glance
    (docs/concepts.md), run on the example, prints what follows it."""
    repo = Path(__file__).resolve().parents[2]
    example = repo / "examples" / "binary_classifier"
    text = (repo / "docs" / "concepts.md").read_text()
    block = re.search(r"\n```\n(\$ cloudtrain validate .*?)```", text, re.DOTALL)
    assert block is not None
    monkeypatch.chdir(example)
    runs = re.split(r"^\$ cloudtrain ", block.group(1), flags=re.MULTILINE)[1:]
    assert len(runs) == 2
    for run in runs:
        command, *expected = run.strip().splitlines()
        result = run_cli(*shlex.split(command))
        assert result.err.replace(repr(str(example)), "'.../binary_classifier'").splitlines() == expected
