"""How cloudtrain words a bad value: quoted, cut short, and pydantic's errors as one line each.

pydantic's own errors name a location and a type; users need the field path, the value
they wrote and what to write instead. This module is that translation, used by both
ways a spec is built: ``load_spec`` (YAML) and ``JobSpec(...)`` (Python), so a problem
reads the same whichever way it came in. It imports no cloudtrain model, so the spec
module itself can use it; the model tree to walk is passed in as ``root``.

Example:
>>> from pydantic import ValidationError
>>> from cloudtrain.spec import JobSpec
>>> try:
...     JobSpec.model_validate({"name": "demo", "code": {"module": "t"}, "resources": {"hots": 2}})
... except ValidationError as exc:
...     validation_problems(exc, root=JobSpec)
["resources.hots: unknown field. Did you mean 'hosts'?"]
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from cloudtrain.errors import did_you_mean

# A control character (newline, tab, NUL, ...): never part of a name, a path or a URI.
CONTROL = re.compile(r"[\x00-\x1f\x7f]")

# Values echoed in messages are cut to this many characters.
QUOTE_LIMIT = 80
# Past 18 digits a number is a typo; Python's int() refuses past 4,300 anyway.
MAX_DIGITS = 18
# Problems described one by one; the rest are counted.
MAX_PROBLEMS = 20
# Fields whose values must never be echoed back (they may hold secrets).
_SECRET_SECTIONS = ("env",)

_EXAMPLES = {
    "name": "name: my-job",
    "code": "code: {module: trainer.task}",
    "storage.root": "storage: {root: gs://BUCKET/path}",
}


def counted(number: int, noun: str) -> str:
    """``1 replica``, ``2 replicas``: a count with its noun, plural only when it is not one.

    Example:
    >>> counted(1, "replica"), counted(2, "replica"), counted(0, "host")
    ('1 replica', '2 replicas', '0 hosts')
    """
    return f"{number} {noun}{'' if number == 1 else 's'}"


def shorten(text: str) -> str:
    """``text`` cut to ``QUOTE_LIMIT`` characters, with '…' when cut.

    Example:
    >>> shorten("x" * 100)[-3:]
    'xx…'
    """
    return text if len(text) <= QUOTE_LIMIT else text[:QUOTE_LIMIT] + "…"


# A run of non-blank characters longer than this in a message is an echoed value, not a word.
WORD_LIMIT = 256
_LONG_WORD = re.compile(rf"\S{{{WORD_LIMIT + 1},}}")


def cut_long_words(text: str) -> str:
    """``text`` with every run of non-blank characters over ``WORD_LIMIT`` cut to ``QUOTE_LIMIT``, with '…'.

    The last guard before an error reaches the terminal: a 10,000-character job ID or path
    that some message echoed whole still makes one short line.

    Example:
    >>> len(cut_long_words("No job matches " + "a" * 10_000 + ". Give its ID."))
    109
    """
    return _LONG_WORD.sub(lambda found: shorten(found.group()), text)


def quote(value: Any) -> str:
    """``repr(value)``, cut to about ``QUOTE_LIMIT`` characters without building the whole repr of a long string.

    Example:
    >>> quote("a" * 1_000_000)[-4:]
    "aa'…"
    """
    if isinstance(value, str) and len(value) > QUOTE_LIMIT:
        return repr(value[:QUOTE_LIMIT]) + "…"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**MAX_DIGITS:
        return f"<a number of more than {MAX_DIGITS} digits>"
    return shorten(repr(value))


def validation_problems(
    exc: ValidationError, *, root: type[BaseModel], at: tuple[str, ...] = ()
) -> list[str]:
    """One line per problem for the first ``MAX_PROBLEMS`` errors, and a count of the rest.

    Args:
        exc: what pydantic raised while validating ``root`` or one of its sections.
        root: the model whose fields the paths start from (``JobSpec``).
        at: where the validated model sits under ``root`` (``("training", "learning_rate")``
            for a ``LearningRate`` built alone), so its messages name the same field
            paths as the whole spec's.
    """
    errors = exc.errors(include_url=False, include_context=True, include_input=True)
    problems = [
        describe({**error, "loc": (*at, *error["loc"])}, root=root) for error in errors[:MAX_PROBLEMS]
    ]
    if len(errors) > MAX_PROBLEMS:
        problems.append(f"and {len(errors) - MAX_PROBLEMS} more problems. Fix the ones above first.")
    return problems


def section_path(root: type[BaseModel], section: type[BaseModel]) -> tuple[str, ...]:
    """Where ``section`` sits under ``root``, as field names; empty for ``root`` or a model not in it.

    Example:
    >>> from cloudtrain.spec import JobSpec, LearningRate
    >>> section_path(JobSpec, LearningRate)
    ('training', 'learning_rate')
    """
    queue: list[tuple[type[BaseModel], tuple[str, ...]]] = [(root, ())]
    while queue:
        model, path = queue.pop(0)
        if model is section:
            return path
        for name, field in model.model_fields.items():
            inner = _unwrap(field.annotation)
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                queue.append((inner, (*path, name)))
    return ()


def describe(error: Mapping[str, Any], *, root: type[BaseModel]) -> str:
    """One line for one pydantic error: field path, value received, and the fix."""
    kind = error["type"]
    ctx = error.get("ctx") or {}
    # A model's own check about one of its fields names it in ctx["at"] (``parameters.units``).
    loc = (*error["loc"], *str(ctx["at"]).split(".")) if "at" in ctx else tuple(error["loc"])
    path = _path(loc)
    value = error.get("input")
    secret = bool(loc) and loc[0] in _SECRET_SECTIONS
    received = "" if secret else f" Received: {path}={quote(value)}."
    if kind == "missing":
        example = _EXAMPLES.get(path, f"{path}: ...")
        return f"{path} is required. Add {example} to the spec."
    if kind == "extra_forbidden":
        siblings = _field_names(root, loc[:-1])
        return f"{path}: unknown field.{did_you_mean(str(loc[-1]), siblings, noun='fields')}"
    if kind in ("literal_error", "enum"):
        choices = _literal_choices(root, loc)
        hint = (
            did_you_mean(str(value), choices)
            if len(str(value)) <= QUOTE_LIMIT
            else f" Valid values: {', '.join(choices)}."
        )
        return f"{path}: {quote(value)} is not valid.{hint}"
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

# Error kinds raised by the spec's own validators, whose messages already end with the fix.
_OWN_MESSAGES = {
    "accelerator",
    "batch",
    "candidate_settings",
    "candidates",
    "channel",
    "code_entry",
    "code_module",
    "duplicate_candidate",
    "email",
    "env_key",
    "gcp_project",
    "grid",
    "job_name",
    "layout_map",
    "provider",
    "region",
    "reserved_env",
    "role_arn",
    "secret_env",
    "storage_root",
    "text",
    "tuned_value",
    "warmup",
}


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _sentence(message: str) -> str:
    return sentence(message.removeprefix("Value error, "))


def sentence(message: str) -> str:
    """``message`` ending as a sentence: a full stop added unless it already ends in one, or in "?" or "!".

    Example:
    >>> sentence("no node type"), sentence("Did you mean 'g5.xlarge'?")
    ('no node type.', "Did you mean 'g5.xlarge'?")
    """
    return message if message.endswith((".", "?", "!")) else message + "."


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _model_at(root: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The pydantic model class that holds the field at ``loc`` (None inside dicts; a list's items' model)."""
    annotation: Any = root
    for part in loc:
        if isinstance(part, int) and typing.get_origin(annotation) is list:
            annotation = _unwrap(typing.get_args(annotation)[0])
            continue
        field = annotation.model_fields.get(str(part)) if _is_model(annotation) else None
        if field is None:
            return None
        annotation = _unwrap(field.annotation)
    return annotation if _is_model(annotation) else None


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _unwrap(annotation: Any) -> Any:
    """``X | None`` -> ``X``."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation


def _field_names(root: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    model = _model_at(root, loc)
    return list(model.model_fields) if model else []


def _literal_choices(root: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    model = _model_at(root, loc[:-1])
    if model is None or loc[-1] not in model.model_fields:
        return []
    annotation = _unwrap(model.model_fields[loc[-1]].annotation)
    return [str(a) for a in typing.get_args(annotation)]
