"""The entry points installed packages declare, read in one pass over ``sys.path``, shared by everyone.

Plugins name what they add in their distribution's ``entry_points.txt``
(https://packaging.python.org/en/latest/specifications/entry-points/): the runtime's
environments, and in the SDK the providers and their spec sections. Reading them here
rather than through ``importlib.metadata`` spares every command its import (with
``email`` and ``zipfile``) and a walk over every distribution per group asked: one scan
of the ``*.dist-info`` and ``*.egg-info`` folders on ``sys.path`` serves every group for
the rest of the process (``forget`` starts over).

Which distribution counts is ``importlib.metadata``'s rule: the first of each normalized
name on ``sys.path`` wins, later copies (an older install shadowed by a newer one) are
not read. Zip archives and ``.egg`` folders on the path are not searched.

Example:
>>> [entry.name for entry in group("cloudtrain.no_such_group")]
[]
>>> EntryPoint("bare", "cloudtrain_runtime.environments:NEUTRAL", "demo").load()[-1].provider
'bare'
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import sys
from typing import Any, NamedTuple

METADATA_SUFFIXES = (".dist-info", ".egg-info")


class EntryPoint(NamedTuple):
    """One ``name = module:attribute`` line of a group, not loaded."""

    name: str
    value: str
    group: str

    def load(self) -> Any:
        """The object the entry point names: its module imported, then its attributes followed."""
        module, _, attributes = self.value.partition("[")[0].partition(":")
        found = importlib.import_module(module.strip())
        for attribute in filter(None, attributes.strip().split(".")):
            found = getattr(found, attribute)
        return found


def group(name: str) -> tuple[EntryPoint, ...]:
    """The entry points of group ``name``, in the order of the distributions on ``sys.path``."""
    return _installed().get(name, ())


def forget() -> None:
    """Scan again on next use (after installing or removing a package in-process)."""
    _installed.cache_clear()


@functools.cache
def _installed() -> dict[str, tuple[EntryPoint, ...]]:
    """Every group's entry points, from the first distribution of each name on ``sys.path``."""
    found: dict[str, list[EntryPoint]] = {}
    for text in _entry_point_files():
        for entry in parse(text):
            found.setdefault(entry.group, []).append(entry)
    return {name: tuple(entries) for name, entries in found.items()}


def _entry_point_files() -> list[str]:
    """The text of each distribution's ``entry_points.txt``, shadowed copies left out."""
    seen: set[str] = set()
    texts: list[str] = []
    for folder in sys.path:
        try:
            children = os.listdir(folder or ".")
        except (OSError, TypeError):
            continue  # a zip archive, a path hook's key, a folder removed since
        for child in children:
            if not child.lower().endswith(METADATA_SUFFIXES):
                continue
            name = normalize(child.rpartition(".")[0].partition("-")[0])
            if name in seen:
                continue
            seen.add(name)
            try:
                with open(os.path.join(folder, child, "entry_points.txt"), encoding="utf-8") as file:
                    texts.append(file.read())
            except OSError:
                continue  # a distribution without entry points
            except UnicodeDecodeError:
                continue  # a damaged file no command could use: it must not stop every command
    return texts


def normalize(name: str) -> str:
    """A distribution's name as ``importlib.metadata`` compares them (PEP 503, with underscores).

    Example:
    >>> normalize("Toycloud.Plugin-x")
    'toycloud_plugin_x'
    """
    return re.sub(r"[-_.]+", "_", name).lower()


def parse(text: str) -> list[EntryPoint]:
    """The entry points of one ``entry_points.txt``: ``[group]`` headers, then ``name = value`` lines.

    Blank lines, comments and lines without ``=`` are skipped.

    Example:
    >>> parse("[console_scripts]\\n# a comment\\ndemo = demo.cli:main\\n")
    [EntryPoint(name='demo', value='demo.cli:main', group='console_scripts')]
    """
    entries: list[EntryPoint] = []
    section = None
    for line in map(str.strip, text.splitlines()):
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
        elif section is not None and "=" in line and not line.startswith(("#", ";")):
            name, _, value = line.partition("=")
            entries.append(EntryPoint(name.strip(), value.strip(), section))
    return entries
