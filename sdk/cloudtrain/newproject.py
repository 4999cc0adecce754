"""A new cloudtrain project from the template shipped in the package (``cloudtrain init``).

The template is data (``templates/project/``): a managed-mode trainer module that
trains at once on synthetic rows, a commented ``job.yaml`` and a ``.cloudtrainignore``.
``${name}`` in its files becomes the job's name. Files the user already has are never
overwritten unless asked.

Example:
>>> import pathlib, tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp()) / "Churn Model"
>>> [path.relative_to(folder).as_posix() for path in create(folder)]
['.cloudtrainignore', 'job.yaml', 'trainer/__init__.py', 'trainer/task.py']
>>> (folder / "job.yaml").read_text().count("name: churn-model")
1
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterator
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from cloudtrain.errors import CloudtrainError, FilesExistError, SpecError
from cloudtrain.messages import quote

TEMPLATE = ("templates", "project")
# What a package folder may hold besides the template: bytecode from an import of it.
_NOT_TEMPLATE = ("__pycache__",)
FALLBACK_NAME = "my-job"


def create(directory: Path, *, name: str | None = None, force: bool = False) -> list[Path]:
    """Write the template into ``directory`` (created if needed); returns the files written.

    Args:
        directory: the project folder.
        name: the job's name; default: ``directory``'s name, made a valid job name.
        force: overwrite files that exist.

    Raises:
        SpecError: ``name`` is not a valid job name.
        FilesExistError: a file of the template exists and ``force`` is False, or a file
            is where ``directory`` or one of its folders should be.
        CloudtrainError: ``directory`` cannot be written (``/proc/x``, no permission, a full disk).
    """
    name = check_name(name) if name is not None else name_for(directory)
    files = {directory / relative: text for relative, text in template_files().items()}
    _refuse_a_file_for_a_folder(directory)
    _refuse_conflicts(directory, list(files), force=force)
    try:
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.is_symlink():  # write a file here, not through a link to elsewhere
                path.unlink()
            path.write_text(string.Template(text).safe_substitute(name=name), encoding="utf-8")
    except OSError as exc:
        raise CloudtrainError(
            f"Cannot write the project in {directory}: {exc.strerror or exc} ({exc.filename or directory}). "
            "Choose a folder this user can write."
        ) from exc
    return list(files)


def _refuse_a_file_for_a_folder(directory: Path) -> None:
    """Refuse a project folder that is a file, or lies below one (``init job.yaml/sub``).

    Raises:
        FilesExistError: naming the file and the way out.
    """
    blocking = next(
        (path for path in (directory, *directory.parents) if path.exists() and not path.is_dir()), None
    )
    if blocking is not None:
        raise FilesExistError(
            f"Cannot write the project in {directory}: {blocking} is a file, not a folder. Nothing was written. "
            "Choose another folder."
        )


def template_files() -> dict[str, str]:
    """The template's files: relative POSIX path -> text, sorted by path."""
    root = resources.files("cloudtrain").joinpath(*TEMPLATE)
    return dict(sorted(_walk(root, "")))


def _walk(folder: Traversable, prefix: str) -> Iterator[tuple[str, str]]:
    for child in folder.iterdir():
        if child.name in _NOT_TEMPLATE:
            continue
        if child.is_dir():
            yield from _walk(child, f"{prefix}{child.name}/")
        else:
            yield f"{prefix}{child.name}", child.read_text(encoding="utf-8")


def name_for(directory: Path) -> str:
    """A valid job name from a folder's name: lowercase, other characters as '-'.

    Example:
    >>> name_for(Path("/work/My_Model v2")), name_for(Path("/work/2024")), name_for(Path("/work/ß"))
    ('my-model-v2', 'job-2024', 'my-job')
    """
    return slug(directory.resolve().name)


def slug(text: str) -> str:
    """``text`` as a valid job name, or ``my-job`` when nothing of it is left."""
    words = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    if words and not words[0].isalpha():
        words = f"job-{words}"
    words = words[:63].rstrip("-")
    return words if valid_name(words) else FALLBACK_NAME


def check_name(name: str) -> str:
    """``name`` if it is a valid job name, else SpecError with a valid one to use."""
    if valid_name(name):
        return name
    raise SpecError(
        f"--name {quote(name)} is not a valid job name: use 2-63 lowercase letters, digits and '-', "
        f"starting with a letter, e.g. --name {slug(name)}."
    )


def valid_name(name: str) -> bool:
    """Whether the spec accepts ``name`` (its own rule, asked of it)."""
    from cloudtrain.specfile import parse_spec

    try:
        parse_spec({"name": name, "code": {"module": "trainer.task"}})
    except SpecError:
        return False
    return True


def _refuse_conflicts(directory: Path, paths: list[Path], *, force: bool) -> None:
    """Refuse before writing anything: a folder or file in the way, or existing files without ``force``.

    Raises:
        FilesExistError: naming every such path relative to ``directory``.
    """
    blocked = [path for path in paths if path.is_dir() and not path.is_symlink()]
    blocked += [
        parent for path in paths for parent in path.parents if parent != directory and parent.is_file()
    ]
    if blocked:
        names = ", ".join(sorted({_shown(path, directory) for path in blocked}))
        raise FilesExistError(
            f"Cannot write the project: {names} in {directory} is in the way. Move it away."
        )
    existing = [path for path in paths if path.exists() or path.is_symlink()]
    if existing and not force:
        names = ", ".join(_shown(path, directory) for path in existing)
        raise FilesExistError(
            f"{directory} already has {names}. Nothing was written. "
            "Pass --force to overwrite them, or choose another folder."
        )


def _shown(path: Path, directory: Path) -> str:
    return path.relative_to(directory).as_posix()
