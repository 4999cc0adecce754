"""The rules that keep the provider boundary clean, checked on the source itself.

- The layers are ordered and every import runs down or stays in its layer: base → spec →
  plan → provider interface → providers → features → API → CLI. A feature reaches a
  provider only through the interface; only the API and the CLI name a provider package.
- Only a provider's own package (and the adapters made for one cloud's pipeline service)
  names a provider: everything else asks the registry, and the spec gets each provider's
  section from its package. Docstrings and comments are documentation and may.
- No import cycles between cloudtrain's modules, lazy imports inside functions, imports for
  type checking (``if TYPE_CHECKING:``) and ``import_module("...")`` included.
- Library code never writes to the terminal: it returns, raises, or calls the caller's
  callback (``progress=``); only the CLI prints.
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
# The provider packages themselves (with the registry and the index of built-ins)
# and the pipeline adapters that exist for one cloud (Vertex Pipelines, SageMaker Pipelines).
MAY_NAME_PROVIDERS = (
    "cloudtrain.providers",
    "cloudtrain_runtime.providers",
    "cloudtrain.installed",  # the built-ins' entry points, written out so no package metadata is read
    "cloudtrain.pipelines.kfp",
    "cloudtrain.pipelines.sagemaker",
)
# The layers, bottom first: a module may import its own layer's modules and those of the
# layers below, never one above. A module belongs to the layer of its longest prefix here.
LAYERS = (
    ("runtime", ("cloudtrain_runtime",)),  # the container's package: the SDK reads its config and rules
    (
        "base",
        (
            "cloudtrain.errors",
            "cloudtrain.messages",
            "cloudtrain.lazy",
            "cloudtrain.progress",
            "cloudtrain.outputs",
            "cloudtrain.scanning",
            "cloudtrain.secrets",
            "cloudtrain.bundle",
            "cloudtrain.installed",
            "cloudtrain.catalog",
            "cloudtrain.buckets",
            "cloudtrain.uris",
            "cloudtrain.files",
            "cloudtrain.boundedyaml",
            "cloudtrain.figures",
            "cloudtrain.arguments",
        ),
    ),
    (
        "spec",
        (
            "cloudtrain.sections",
            "cloudtrain.capacity",
            "cloudtrain.candidates",
            "cloudtrain.tracker",
            "cloudtrain.spec",
            "cloudtrain.usercode",
        ),
    ),
    (
        "plan",
        (
            "cloudtrain.planning",
            "cloudtrain.runs",
            "cloudtrain.sources",
            "cloudtrain.container",
            "cloudtrain.sweep",
        ),
    ),
    ("provider interface", ("cloudtrain.provider",)),
    ("providers", ("cloudtrain.providers",)),
    (
        "features",
        (
            "cloudtrain.cost",
            "cloudtrain.sweep.cost",
            "cloudtrain.sweep.submit",
            "cloudtrain.submission",
            "cloudtrain.placement",
            "cloudtrain.specfile",
            "cloudtrain.defaults",
            "cloudtrain.scaling",
            "cloudtrain.bench",
            "cloudtrain.recommend",
            "cloudtrain.newproject",
            "cloudtrain.templates",
            "cloudtrain.resume",
            "cloudtrain.tracking",
            "cloudtrain.run_progress",
        ),
    ),
    ("API", ("cloudtrain", "cloudtrain.api", "cloudtrain.cache", "cloudtrain.pipelines")),
    ("CLI", ("cloudtrain.cli", "cloudtrain.__main__")),
)
LAYER_NAMES = [name for name, _ in LAYERS]
# The layers that may import a provider's package: its own, and the API and CLI that offer it by name.
MAY_IMPORT_PROVIDERS = ("providers", "API", "CLI")


def modules() -> Iterator[tuple[str, Path]]:
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            yield ".".join((package, *parts)), path


def code_words(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """Identifiers and string constants, without documentation: docstrings and the field
    descriptions of the JSON Schema (``Field(description=...)``); comments never reach the tree."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    docstrings |= {
        id(constant)
        for node in ast.walk(tree)
        if isinstance(node, ast.keyword) and node.arg == "description"
        for constant in ast.walk(node.value)
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
    """The cloudtrain modules ``name`` imports anywhere: at the top, inside functions, under
    ``if TYPE_CHECKING:``, and through ``importlib.import_module("module.name")`` with the
    name written out. (A registry that looks a module up in its table by a name it is given
    discovers it as an entry point would, and is not an import of the code.)"""
    return {
        module for module in imported(ast.parse(path.read_text()), name, path.name, known) if module != name
    }


