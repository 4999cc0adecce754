"""Load a job spec from YAML, apply ``--set`` overrides, and turn every problem into a clear message.

pydantic's own errors name a location and a type; users need the field path, the value
they wrote and what to write instead. This module is that translation, so every
command that reads a spec reports problems the same way.

Example:
>>> spec = parse_spec({"name": "demo", "code": {"module": "trainer.task"}}, ["training.epochs=5"])
>>> spec.training.epochs
5
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from cloudtrain.errors import SpecError, did_you_mean
from cloudtrain.spec import JobSpec

# Fields whose values must never be echoed back (they may hold secrets).
_SECRET_SECTIONS = ("env",)

_EXAMPLES = {
    "name": "name: my-job",
    "code": "code: {module: trainer.task}",
    "storage.root": "storage: {root: gs://BUCKET/path}",
}


def load_spec(path: str | Path, overrides: Iterable[str] = ()) -> JobSpec:
    """Read ``path`` (YAML), apply ``KEY=VALUE`` overrides, and validate.

    ``code.source_dir`` and a local ``storage.root`` are resolved relative to the spec
    file's folder, so a job runs the same from any working directory.

    Raises:
        SpecError: one message per problem; nothing is contacted over the network.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise SpecError(f"{path}: no such file. Pass the path of a job spec, e.g. job.yaml.") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: cannot read the spec ({exc.__class__.__name__}).") from None
    data = _parse_yaml(text, path)
    spec = parse_spec(data, overrides, source=str(path))
    return _resolve_local_paths(spec, path.parent)


def _resolve_local_paths(spec: JobSpec, base: Path) -> JobSpec:
    """Make ``code.source_dir`` and a local ``storage.root`` relative to the spec's folder."""
    update: dict[str, Any] = {
        "code": spec.code.model_copy(update={"source_dir": str((base / spec.code.source_dir).resolve())})
    }
    if "://" not in spec.storage.root:
        root = str((base / spec.storage.root).resolve())
        update["storage"] = spec.storage.model_copy(update={"root": root})
    return spec.model_copy(update=update)


def parse_spec(data: Any, overrides: Iterable[str] = (), *, source: str = "the spec") -> JobSpec:
    """Validate already-parsed spec data (a mapping), after applying overrides."""
    if not isinstance(data, Mapping):
        raise SpecError(
            f"{source} must be a YAML mapping at the top level (name: ..., code: ...). "
            f"Received: {type(data).__name__}."
        )
    data = apply_overrides(dict(data), overrides)
    try:
        return JobSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError([describe(error) for error in exc.errors()]) from None


def _parse_yaml(text: str, path: Path) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise SpecError(
            f"{path}{where}: could not parse YAML ({problem}). Check indentation and quoting."
        ) from None


def apply_overrides(data: dict[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    """Apply ``training.epochs=5``-style overrides; values are parsed as YAML scalars.

    Example:
    >>> apply_overrides({"training": {"epochs": 3}}, ["training.epochs=5", "resources.spot=true"])
    {'training': {'epochs': 5}, 'resources': {'spot': True}}
    """
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise SpecError(f"--set expects KEY=VALUE, e.g. --set training.epochs=5. Received: {item!r}.")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        node = data
        parts = key.strip().split(".")
        for depth, part in enumerate(parts[:-1]):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                where = ".".join(parts[: depth + 1])
                raise SpecError(
                    f"--set {key}: {where} is not a section, so it has no field {parts[depth + 1]!r}."
                )
            node = child
        node[parts[-1]] = value
    return data


def describe(error: Mapping[str, Any]) -> str:
    """One line for one pydantic error: field path, value received, and the fix."""
    loc = tuple(error["loc"])
    path = _path(loc)
    kind = error["type"]
    ctx = error.get("ctx") or {}
    value = error.get("input")
    secret = bool(loc) and loc[0] in _SECRET_SECTIONS
    received = "" if secret else f" Received: {path}={value!r}."
    if kind == "missing":
        example = _EXAMPLES.get(path, f"{path}: ...")
        return f"{path} is required. Add {example} to the spec."
    if kind == "extra_forbidden":
        siblings = _field_names(loc[:-1])
        return f"{path}: unknown field.{did_you_mean(str(loc[-1]), siblings, noun='fields')}"
    if kind in ("literal_error", "enum"):
        choices = _literal_choices(loc)
        return f"{path}: {value!r} is not valid.{did_you_mean(str(value), choices)}"
    if kind in _TYPE_WORDS:
        return f"{path} must be {_TYPE_WORDS[kind]}.{received}"
    if kind in _BOUNDS:
        op, bound_key = _BOUNDS[kind]
        return f"{path} must be {op} {_number(ctx[bound_key])}.{received}"
    message = _sentence(error["msg"])
    if not path:
        return message
    if kind in _OWN_MESSAGES:
        return f"{path}: {message}"
    return f"{path}: {message}{received}"


_TYPE_WORDS = {
    "int_parsing": "a whole number",
    "int_type": "a whole number",
    "int_from_float": "a whole number",
    "float_parsing": "a number",
    "float_type": "a number",
    "bool_parsing": "true or false",
    "bool_type": "true or false",
    "string_type": "a string (quote it)",
    "dict_type": "a mapping (key: value lines)",
    "model_type": "a mapping (key: value lines)",
    "model_attributes_type": "a mapping (key: value lines)",
    "list_type": "a list",
    "finite_number": "a finite number",
    "duration": "a duration like 90m, 24h or 2d",
}

_BOUNDS = {
    "greater_than": (">", "gt"),
    "greater_than_equal": (">=", "ge"),
    "less_than": ("<", "lt"),
    "less_than_equal": ("<=", "le"),
}

_OWN_MESSAGES = {
    "accelerator",
    "batch",
    "channel",
    "code_entry",
    "code_module",
    "env_key",
    "job_name",
    "provider",
    "role_arn",
    "secret_env",
    "storage_root",
}


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _sentence(message: str) -> str:
    message = message.removeprefix("Value error, ")
    return message if message.endswith((".", "?", "!")) else message + "."


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The pydantic model class that holds the field at ``loc`` (None inside dicts/lists)."""
    model: type[BaseModel] = JobSpec
    for part in loc:
        field = model.model_fields.get(str(part)) if isinstance(part, str) else None
        if field is None:
            return None
        inner = _unwrap(field.annotation)
        if not (isinstance(inner, type) and issubclass(inner, BaseModel)):
            return None
        model = inner
    return model


def _unwrap(annotation: Any) -> Any:
    """``X | None`` -> ``X``."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation


def _field_names(loc: tuple[Any, ...]) -> list[str]:
    model = _model_at(loc)
    return list(model.model_fields) if model else []


def _literal_choices(loc: tuple[Any, ...]) -> list[str]:
    model = _model_at(loc[:-1])
    if model is None or loc[-1] not in model.model_fields:
        return []
    annotation = _unwrap(model.model_fields[loc[-1]].annotation)
    return [str(a) for a in typing.get_args(annotation)]
