"""Defaults beneath a job spec file: the user's profile, then the clouds' own settings.

Every spec repeating the same project, region, role and buckets is the chore this ends.
One precedence holds for every field of a spec read from a file (``load_spec``):

    --set  >  the spec file  >  the profile  >  the environment  >  the built-in default

- **profile**: ``$XDG_CONFIG_HOME/cloudtrain/config.yaml`` (default
  ``~/.config/cloudtrain/config.yaml``), the profile named by ``--profile``, else
  ``$CLOUDTRAIN_PROFILE``, else ``default`` (which may be absent). A profile holds provider
  sections with the spec's own field names. Its ``storage_root`` is where all of the user's
  jobs go, so each job gets the folder ``<storage_root>/<job name>`` under it.
- **environment**: what the clouds' own tools would use, asked of each provider that
  has a spec section (``discover_settings``): the Google Cloud project and region, the AWS
  region, from their variables and their tools' configuration files; and MLflow's
  ``MLFLOW_TRACKING_URI`` for a spec that turns ``tracking:`` on (``cloudtrain.tracker``).

A field counts as given by a layer when the layer writes it, or writes a section above
it as something other than a mapping; a mapping-valued field (``labels``, ``tags``) is
one value, replaced whole by a higher layer, never merged.

A ``JobSpec`` built in Python is used as written: no file or environment is read behind
its back, so ``plan(spec)`` stays a function of its input and a spec built on one machine
means the same on another. ``cloudtrain.with_defaults(spec)`` applies these layers to the
fields it leaves unset.

Example:
>>> environ = {"HOME": "/nonexistent", "AWS_REGION": "eu-west-1"}
>>> spec = {"name": "demo", "code": {"module": "trainer.task"}}
>>> layered = layer(spec, spec=spec, overrides={}, environ=environ)
>>> layered.data["sagemaker"], layered.sources.fields["sagemaker.region"]
({'region': 'eu-west-1'}, 'environment:AWS_REGION')
"""

from __future__ import annotations

import copy
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import BaseModel

from cloudtrain import tracker
from cloudtrain.errors import ConfigError, did_you_mean
from cloudtrain.messages import quote, shorten
from cloudtrain.provider import registry
from cloudtrain.provider.base import Discovered, DiscoversSettings, DiscoversTargetSettings
from cloudtrain.provider.discovery import home
from cloudtrain.sections import provider_sections as provider_sections_of
from cloudtrain.sources import DEFAULT, ENVIRONMENT, PROFILE, SET, SPEC, Default, Profile, Sources
from cloudtrain.spec import JobSpec

if TYPE_CHECKING:
    from collections.abc import Iterable

PROFILE_VARIABLE = "CLOUDTRAIN_PROFILE"
DEFAULT_PROFILE = "default"
# A config file is a screen of YAML; past these it is a mistake or an attack.
MAX_CONFIG_BYTES = 64 * 1024
MAX_CONFIG_DEPTH = 16
# Profile fields that name a place shared by all of the user's jobs: each job gets its own folder.
PER_JOB_FOLDERS = ("storage_root",)


@dataclass(frozen=True)
class Layered:
    """Spec data with the defaults filled in beneath it, and where each field came from."""

    data: dict[str, Any]
    sources: Sources