def imported(tree: ast.AST, name: str, filename: str, known: set[str]) -> set[str]:
    found: set[str] = set()
    package = name if filename == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
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
        elif isinstance(node, ast.Call) and _called(node.func) == "import_module" and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.add(first.value)
    return {module for module in found if module in known}


def layer_of(module: str) -> str:
    """The layer of ``module``: the one holding its longest prefix.

    Raises:
        LookupError: no layer holds it, so a new module must be placed first.
    """
    found = [
        (len(prefix), name)
        for name, prefixes in LAYERS
        for prefix in prefixes
        if module == prefix or module.startswith(f"{prefix}.")
    ]
    if not found:
        raise LookupError(f"{module} is in no layer: add it to LAYERS")
    return max(found)[1]


def back_arrows(graph: dict[str, set[str]]) -> list[str]:
    """Every import that runs up the layers, or from outside them into a provider's package."""
    found = []
    for module, imported_modules in sorted(graph.items()):
        here = LAYER_NAMES.index(layer_of(module))
        for target in sorted(imported_modules):
            there = layer_of(target)
            if LAYER_NAMES.index(there) > here:
                found.append(f"{module} ({layer_of(module)}) imports {target} ({there})")
            elif there == "providers" and layer_of(module) not in MAY_IMPORT_PROVIDERS:
                found.append(f"{module} ({layer_of(module)}) imports the provider package {target}")
    return found


def import_graph() -> dict[str, set[str]]:
    paths = dict(modules())
    return {name: imports(name, path, set(paths)) for name, path in paths.items()}


def test_every_module_is_in_a_layer() -> None:
    assert [name for name, _ in modules() if not _placed(name)] == []


def _placed(module: str) -> bool:
    try:
        layer_of(module)
    except LookupError:
        return False
    return True


def test_imports_run_down_the_layers() -> None:
    assert back_arrows(import_graph()) == []


@pytest.mark.parametrize(
    ("module", "imported_module", "found"),
    [
        ("cloudtrain.planning", "cloudtrain.spec", []),  # plan -> spec: down
        ("cloudtrain.provider.registry", "cloudtrain.provider.base", []),  # within the interface
        (
            "cloudtrain.spec",
            "cloudtrain.provider.registry",
            ["cloudtrain.spec (spec) imports cloudtrain.provider.registry (provider interface)"],
        ),  # the spec reaching up for the registry
        (
            "cloudtrain.providers.local.sweep_driver",
            "cloudtrain.api",
            ["cloudtrain.providers.local.sweep_driver (providers) imports cloudtrain.api (API)"],
        ),  # a provider calling the API
        (
            "cloudtrain.scaling.runs",
            "cloudtrain.providers.local.job",
            [
                "cloudtrain.scaling.runs (features) imports the provider package cloudtrain.providers.local.job"
            ],
        ),  # a feature going round the interface
        ("cloudtrain.cli.job_commands", "cloudtrain.providers.local", []),  # the CLI offers providers by name
    ],
)
def test_a_back_arrow_is_found(module: str, imported_module: str, found: list[str]) -> None:
    assert back_arrows({module: {imported_module}}) == found


def test_a_back_arrow_added_to_the_source_is_found(tmp_path: Path) -> None:
    """The whole check, on a copy of a real module given one import that runs up, lazily."""
    source = (PACKAGES["cloudtrain"] / "uris.py").read_text()
    copy = tmp_path / "uris.py"
    copy.write_text(source + "\n\ndef _late() -> None:\n    from cloudtrain.spec import JobSpec\n")
    known = {name for name, _ in modules()}
    graph = {"cloudtrain.uris": imports("cloudtrain.uris", copy, known)}
    assert back_arrows(graph) == ["cloudtrain.uris (base) imports cloudtrain.spec (spec)"]


