"""Where each field of a loaded spec came from: the spec, ``--set``, a profile, the environment.

``cloudtrain.defaults`` fills a spec's unset fields from the layers beneath it and
records here which layer gave each field; ``plan`` shows it, ``check`` names it, and a
problem with a value from beneath the spec says where to fix it.

Example:
>>> Sources({"vertex.region": "environment:CLOUDSDK_COMPUTE_REGION"}, Profile(None, Path("/x"))).label("vertex.region")
'CLOUDSDK_COMPUTE_REGION'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from cloudtrain.messages import quote

if TYPE_CHECKING:
    from collections.abc import Iterable

    from cloudtrain.spec import JobSpec

# The sources a field can have: what `plan --json` shows under "sources".
SPEC, SET, PROFILE, DEFAULT = "spec", "set", "profile", "default"
ENVIRONMENT = "environment:"


@dataclass(frozen=True)
class Default:
    """A value from beneath the spec, and its source: ``profile`` or ``environment:<where>``."""

    value: Any
    source: str


@dataclass(frozen=True)
class Profile:
    """The profile that applies: its name (None: no profile), its file, and its values by field path."""

    name: str | None
    path: Path
    values: dict[str, Default] = field(default_factory=dict)


@dataclass(frozen=True)
class Sources:
    """Where each field of a loaded spec came from, for ``plan`` and for error messages.

    ``fields`` maps every field path of the spec to ``set``, ``spec``, ``profile``,
    ``environment:<variable or file>`` or ``default``.
    """

    fields: dict[str, str]
    profile: Profile

    def label(self, path: str) -> str:
        """Where ``path``'s value came from, for people: ``profile 'work'`` or ``AWS_REGION``."""
        source = self.fields.get(path, DEFAULT)
        if source == PROFILE:
            return f"profile {quote(self.profile.name)}"
        return source.removeprefix(ENVIRONMENT)

    def beneath(self) -> list[str]:
        """The field paths whose value came from the profile or the environment."""
        return [path for path, source in self.fields.items() if source not in (SET, SPEC, DEFAULT)]

    def annotate(self, problems: Iterable[str]) -> list[str]:
        """Problems about a value from beneath the spec, with where it came from and the fix."""
        return [self._annotated(problem) for problem in problems]

    def _annotated(self, problem: str) -> str:
        for path in sorted(self.beneath(), key=len, reverse=True):
            if problem.startswith(path) and problem[len(path) : len(path) + 1] in (":", " ", ""):
                where = self.label(path)
                where += f" of {self.profile.path}" if self.fields[path] == PROFILE else ""
                return f"{problem} It came from {where}: fix it there, or set {path} in the spec."
        return problem

    def notes(self, spec: JobSpec, section: str) -> list[tuple[str, str]]:
        """``(field path, "value (from where)")`` for the values of ``section`` from beneath the spec."""
        return [
            (path, f"{_value_at(spec, path)} (from {self.label(path)})")
            for path in self.beneath()
            if path.startswith(f"{section}.")
        ]


def _value_at(spec: BaseModel, path: str) -> Any:
    value: Any = spec
    for name in path.split("."):
        value = getattr(value, name)
    return value