def layer(
    written: Mapping[str, Any],
    *,
    spec: Mapping[str, Any],
    overrides: Mapping[str, Any],
    profile: str | None = None,
    environ: Mapping[str, str] | None = None,
    provider: str | None = None,
) -> Layered:
    """Fill the fields ``written`` leaves out from the profile, then the environment.

    Args:
        written: the spec file's data with the ``--set`` overrides applied.
        spec: the spec file's data alone, and ``overrides`` the overrides alone (as data),
            so each field's source can be told.
        profile: the profile's name; default ``$CLOUDTRAIN_PROFILE``, else ``default``.
        environ: the environment to read; default ``os.environ``.
        provider: the provider the command sends the job to; default the spec's
            ``provider`` (``local`` when unset). Only its ``DiscoversTargetSettings`` are read.

    Raises:
        ConfigError: the config file is invalid, or names no profile that was asked for.
        CloudtrainError: the target provider's own settings file is unusable (its message).
    """
    environ = os.environ if environ is None else environ
    chosen = read_profile(profile, environ, job_name=written.get("name"))
    given = flatten(written)
    target = provider or written.get("provider", JobSpec.model_fields["provider"].default)
    beneath = {**environment_defaults(environ, target), **chosen.values}
    used = {path: default for path, default in beneath.items() if not _given(path, given)}
    # tracking: is one value to the layers (an optional section, as placement: is), so its
    # URI is filled here, only where the section leaves it out (``tracker.uri_default``).
    used |= {
        path: Default(value, ENVIRONMENT + tracker.URI_ENV)
        for path, value in tracker.uri_default(written, environ).items()
    }
    fields = _sources(flatten(spec), flatten(overrides), used)
    return Layered(fill(written, used), Sources(fields, chosen))


def read_profile(profile: str | None, environ: Mapping[str, str], *, job_name: Any = None) -> Profile:
    """The profile's values by field path, ``storage_root`` joined with ``job_name``.

    Raises:
        ConfigError: the file is invalid; or a profile was asked for by name (argument or
            ``$CLOUDTRAIN_PROFILE``) and the file or the profile is missing.
    """
    path = config_path(environ)
    name, why = _chosen_name(profile, environ)
    profiles = read_config(path)
    if name not in profiles:
        if why is not None:
            raise ConfigError(_missing_profile(name, why, path, profiles))
        return Profile(None, path)
    values = {
        f"{section}.{key}": Default(_per_job(key, value, job_name), PROFILE)
        for section, settings in profiles[name].items()
        for key, value in settings.items()
    }
    return Profile(name, path, values)


def profile_names(environ: Mapping[str, str] | None = None) -> list[str]:
    """The profiles of the config file, for shell completion; none when it is missing or invalid."""
    environ = os.environ if environ is None else environ
    try:
        return sorted(read_config(config_path(environ)))
    except ConfigError:
        return []


def config_path(environ: Mapping[str, str]) -> Path:
    """``$XDG_CONFIG_HOME/cloudtrain/config.yaml``, else ``~/.config/cloudtrain/config.yaml``.

    A relative ``XDG_CONFIG_HOME`` is ignored, as the XDG Base Directory specification asks.
    """
    base = environ.get("XDG_CONFIG_HOME", "")
    folder = Path(base) if os.path.isabs(base) else home(environ) / ".config"
    return folder / "cloudtrain" / "config.yaml"


def environment_defaults(environ: Mapping[str, str], target: Any = None) -> dict[str, Default]:
    """What each provider with a spec section finds in its cloud's tools, by field path.

    A provider whose defaults come from a file only its own jobs need
    (``DiscoversTargetSettings``: the kubeconfig) is asked only when it is ``target``,
    the provider the command sends the job to (as the spec data has it: any YAML value).
    """
    found: dict[str, Default] = {}
    for section in provider_sections():
        provider = registry.get(section)
        discovered: dict[str, Discovered] = {}
        if isinstance(provider, DiscoversSettings):
            discovered = provider.discover_settings(environ)
        elif isinstance(provider, DiscoversTargetSettings) and section == target:
            discovered = provider.discover_target_settings(environ)
        for key, value in discovered.items():
            found[f"{section}.{key}"] = Default(value.value, ENVIRONMENT + value.source)
    return found


def provider_sections() -> dict[str, type[BaseModel]]:
    """The spec's sections named after a provider, and their models: each installed provider's own."""
    return dict(provider_sections_of(JobSpec))