def test_no_import_cycles() -> None:
    graph = import_graph()
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
    ("source", "found"),
    [
        ("from cloudtrain import planning", {"cloudtrain.planning"}),  # a module
        ("from cloudtrain.planning import Plan", {"cloudtrain.planning"}),  # a name of a module
        ("if TYPE_CHECKING:\n    from cloudtrain.planning import Plan", {"cloudtrain.planning"}),  # type only
        ("def f():\n    from cloudtrain import planning", {"cloudtrain.planning"}),  # lazy
        ("importlib.import_module('cloudtrain.planning')", {"cloudtrain.planning"}),  # lazy, by name
        ("import_module(TABLE[name])", set()),  # a registry's lookup: not written out
        ("from . import planning", {"cloudtrain.planning"}),  # relative
    ],
)
def test_the_import_finder(source: str, found: set[str]) -> None:
    known = {"cloudtrain", "cloudtrain.planning", "cloudtrain.spec"}
    assert imported(ast.parse(source), "cloudtrain.spec", "spec.py", known) == found


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


# Library code reports through return values, exceptions and callbacks; these print.
MAY_PRINT = ("cloudtrain.cli", "cloudtrain.__main__")
# module -> why it writes to a terminal stream all the same
PRINTS_ON_PURPOSE = {
    "cloudtrain.providers.local.launcher": "the detached launcher is a process of its own: "
    "run.start_detached reads its stderr pipe into a ProviderError",
}
STREAMS = {"stdout", "stderr", "__stdout__", "__stderr__"}
PRINTING_CALLS = {"print", "pprint", "echo", "secho", "print_exc", "print_exception", "print_stack"}


def terminal_writes(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Where code writes to the terminal: print(), echo, rich, sys.stdout/stderr, os.write to fd 1 or 2."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called(node.func) in PRINTING_CALLS:
            yield node.lineno, f"{_called(node.func)}()"
        elif isinstance(node, ast.Call) and _writes_to_fd_1_or_2(node):
            yield node.lineno, "os.write(1|2)"
        elif isinstance(node, ast.Attribute) and node.attr in STREAMS and ast.unparse(node.value) == "sys":
            yield node.lineno, f"sys.{node.attr}"
        elif isinstance(node, ast.ImportFrom) and node.module == "sys":
            yield from ((node.lineno, f"sys.{a.name}") for a in node.names if a.name in STREAMS)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            yield from ((node.lineno, f"import {m}") for m in modules if m.split(".")[0] == "rich")


def _called(func: ast.expr) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _writes_to_fd_1_or_2(call: ast.Call) -> bool:
    target = call.args[0] if call.args else None
    return (
        ast.unparse(call.func) == "os.write" and isinstance(target, ast.Constant) and target.value in (1, 2)
    )


def library_modules() -> Iterator[tuple[str, Path]]:
    """cloudtrain's modules but the CLI (``cloudtrain_runtime`` runs in the container and logs)."""
    for name, path in modules():
        if (name == "cloudtrain" or name.startswith("cloudtrain.")) and not name.startswith(MAY_PRINT):
            yield name, path


def test_library_code_never_writes_to_the_terminal() -> None:
    found = [
        f"{name}:{line}: {what}"
        for name, path in library_modules()
        if name not in PRINTS_ON_PURPOSE
        for line, what in terminal_writes(ast.parse(path.read_text()))
    ]
    assert found == []


def test_each_module_allowed_to_write_to_the_terminal_still_does() -> None:
    """An exception that is no longer needed is removed, not left to cover a new write."""
    paths = dict(library_modules())
    assert [
        name for name in PRINTS_ON_PURPOSE if not list(terminal_writes(ast.parse(paths[name].read_text())))
    ] == []


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("print('hi')", ["print()"]),
        ("click.echo('hi', err=True)", ["echo()"]),
        ("click.secho('hi', fg='red')", ["secho()"]),
        ("from rich.console import Console", ["import rich.console"]),  # rich draws on the terminal
        ("import rich.progress", ["import rich.progress"]),
        ("sys.stderr.write('x')", ["sys.stderr"]),
        ("print('x', file=sys.stdout)", ["print()", "sys.stdout"]),
        ("from sys import stderr", ["sys.stderr"]),
        ("os.write(2, b'x')", ["os.write(1|2)"]),  # the stderr file descriptor
        ("traceback.print_exc()", ["print_exc()"]),
        ("fingerprint('x')", []),  # a name that only contains print
        ("log.write('x')", []),  # a file of the library's own
        ("os.write(fd, b'x')", []),  # a descriptor it opened
        ("progress(Progress('upload', 'b.tar.gz', 0, 1))", []),  # a callback: how the library reports
        ("'print'", []),  # a string, not a call
    ],
)
def test_the_terminal_write_finder(source: str, found: list[str]) -> None:
    assert sorted(what for _, what in terminal_writes(ast.parse(source))) == sorted(found)
