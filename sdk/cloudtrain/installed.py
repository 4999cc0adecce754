"""Which providers are installed, and what the spec and the catalog need of them, without loading them.

A provider is its package (``cloudtrain.provider.registry`` loads it when it is asked
for); what must be known before that is here, read from each provider's section class
(``cloudtrain.sections.ProviderSection``), a small module that imports nothing of the
provider's own: the spec's provider sections (``JobSpec`` gets one field per section),
the storage schemes a spec may name, and the folders of catalog rows providers ship.

Where they come from, in this order:

- the built-ins, found without package metadata (``BUILTIN``, ``SECTIONS``);
- installed packages, through two entry-point groups: ``cloudtrain.providers`` names the
  provider object, ``cloudtrain.spec_sections`` its section class (optional)::

      [project.entry-points."cloudtrain.providers"]
      mycloud = "mycloud_cloudtrain:provider"
      [project.entry-points."cloudtrain.spec_sections"]
      mycloud = "mycloud_cloudtrain.settings:MyCloudSettings"

- providers registered at run time (``registry.register``).

A provider without a section class has no section of the spec; its schemes and catalog
folder are then read from its provider object, loaded when they are first asked for.

Example:
>>> names()[:3]
('local', 'vertex', 'sagemaker')
>>> list(sections())
['vertex', 'sagemaker', 'kubernetes']
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudtrain.errors import CloudtrainError
from cloudtrain_runtime import entry_points

if TYPE_CHECKING:
    # A provider's section class is a ``cloudtrain.sections.ProviderSection``; this module
    # reads only what it declares, and sits below the section models (which check URIs
    # against the catalog, which reads every installed provider's rows from here).
    from pydantic import BaseModel

PROVIDER_GROUP = "cloudtrain.providers"
SECTION_GROUP = "cloudtrain.spec_sections"
# name -> the package whose ``provider`` attribute is the provider; the order is the display order.
BUILTIN = {
    "local": "cloudtrain.providers.local",
    "vertex": "cloudtrain.providers.vertex",
    "sagemaker": "cloudtrain.providers.sagemaker",
    "kubernetes": "cloudtrain.providers.kubernetes",
}
# name -> the module whose ``SECTION`` attribute is the built-in provider's section class.
SECTIONS = {
    "vertex": "cloudtrain.providers.vertex.settings",
    "sagemaker": "cloudtrain.providers.sagemaker.settings",
    "kubernetes": "cloudtrain.providers.kubernetes.settings",
}


@dataclass(frozen=True)
class Registered:
    """A provider registered at run time: its name, section, title, schemes and catalog folder."""

    name: str
    section: type[BaseModel] | None
    title: str
    schemes: tuple[str, ...]
    catalog_dir: Path | None


_registered: dict[str, Registered] = {}
_watchers: list[Callable[[], None]] = []


def names() -> tuple[str, ...]:
    """Every provider's name: built-ins first, then entry points and registered ones by name."""
    extra = sorted(({*_provider_entry_points(), *_registered}) - set(BUILTIN))
    return (*BUILTIN, *extra)


def sections() -> dict[str, type[BaseModel]]:
    """Each provider's section class, by provider name, in the order of ``names()``."""
    found = {**_builtin_sections(), **_plugin_sections()}
    found.update({name: entry.section for name, entry in _registered.items() if entry.section})
    for name in [name for name in found if name in _registered and _registered[name].section is None]:
        del found[name]  # a provider registered without a section replaces one that had
    order = {name: index for index, name in enumerate(names())}
    return dict(sorted(found.items(), key=lambda item: order.get(item[0], len(order))))


def schemes(*, plugins: bool = True) -> tuple[str, ...]:
    """Every storage scheme some provider reads and writes, in the order of ``names()``.

    ``plugins=False`` asks the built-in and registered providers only, which needs no
    scan of installed packages: ask that first when the answer is usually there.

    Example:
    >>> schemes(plugins=False)
    ('gs://', 's3://')
    """
    chosen = names() if plugins else (*BUILTIN, *sorted(set(_registered) - set(BUILTIN)))
    return tuple(dict.fromkeys(scheme for name in chosen for scheme in _declared(name, "schemes") or ()))