def read_config(path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """The profiles of the config file at ``path``; none when there is no file.

    Raises:
        ConfigError: naming the file, for a file that is not small regular UTF-8 YAML
            without aliases, or holds a key that is not a profile, section or field.
    """
    text = _config_text(path)
    return {} if text is None else _profiles(_parse(text, path), path)


def _chosen_name(profile: str | None, environ: Mapping[str, str]) -> tuple[str, str | None]:
    """The profile's name, and why (None: nobody asked for it, so a missing one is fine).

    The reason is ``""`` for the argument (``--profile``) and names the variable otherwise.
    """
    if profile:
        return profile, ""
    if environ.get(PROFILE_VARIABLE):
        return environ[PROFILE_VARIABLE], f" (chosen by {PROFILE_VARIABLE})"
    return DEFAULT_PROFILE, None


def _missing_profile(name: str, why: str, path: Path, profiles: Mapping[str, Any]) -> str:
    if not path.exists():
        return (
            f"Profile {quote(name)}{why} needs the config file {path}, which does not exist. "
            f"Create it with a 'profiles: {shorten(name)}:' section, or choose no profile."
        )
    hint = did_you_mean(name, profiles, noun="profiles") if profiles else " It defines no profile."
    return f"Profile {quote(name)}{why} is not in {path}.{hint} Add it under profiles:, or choose another."


def _per_job(key: str, value: Any, job_name: Any) -> Any:
    """A shared folder (``storage_root``) becomes this job's folder under it."""
    if key in PER_JOB_FOLDERS and isinstance(value, str) and isinstance(job_name, str) and job_name:
        return f"{value.rstrip('/')}/{job_name}"
    return value


def _config_text(path: Path) -> str | None:
    """The file's text: None when absent; else a small regular UTF-8 file, or ConfigError."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read the config file ({type(exc).__name__}).") from None
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"{path}: not a regular file of at most {MAX_CONFIG_BYTES:,} bytes. "
            "A cloudtrain config file is a short YAML file; replace it, or remove it."
        )
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
        return _decoded(raw, path)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file ({type(exc).__name__}).") from None


def _decoded(raw: bytes, path: Path) -> str:
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES:,} bytes. Check the file.")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}). Save it as UTF-8.") from None
    if "\0" in text:
        raise ConfigError(f"{path}: holds a NUL byte. Save it as plain text.")
    return text


class _Refused(ConfigError):
    """The YAML is refused while it is read; the message says why."""


class _ConfigLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses aliases, deep nesting and keys written twice.

    A config file needs none of these; refusing aliases rules out alias bombs, and the
    depth limit keeps the composer's recursion short.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            raise _Refused("uses a YAML alias (*name). Write the value out.")
        self._depth += 1
        try:
            if self._depth > MAX_CONFIG_DEPTH:
                raise _Refused(f"nested deeper than {MAX_CONFIG_DEPTH} levels. A profile needs 3.")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[str] = set()
        for key, _ in node.value:
            if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                if key.value in seen:
                    raise _Refused(
                        f"line {key.start_mark.line + 1}: {quote(key.value)} is written twice. Keep one."
                    )
                seen.add(key.value)
        mapping: dict[Any, Any] = super().construct_mapping(node, deep)
        return mapping


def _parse(text: str, path: Path) -> Any:
    """The YAML of the config file, or ConfigError naming the file (and the line, when known)."""
    loader = _ConfigLoader(text)
    try:
        return loader.get_single_data()
    except _Refused as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(
            f"{path}{where}: could not parse YAML ({problem}). Check indentation and quoting."
        ) from None
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. "!!int abc"
        raise ConfigError(f"{path}: holds a value YAML cannot build ({shorten(str(exc))}).") from None
    finally:
        loader.dispose()


def _profiles(data: Any, path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """``profiles: {NAME: {SECTION: {FIELD: value}}}``, every key checked against the spec's sections."""
    top = _mapping(data, path, "the top level")
    for key in top:
        if key != "profiles":
            raise ConfigError(
                _unknown(path, "", key, ["profiles"], "A profile's settings go under profiles: NAME:.")
            )
    profiles = _mapping(top.get("profiles"), path, "profiles")
    return {str(name): _profile(body, path, f"profiles.{name}") for name, body in profiles.items()}


def _profile(body: Any, path: Path, where: str) -> dict[str, dict[str, Any]]:
    sections = provider_sections()
    checked: dict[str, dict[str, Any]] = {}
    for section, settings in _mapping(body, path, where).items():
        if section not in sections:
            raise ConfigError(_unknown(path, where, section, sections, "A profile holds provider sections."))
        values = _mapping(settings, path, f"{where}.{section}")
        fields = sections[section].model_fields
        for key in values:
            if key not in fields:
                raise ConfigError(_unknown(path, f"{where}.{section}", key, fields, ""))
        checked[section] = dict(values)
    return checked


def _mapping(value: Any, path: Path, where: str) -> Mapping[Any, Any]:
    """``value`` as a mapping; nothing (an empty key) is an empty one."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"{path}: {where} must be a mapping (key: value lines). Received: {type(value).__name__}."
        )
    return value


def _unknown(path: Path, where: str, key: Any, valid: Iterable[str], why: str) -> str:
    """``FILE: where.key: unknown key.`` with the close match or the valid keys, and why."""
    name = shorten(str(key))
    hint = did_you_mean(str(key), valid, noun="keys") if len(str(key)) <= 80 else ""
    return f"{path}: {where + '.' if where else ''}{name}: unknown key.{hint}{' ' + why if why else ''}"


def _sections(model: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """The fields of ``model`` that are sections (models themselves), by name."""
    return {
        name: info.annotation
        for name, info in model.model_fields.items()
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel)
    }


def leaves(model: type[BaseModel] = JobSpec, prefix: str = "") -> list[str]:
    """Every field path of ``model`` that is not a section: ``resources.hosts``, ``vertex.labels``.

    Example:
    >>> "training.learning_rate.base" in leaves() and "training.learning_rate" not in leaves()
    True
    """
    sections = _sections(model)
    paths: list[str] = []
    for name in model.model_fields:
        path = f"{prefix}{name}"
        paths += leaves(sections[name], f"{path}.") if name in sections else [path]
    return paths


def flatten(data: Mapping[str, Any], model: type[BaseModel] = JobSpec, prefix: str = "") -> dict[str, Any]:
    """Spec data as ``{field path: value}``, down through the sections of ``model``.

    Example:
    >>> flatten({"vertex": {"project": "p", "labels": {"team": "a"}}, "name": "x"})
    {'vertex.project': 'p', 'vertex.labels': {'team': 'a'}, 'name': 'x'}
    """
    sections = _sections(model)
    found: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{prefix}{key}"
        if key in sections and isinstance(value, Mapping):
            found.update(flatten(value, sections[key], f"{path}."))
        else:
            found[path] = value
    return found


def fill(data: Mapping[str, Any], defaults: Mapping[str, Default]) -> dict[str, Any]:
    """A copy of ``data`` with each default put at its path, creating sections as needed."""
    filled = copy.deepcopy(dict(data))
    for path, default in defaults.items():
        *sections, key = path.split(".")
        node = filled
        for name in sections:
            node = node.setdefault(name, {})
        node[key] = copy.deepcopy(default.value)
    return filled


def _given(path: str, given: Mapping[str, Any]) -> bool:
    """Whether a layer whose fields are ``given`` wrote ``path``, or a non-mapping above it."""
    parts = path.split(".")
    return any(".".join(parts[:end]) in given for end in range(1, len(parts) + 1))


def _sources(
    spec: Mapping[str, Any], overrides: Mapping[str, Any], used: Mapping[str, Default]
) -> dict[str, str]:
    """Every field path of the spec and the layer that gave its value."""
    sources: dict[str, str] = {}
    for path in leaves():
        if _given(path, overrides):
            sources[path] = SET
        elif _given(path, spec):
            sources[path] = SPEC
        else:
            sources[path] = used[path].source if path in used else DEFAULT
    return sources
