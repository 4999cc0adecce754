"""The one list of providers: built-ins, entry points and providers registered at run time.

Every place that needs "all providers" or "the provider called X" asks here: the spec's
``provider`` field, the CLI's ``--provider`` choices, planning, the cost table and its
plot, the price refresh and ``cloudtrain status ID``.

A third-party package adds a provider with an entry point::

    [project.entry-points."cloudtrain.providers"]
    mycloud = "mycloud_cloudtrain:provider"

Entry points are read only when a name is not a built-in or the whole list is asked
for, so commands that name a built-in provider do not pay for scanning installed
packages.

Example:
>>> names()[:3]
('local', 'vertex', 'sagemaker')
>>> get("local").title
'this machine'
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from cloudtrain.errors import CloudtrainError, SpecError, did_you_mean

if TYPE_CHECKING:
    from cloudtrain.providers.base import Provider

ENTRY_POINT_GROUP = "cloudtrain.providers"
# name -> module whose ``provider`` attribute is the Provider; the order is the display order.
BUILTIN = {
    "local": "cloudtrain.providers.local",
    "vertex": "cloudtrain.providers.vertex",
    "sagemaker": "cloudtrain.providers.sagemaker",
}
_registered: dict[str, Provider] = {}
_watchers: list[Callable[[], None]] = []


class UnknownProviderError(SpecError):
    """A provider name that no built-in, entry point or ``register`` call provides."""


def get(name: str) -> Provider:
    """The provider called ``name``.

    Raises:
        UnknownProviderError: with the close matches, if there is none.
    """
    if name in _registered:
        return _registered[name]
    if name in BUILTIN:
        return _builtin(name)
    found = _entry_points().get(name)
    if found is None:
        raise UnknownProviderError(f"Unknown provider {name!r}.{did_you_mean(name, names())}")
    return found


def names() -> tuple[str, ...]:
    """Every provider's name: built-ins first, then entry points and registered ones by name."""
    extra = sorted(({*_entry_points(), *_registered}) - set(BUILTIN))
    return (*BUILTIN, *extra)


def providers() -> tuple[Provider, ...]:
    """Every provider, in the order of ``names()``."""
    return tuple(get(name) for name in names())


def schemes(*, plugins: bool = True) -> tuple[str, ...]:
    """Every storage scheme some provider reads and writes, in the order of ``names()``.

    ``plugins=False`` asks the built-in and registered providers only, which needs no scan
    of installed packages: ask that first when the answer is usually there.

    Example:
    >>> schemes(plugins=False)
    ('gs://', 's3://')
    """
    found = providers() if plugins else tuple(get(name) for name in (*BUILTIN, *_registered))
    return tuple(dict.fromkeys(scheme for provider in found for scheme in provider.schemes))


def billed() -> tuple[Provider, ...]:
    """The providers whose jobs cost money: the ones the cost table compares."""
    return tuple(provider for provider in providers() if provider.billed)


def for_job(job_id: str) -> Provider:
    """The provider that owns ``job_id`` (asked in the order of ``names()``).

    Raises:
        CloudtrainError: if no provider recognises the ID.
    """
    for provider in providers():
        if provider.owns(job_id):
            return provider
    raise CloudtrainError(
        f"Cannot tell which provider job {job_id!r} belongs to. Pass --provider ({'|'.join(names())})."
    )


def register(provider: Provider) -> None:
    """Add ``provider`` for the rest of this process (tests, notebooks, plugins loaded by hand).

    A registered provider replaces a built-in or entry point of the same name.
    """
    _registered[provider.name] = provider
    _changed()


def unregister(name: str) -> None:
    """Undo ``register``; a built-in or entry point of that name is visible again."""
    _registered.pop(name, None)
    _changed()


def forget_entry_points() -> None:
    """Read the entry points again on next use (after installing or removing a plugin in-process)."""
    _entry_points.cache_clear()
    _changed()


def watch(callback: Callable[[], None]) -> None:
    """Call ``callback`` whenever the list of providers changes.

    What is computed from every provider (the catalog, with each provider's
    ``catalog_dir`` rows) is cached by its owner, which empties its cache here.
    """
    _watchers.append(callback)


def _changed() -> None:
    for callback in _watchers:
        callback()


@functools.cache
def _builtin(name: str) -> Provider:
    provider: Provider = importlib.import_module(BUILTIN[name]).provider
    return provider


@functools.cache
def _entry_points() -> dict[str, Provider]:
    from importlib.metadata import entry_points

    found: dict[str, Provider] = {}
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name not in BUILTIN:
            found[entry.name] = _load(entry)
    return found


def _load(entry: object) -> Provider:
    from importlib.metadata import EntryPoint

    assert isinstance(entry, EntryPoint)
    try:
        provider: Provider = entry.load()
    except Exception as exc:
        raise CloudtrainError(
            f"The provider {entry.name!r} ({entry.value}) failed to load: {exc}. "
            "Reinstall the package that provides it, or uninstall it."
        ) from exc
    return provider
