"""The documentation's user contract (docs/training-code.md) states exactly the functions and arguments the runtime calls."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from cloudtrain_runtime import contract, managed

REPO = Path(__file__).resolve().parents[2]
CALL = re.compile(r"`(\w+)\((\w*)\)`")


def _contract_paragraph() -> str:
    page = (REPO / "docs" / "training-code.md").read_text()
    section = page.split("# Your training code", 1)[1]
    return section.split("\n\n", 2)[1]


def _called_names() -> set[str]:
    """Every user function managed.py calls through ``_User.call("name", ...)``."""
    tree = ast.parse(Path(managed.__file__).read_text())
    return {
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "call"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    }


def test_the_documented_contract_matches_the_signatures_the_runtime_calls() -> None:
    documented = dict(CALL.findall(_contract_paragraph()))
    assert documented == contract.SIGNATURES


def test_every_user_function_called_is_in_the_signatures() -> None:
    # regression: the documentation promised make_optimizer(config); the runtime passes the rate
    called = _called_names() | {"make_dataset", "make_validation_dataset"}  # called by name in _User.dataset
    assert called == set(contract.SIGNATURES)
