"""The rules that keep the provider boundary clean, checked on the source itself.

- Only a provider's own package (and the spec's provider sections) names a provider:
  everything else asks the registry. Docstrings and comments are documentation and may.
- No import cycles between cloudtrain's modules, lazy imports inside functions included.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "cloudtrain": ROOT / "sdk" / "cloudtrain",
    "cloudtrain_runtime": ROOT / "entrypoints" / "cloudtrain_runtime",
}
PROVIDER_WORDS = re.compile(r"vertex|sagemaker", re.IGNORECASE)
# The provider packages themselves, the registry of built-ins, and the spec's provider sections.
MAY_NAME_PROVIDERS = ("cloudtrain.providers", "cloudtrain.spec", "cloudtrain_runtime.providers")


def modules() -> Iterator[tuple[str, Path]]:
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            yield ".".join((package, *parts)), path


def code_words(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """Identifiers and string constants, without docstrings (comments never reach the tree)."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value
        elif isinstance(node, ast.Name):
            yield node.lineno, node.id
        elif isinstance(node, ast.Attribute):
            yield node.lineno, node.attr
        elif isinstance(node, ast.FunctionDef | ast.ClassDef | ast.arg):
            yield node.lineno, node.name if not isinstance(node, ast.arg) else node.arg
        elif isinstance(node, ast.alias):
            yield node.lineno, node.name


def test_only_provider_packages_name_a_provider() -> None:
    found = [
        f"{name}:{line}: {word!r}"
        for name, path in modules()
        if not name.startswith(MAY_NAME_PROVIDERS)
        for line, word in code_words(ast.parse(path.read_text()))
        if PROVIDER_WORDS.search(word)
    ]
    assert found == []


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The cloudtrain modules ``name`` imports anywhere (type-checking-only imports aside)."""
    tree = ast.parse(path.read_text())
    type_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for inner in ast.walk(node)
    }
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    [*package.split(".")[: len(package.split(".")) - node.level + 1], base]
                ).strip(".")
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return {module for module in found if module in known and module != name}


def test_no_import_cycles() -> None:
    paths = dict(modules())
    graph = {name: imports(name, path, set(paths)) for name, path in paths.items()}
    cycles = [cycle for cycle in map(lambda start: _cycle_from(start, graph), graph) if cycle]
    assert cycles == []


def _cycle_from(start: str, graph: dict[str, set[str]]) -> list[str]:
    stack, seen = [(start, [start])], set()
    while stack:
        node, trail = stack.pop()
        for neighbour in graph[node]:
            if neighbour == start:
                return [*trail, start]
            if neighbour not in seen:
                seen.add(neighbour)
                stack.append((neighbour, [*trail, neighbour]))
    return []


@pytest.mark.parametrize(
    ("word", "named"),
    [
        ("vertex", True),  # a provider's name
        ("VertexSettings", True),  # inside an identifier
        ("vertical", False),  # not a provider
    ],
)
def test_the_provider_word_pattern(word: str, named: bool) -> None:
    assert bool(PROVIDER_WORDS.search(word)) is named
