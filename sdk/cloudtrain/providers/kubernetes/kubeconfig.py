"""The kubeconfig, read once per use by one bounded reader, and merged as ``kubectl`` merges it.

Which files: those of ``$KUBECONFIG`` (a list, ``os.pathsep`` between paths), else
``~/.kube/config``; a listed file that does not exist is skipped. How they merge
(https://kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig/,
"Merging kubeconfig files"): the first file to set ``current-context`` wins, and so does
the first definition of each named cluster, context and user. Each definition keeps its
file, because a relative certificate path is relative to the file that names it (the
``kubernetes`` client's ``KubeConfigMerger`` does the same; ``clients.connect`` hands it
what this module read, so nothing reads the files twice or differently).

Bounds, so a file that is not a kubeconfig cannot take cloudtrain down: the files are
read by ``cloudtrain.files`` (a FIFO or ``/dev/zero`` too: without blocking, ``MAX_BYTES``
for all of them together), parsed by ``cloudtrain.boundedyaml`` (nesting and values,
aliases expanded, within ``LIMITS``), and the parts a client reads are checked for their
shape. Any defect is one ``KubeconfigError`` naming the file and what is wrong.

Only what a job sent to Kubernetes needs reads it: the provider's discovered defaults
(``discover``), ``check`` and the client (``clients.connect``).

Example:
>>> read({"KUBECONFIG": "/nonexistent", "HOME": "/nonexistent"}).current is None
True
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cloudtrain import boundedyaml, files
from cloudtrain.errors import CredentialsError
from cloudtrain.provider.discovery import home

KUBECONFIG_VARIABLE = "KUBECONFIG"
DEFAULT_KUBECONFIG = Path(".kube") / "config"
# A kubeconfig with a few hundred clusters and their certificates is a few MB; all files together.
MAX_BYTES = 4 * 1024 * 1024
# kubectl's own files nest 6 deep (users[].user.exec.env[].value); a few hundred clusters are 100,000 values.
LIMITS = boundedyaml.Limits(depth=32, values=400_000)
# The named lists a kubeconfig holds, and the key of each entry's body.
SECTIONS = {"clusters": "cluster", "contexts": "context", "users": "user"}
# Keys of an entry's body that a client reads as text.
TEXT_KEYS = {"cluster": ("server",), "context": ("cluster", "user", "namespace"), "user": ()}
FIX = "Fix the file (kubectl config view reads it too), or point $KUBECONFIG at another."
# What a YAML value that is not the one expected holds, in the user's words.
KINDS = {list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}


class KubeconfigError(CredentialsError):
    """A kubeconfig file that cannot be used: the message names the file, the problem and the fix.

    ``detail`` is the file and the problem alone (``kubeconfig PATH: problem``), for ``check``.
    """

    def __init__(self, path: Path, problem: str) -> None:
        self.detail = f"kubeconfig {path}: {problem}"
        super().__init__(f"{self.detail} {FIX}")


@dataclass(frozen=True)
class Entry:
    """One named cluster, context or user, and the file that defines it."""

    name: str
    body: dict[str, Any]
    path: Path


@dataclass
class Kubeconfig:
    """The merged kubeconfig: the current context (and its file), and the first entry of each name."""

    files: list[Path] = field(default_factory=list)
    current: Entry | None = None
    sections: dict[str, dict[str, Entry]] = field(default_factory=lambda: {key: {} for key in SECTIONS})

    @property
    def contexts(self) -> dict[str, Entry]:
        return self.sections["contexts"]

    def context(self, name: str | None) -> Entry | None:
        """The context ``name`` (None: the current one); None when there is no such context."""
        if name is None:
            return self.contexts.get(self.current.name) if self.current else None
        return self.contexts.get(name)

    def add(self, path: Path, config: Mapping[str, Any]) -> None:
        """Merge one file's config beneath what earlier files set."""
        self.files.append(path)
        current = config.get("current-context")
        if current and self.current is None:
            self.current = Entry(str(current), {}, path)
        for section, key in SECTIONS.items():
            for item in config.get(section) or []:
                self.sections[section].setdefault(
                    item["name"], Entry(item["name"], item.get(key) or {}, path)
                )


def kubeconfig_files(environ: Mapping[str, str]) -> list[Path]:
    """The kubeconfig files ``kubectl`` reads, in order."""
    listed = environ.get(KUBECONFIG_VARIABLE, "")
    if listed:
        return [Path(part).expanduser() for part in listed.split(os.pathsep) if part]
    return [home(environ) / DEFAULT_KUBECONFIG]


def read(environ: Mapping[str, str]) -> Kubeconfig:
    """The kubeconfig files of ``environ``, read within bounds, checked and merged.

    Raises:
        KubeconfigError: a file is not a kubeconfig cloudtrain can read (one line: the file,
            the problem, the fix).
    """
    merged = Kubeconfig()
    budget = MAX_BYTES
    for path in kubeconfig_files(environ):
        try:
            text = files.read_text(path, limit=budget, special=True)
        except FileNotFoundError:
            continue
        except files.UnreadableFile as exc:
            raise _error(path, exc.problem) from None
        budget -= len(text.encode())
        merged.add(path, _checked(path, _parsed(path, text)))
    return merged


def in_cluster_namespace(path: Path) -> str | None:
    """The namespace of the pod's service account, from the file the kubelet mounts; None without one."""
    try:
        return files.read_text(path, limit=1024).strip() or None
    except (FileNotFoundError, files.UnreadableFile):
        return None


def _parsed(path: Path, text: str) -> Any:
    try:
        return boundedyaml.load(text, LIMITS)
    except boundedyaml.YamlRefused as exc:
        raise _error(path, str(exc)) from None


def _checked(path: Path, config: Any) -> dict[str, Any]:
    """``config`` when the parts a client reads have the shape it reads; an empty file is an empty config."""
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise _error(
            path,
            f"must be a YAML mapping (apiVersion, clusters, contexts, users). Received: {_kind(config)}.",
        )
    current = config.get("current-context")
    if current is not None and not isinstance(current, str):
        raise _error(path, f"current-context must be a context's name. Received: {_kind(current)}.")
    for section, key in SECTIONS.items():
        _check_section(path, section, key, config.get(section))
    return config


def _check_section(path: Path, section: str, key: str, items: Any) -> None:
    if items is None:
        return
    if not isinstance(items, list):
        raise _error(path, f"{section} must be a list of entries (- name: ...). Received: {_kind(items)}.")
    for index, item in enumerate(items):
        where = f"{section}[{index}]"
        if not isinstance(item, dict):
            raise _error(path, f"{where} must be a mapping (name: ..., {key}: ...). Received: {_kind(item)}.")
        if not isinstance(item.get("name"), str) or not item["name"]:
            raise _error(
                path, f"{where}.name must be a non-empty string. Received: {_kind(item.get('name'))}."
            )
        body = item.get(key)
        if body is not None and not isinstance(body, dict):
            raise _error(
                path, f"{where}.{key} must be a mapping (key: value lines). Received: {_kind(body)}."
            )
        for name in TEXT_KEYS[key]:
            value = (body or {}).get(name)
            if value is not None and not isinstance(value, str):
                raise _error(path, f"{where}.{key}.{name} must be a string. Received: {_kind(value)}.")


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    return KINDS.get(type(value), "a mapping" if isinstance(value, dict) else type(value).__name__)


def _error(path: Path, problem: str) -> KubeconfigError:
    return KubeconfigError(path, problem)
