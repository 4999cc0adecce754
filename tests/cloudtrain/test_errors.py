"""``require``: a missing optional dependency is one MissingDependencyError with the pip command, always."""

from __future__ import annotations

from pathlib import Path

import pytest

from cloudtrain.errors import MissingDependencyError, require, require_all


@pytest.mark.parametrize(
    ("module", "message"),
    [
        # regression: find_spec raised ModuleNotFoundError when the parent package was absent
        ("no_parent_here.cloud.aiplatform", "no_parent_here.cloud.aiplatform is not installed"),
        ("no_such_module_here", "no_such_module_here is not installed"),
        # a parent that fails while importing
        ("broken_parent.child", "broken_parent.child cannot be imported (RuntimeError: half installed)"),
    ],
)
def test_require_raises_only_missing_dependency(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, message: str
) -> None:
    (tmp_path / "broken_parent").mkdir()
    (tmp_path / "broken_parent" / "__init__.py").write_text("raise RuntimeError('half installed')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MissingDependencyError) as error:
        require(module, "vertex")
    assert str(error.value) == f"{message}. Run: pip install 'cloudtrain[vertex]'"


def test_present_modules_pass() -> None:
    require_all(["json", "email.message"], "runtime")


def test_several_missing_modules_are_one_line() -> None:
    with pytest.raises(MissingDependencyError) as error:
        require_all(["json", "no_a", "no_b", "no_c"], "runtime,jax", needed_for="training here")
    assert str(error.value) == (
        "no_a, no_b and no_c are not installed (needed for training here). Run: pip install 'cloudtrain[runtime,jax]'"
    )
