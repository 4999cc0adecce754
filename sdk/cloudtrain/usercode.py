"""Check the user's code on disk before a job starts, without importing it.

A typo in ``code.module`` or a misnamed ``build_model`` otherwise shows only inside the
container, after the machines were paid for. Here the module is found as the runtime's
import would find it (``trainer.task`` -> ``trainer/task.py`` or
``trainer/task/__init__.py`` under ``code.source_dir``), must be shipped in the code
bundle, and is parsed with ``ast`` for the functions managed mode calls; a script must
be a shipped file inside the source folder. The user's code never runs here: importing
it would import TensorFlow.

Example:
>>> import pathlib, tempfile
>>> from cloudtrain.spec import Code
>>> project = pathlib.Path(tempfile.mkdtemp())
>>> (project / "trainer").mkdir()
>>> _ = (project / "trainer" / "task.py").write_text("def build_model(config): ...\\n")
>>> check_code(Code(module="trainer.task", source_dir=str(project)))
['code.module: trainer/task.py does not define make_dataset(context), which managed mode requires. Define it, or set code.script for script mode.']
"""

from __future__ import annotations

import ast
import difflib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from cloudtrain import bundle
from cloudtrain.errors import SpecError, did_you_mean
from cloudtrain_runtime.contract import OPTIONAL, REQUIRED

if TYPE_CHECKING:
    from cloudtrain.spec import Code

# Beyond this many candidates, only a close match is offered, never the whole list.
_MAX_LISTED = 12


def require_code(code: Code) -> None:
    """Raise SpecError when ``check_code`` finds a problem."""
    problems = check_code(code)
    if problems:
        raise SpecError(problems)


def check_code(code: Code) -> list[str]:
    """Problems that stop ``code`` from running, one message per problem (field first).

    ``code.source_dir`` is used as it is: ``load_spec`` has already made it relative to
    the spec file, and a ``JobSpec`` built in Python is relative to the current folder
    (messages show it resolved).
    """
    root = Path(code.source_dir).resolve()
    shipped = {path.as_posix() for path in bundle.collect(root)}
    if code.module is not None:
        return _module_problems(code.module, root, shipped)
    assert code.script is not None  # the spec holds exactly one of module and script
    return _script_problems(code.script, root, shipped)


def _module_problems(module: str, root: Path, shipped: set[str]) -> list[str]:
    base = module.replace(".", "/")
    candidates = (f"{base}.py", f"{base}/__init__.py")
    found = next((name for name in candidates if name in shipped), None)
    if found is None:
        return [_missing_module(module, root, candidates, shipped)]
    return _contract_problems(found, root / found)


def _missing_module(module: str, root: Path, candidates: tuple[str, ...], shipped: set[str]) -> str:
    where = f"code.module: {module!r} does not resolve to a file under {str(root)!r}"
    excluded = [name for name in candidates if (root / name).is_file()]
    if excluded:
        return f"{where}: {excluded[0]} exists but is excluded from the code bundle. {_unignore(excluded[0])}"
    modules = _module_names(shipped)
    looked = " or ".join(candidates)
    if not modules:
        return f"{where} (looked for {looked}); it holds no Python file. Check code.source_dir."
    return f"{where} (looked for {looked}).{_hint(module, modules, 'modules')}"


def _module_names(shipped: Iterable[str]) -> list[str]:
    """``trainer/task.py`` -> ``trainer.task``; packages (``trainer``) only when there is nothing else.

    A typo of ``trainer.task`` is closer to ``trainer`` than to ``trainer.test``, yet a
    managed module is almost always a file of its own.
    """
    modules: set[str] = set()
    packages: set[str] = set()
    for name in shipped:
        path = PurePosixPath(name)
        if path.suffix != ".py":
            continue
        package = path.stem == "__init__"
        parts = path.parent.parts if package else (*path.parent.parts, path.stem)
        if parts and all(part.isidentifier() for part in parts):
            (packages if package else modules).add(".".join(parts))
    return sorted(modules or packages)


def _contract_problems(name: str, path: Path) -> list[str]:
    """The required functions ``name`` does not define, each with a near match when it has one."""
    try:
        tree = ast.parse(path.read_bytes(), filename=name)
    except SyntaxError as err:
        return [f"code.module: {name} line {err.lineno}: {err.msg}. Fix the syntax error."]
    defined = _bound_names(tree)
    if defined is None:
        return []
    others = sorted(defined - set(REQUIRED) - set(OPTIONAL))
    problems = []
    for function, argument in REQUIRED.items():
        if function in defined:
            continue
        close = difflib.get_close_matches(function, others, n=1, cutoff=0.6)
        fix = f" Did you mean {close[0]!r}?" if close else " Define it, or set code.script for script mode."
        problems.append(
            f"code.module: {name} does not define {function}({argument}), which managed mode requires.{fix}"
        )
    return problems


def _bound_names(tree: ast.Module) -> set[str] | None:
    """Names the module binds at its top level (also inside if/try/with); None if unknowable.

    ``from x import *`` and a module ``__getattr__`` can provide any name, so then
    nothing is reported.
    """
    names: set[str] = set()
    for node in _top_level(tree.body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            if any(alias.name == "*" for alias in node.names):
                return None
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return None if "__getattr__" in names else names


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of ``body``, and those nested in if/try/with blocks (not in functions)."""
    for node in body:
        yield node
        if isinstance(node, ast.If | ast.With | ast.AsyncWith):
            yield from _top_level(node.body)
            yield from _top_level(getattr(node, "orelse", []))
        elif isinstance(node, ast.Try | ast.TryStar):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from _top_level(block)


def _script_problems(script: str, root: Path, shipped: set[str]) -> list[str]:
    path = Path(os.path.normpath(root / script))  # "..", not links: a link inside ships as its file
    if not path.is_relative_to(root):
        return [
            f"code.script: {script!r} lies outside the source folder {str(root)!r}, so it is not shipped. "
            "Move it into code.source_dir, or point code.source_dir at its folder."
        ]
    relative = path.relative_to(root).as_posix()
    if relative in shipped:
        return []
    where = f"code.script: {script!r} is not a file under {str(root)!r}"
    if path.is_file():
        return [f"{where} that the code bundle ships: it is excluded. {_unignore(relative)}"]
    scripts = sorted(name for name in shipped if name.endswith(".py"))
    if not scripts:
        return [f"{where}; it holds no Python file. Check code.source_dir."]
    return [f"{where}.{_hint(script, scripts, 'scripts')}"]


def _unignore(name: str) -> str:
    ignore_files = " or ".join(bundle.IGNORE_FILES)
    return f"Remove the pattern that matches {name} from {ignore_files} (some files are never shipped)."


def _hint(value: str, choices: list[str], noun: str) -> str:
    """A close match; the full list only when it is short."""
    hint = did_you_mean(value, choices, noun=noun)
    if hint.startswith(" Did you mean") or len(choices) <= _MAX_LISTED:
        return hint
    return f" None of the {len(choices)} {noun} found is close."