def catalog_dirs() -> list[Path]:
    """The folders of catalog rows the providers ship, in the order of ``names()``."""
    folders = (_declared(name, "catalog_dir") for name in names())
    return [Path(folder) for folder in folders if folder is not None]


def title(name: str) -> str:
    """Provider ``name``'s own name for messages ("Vertex AI"); its name where none is declared."""
    return str(_declared(name, "title") or name)


def add(
    name: str,
    *,
    section: type[BaseModel] | None,
    title: str,
    schemes: tuple[str, ...],
    catalog_dir: Path | None,
) -> None:
    """Make a provider known for the rest of this process (``registry.register`` calls it)."""
    _registered[name] = Registered(name, section, title, schemes, catalog_dir)
    changed()


def remove(name: str) -> None:
    """Undo ``add``; a built-in or entry point of that name is seen again."""
    _registered.pop(name, None)
    changed()


def forget() -> None:
    """Read the entry points again on next use (after installing or removing a plugin in-process)."""
    entry_points.forget()
    _entry_points.cache_clear()
    _plugin_sections.cache_clear()
    plugin.cache_clear()
    changed()


def watch(callback: Callable[[], None]) -> None:
    """Call ``callback`` whenever the installed providers change.

    What is computed from every provider is cached by its owner (the catalog, with each
    provider's rows; the spec, with each provider's section), which refreshes it here.
    """
    _watchers.append(callback)


def changed() -> None:
    """Tell every watcher that the installed providers changed."""
    for callback in _watchers:
        callback()


def _declared(name: str, attribute: str) -> Any:
    """A fact of provider ``name``: from its section class if it has one, else from its provider object."""
    if name in _registered:
        return getattr(_registered[name], attribute)
    section = sections().get(name)
    if section is not None:
        return getattr(section, attribute)
    if name in BUILTIN:
        return None
    return getattr(plugin(name), attribute, None)


@functools.cache
def _builtin_sections() -> dict[str, type[BaseModel]]:
    return {name: importlib.import_module(module).SECTION for name, module in SECTIONS.items()}


def _provider_entry_points() -> dict[str, Any]:
    """The ``cloudtrain.providers`` entry points of installed packages, by name, not loaded."""
    return _entry_points()[PROVIDER_GROUP]


@functools.cache
def _plugin_sections() -> dict[str, type[BaseModel]]:
    """The ``cloudtrain.spec_sections`` entry points of installed packages, loaded, by name."""
    return {name: load(entry, "spec section") for name, entry in _entry_points()[SECTION_GROUP].items()}


@functools.cache
def _entry_points() -> dict[str, dict[str, Any]]:
    """Both groups' entry points, but the built-ins' names, from the one scan of installed packages.

    The first package on the path to declare a name wins, as ``importlib.metadata.entry_points``
    decides.
    """
    found: dict[str, dict[str, Any]] = {PROVIDER_GROUP: {}, SECTION_GROUP: {}}
    for group, named in found.items():
        for entry in entry_points.group(group):
            if entry.name not in BUILTIN:
                named.setdefault(entry.name, entry)
    return found


@functools.cache
def plugin(name: str) -> Any:
    """The provider object of the installed (entry point) provider ``name``, loaded once."""
    return load(_provider_entry_points()[name], "provider")


def provider_entry_point(name: str) -> Any:
    """The entry point of the installed provider ``name``, not loaded; None if there is none."""
    return _provider_entry_points().get(name)


def load(entry: Any, what: str) -> Any:
    """What an entry point names, or one CloudtrainError naming the package to fix."""
    try:
        return entry.load()
    except Exception as exc:
        raise CloudtrainError(
            f"The {what} {entry.name!r} ({entry.value}) failed to load: {exc}. "
            "Reinstall the package that provides it, or uninstall it."
        ) from exc
