"""The one list of providers: built-ins, entry points and providers registered at run time.

Every place that needs "all providers" or "the provider called X" asks here: the CLI's
``--provider`` choices, the cost table and its plot, the price refresh and ``cloudtrain
status ID``. Which providers exist, and what the spec and the catalog need of them
before any is loaded (sections, schemes, catalog rows), is ``cloudtrain.installed``.

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

from cloudtrain import installed
from cloudtrain.errors import CloudtrainError, SpecError, did_you_mean

if TYPE_CHECKING:
    from cloudtrain.provider.base import Provider

ENTRY_POINT_GROUP = installed.PROVIDER_GROUP
BUILTIN = installed.BUILTIN
_registered: dict[str, Provider] = {}


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
    if installed.provider_entry_point(name) is None:
        raise UnknownProviderError(f"Unknown provider {name!r}.{did_you_mean(name, names())}")
    provider: Provider = installed.plugin(name)
    return provider


def names() -> tuple[str, ...]:
    """Every provider's name: built-ins first, then entry points and registered ones by name."""
    return installed.names()


def providers() -> tuple[Provider, ...]:
    """Every provider, in the order of ``names()``."""
    return tuple(get(name) for name in names())


def schemes(*, plugins: bool = True) -> tuple[str, ...]:
    """Every storage scheme some provider reads and writes (``installed.schemes``).

    Example:
    >>> schemes(plugins=False)
    ('gs://', 's3://')
    """
    return installed.schemes(plugins=plugins)


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
    from cloudtrain.messages import quote  # loads pydantic: only on this error

    raise CloudtrainError(
        f"Cannot tell which provider job {quote(job_id)} belongs to. Pass --provider ({'|'.join(names())})."
    )


def register(provider: Provider) -> None:
    """Add ``provider`` for the rest of this process (tests, notebooks, plugins loaded by hand).

    A registered provider replaces a built-in or entry point of the same name; its
    section (``section``, optional) becomes a section of the spec.
    """
    _registered[provider.name] = provider
    installed.add(
        provider.name,
        section=getattr(provider, "section", None),
        title=provider.title,
        schemes=tuple(provider.schemes),
        catalog_dir=provider.catalog_dir,
    )


def unregister(name: str) -> None:
    """Undo ``register``; a built-in or entry point of that name is visible again."""
    _registered.pop(name, None)
    installed.remove(name)


def forget_entry_points() -> None:
    """Read the entry points again on next use (after installing or removing a plugin in-process)."""
    installed.forget()


def watch(callback: Callable[[], None]) -> None:
    """Call ``callback`` whenever the list of providers changes (``installed.watch``)."""
    installed.watch(callback)


@functools.cache
def _builtin(name: str) -> Provider:
    provider: Provider = importlib.import_module(BUILTIN[name]).provider
    return provider
