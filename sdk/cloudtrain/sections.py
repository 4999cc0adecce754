"""What every section of a job spec is made of: the base model, and the field types they share.

``JobSpec`` (``cloudtrain.spec``) and each provider's own section (``vertex:``,
``sagemaker:``, a plugin's) are built from these, so a field means and checks the same
wherever it is, and every section reports a bad value in the same words, with the field
path of the whole spec. This module names no section: a provider's package defines its
own (``ProviderSection``), and the spec adds it (``cloudtrain.installed``).

Example:
>>> parse_duration("1.5h")
5400
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, ClassVar, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
)
from pydantic_core import PydanticCustomError

from cloudtrain import uris
from cloudtrain.errors import SpecValidationError
from cloudtrain.messages import CONTROL, MAX_DIGITS, quote, section_path, shorten, validation_problems
from cloudtrain.secrets import value_kind

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
# A Keras metric name as the runtime's epoch lines print it (``val_binary_accuracy``).
METRIC_NAME = r"[A-Za-z_][A-Za-z0-9_]{0,62}"
_SURROGATE = re.compile("[\ud800-\udfff]")


# cloudtrain limit: a year; the providers stop far sooner (SageMaker 28 days, Vertex spot 7).
MAX_DURATION_S = 365 * 86400


def _exact_number(value: Any) -> Any:
    """Refuse numbers that are typos or attacks: over ``MAX_DIGITS`` digits, infinite or NaN."""
    if isinstance(value, float) and not math.isfinite(value):
        raise PydanticCustomError("finite_number", "must be a finite number")
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        too_long = abs(value) >= 10**MAX_DIGITS
    else:
        digits = str(value).strip().replace("_", "").lstrip("+-") if isinstance(value, str) else ""
        too_long = digits.isdigit() and len(digits) > MAX_DIGITS
    if too_long:
        raise PydanticCustomError(
            "number_digits", "must have at most {digits} digits", {"digits": MAX_DIGITS}
        )
    return value


def whole_number(value: Any) -> Any:
    """A whole number as written: YAML's ``true`` is no count (pydantic would read it as 1)."""
    if isinstance(value, bool):
        raise PydanticCustomError("int_type", "must be a whole number")
    return _exact_number(value)


def real_number(value: Any) -> Any:
    """A number as written: YAML's ``true`` is no rate or price (pydantic would read it as 1.0)."""
    if isinstance(value, bool):
        raise PydanticCustomError("float_type", "must be a number")
    return _exact_number(value)


Whole = Annotated[int, BeforeValidator(whole_number)]
Real = Annotated[float, BeforeValidator(real_number)]
# TensorFlow sizes are int32; a larger batch or step count cannot be represented.
INT32_MAX = 2**31 - 1


def _plain_text(value: str) -> str:
    if not value.strip():
        raise PydanticCustomError("empty", "must not be empty")
    if CONTROL.search(value):
        raise PydanticCustomError(
            "control_character", "must not contain control characters (newline, tab, NUL)"
        )
    return value


# A string that names something: not empty, no control characters.
Text = Annotated[str, AfterValidator(_plain_text)]


def shaped(kind: str, pattern: str, fix: str) -> AfterValidator:
    """A check that the whole value matches ``pattern``; ``fix`` follows the quoted value."""

    def check(value: str | None) -> str | None:
        if value is not None and not re.fullmatch(pattern, value):
            raise PydanticCustomError(kind, "{value} " + fix, {"value": quote(value)})
        return value

    return AfterValidator(check)


def parse_duration(value: Any) -> int:
    """Turn ``"24h"``, ``"90m"``, ``"2d"``, ``"3600s"`` or a number of seconds into seconds.

    Example:
    >>> parse_duration("1.5h")
    5400
    """
    seconds = _seconds(value)
    if seconds < 1:
        raise PydanticCustomError("duration_min", "must be at least 1s")
    return int(seconds)


def parse_wait(value: Any) -> int:
    """A wait: a duration like ``parse_duration``'s, or ``0`` for no limit (wait for ever).

    Example:
    >>> parse_wait("10m"), parse_wait(0), parse_wait("0s")
    (600, 0, 0)
    """
    seconds = _seconds(value)
    if seconds != 0 and seconds < 1:
        raise PydanticCustomError("duration_min", "must be 0 (wait for ever) or at least 1s")
    return int(seconds)


def _seconds(value: Any) -> float:
    """The seconds of a duration as written, at most ``MAX_DURATION_S``."""
    if isinstance(value, bool):
        raise PydanticCustomError("duration", "must be a duration like 90m, 24h or 2d")
    _exact_number(value)
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        match = _DURATION.match(str(value))
        if not match:
            raise PydanticCustomError("duration", "must be a duration like 90m, 24h or 2d")
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if not math.isfinite(seconds):
        raise PydanticCustomError("finite_number", "must be a finite number")
    if seconds > MAX_DURATION_S:
        raise PydanticCustomError("duration_max", "must be at most 365d (cloudtrain limit)")
    return seconds


# What users write for a duration, for the JSON Schema: "90m", "24h", "2d", "3600s", or seconds.
DURATION_SCHEMA = {
    "anyOf": [
        {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*[smhd]?\s*$"},
        {"type": "number", "minimum": 1},
    ]
}
Duration = Annotated[int, BeforeValidator(parse_duration), WithJsonSchema(DURATION_SCHEMA)]
# A wait: a duration, or 0 for no limit.
WAIT_SCHEMA = {
    "anyOf": [
        {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*[smhd]?\s*$"},
        {"type": "number", "minimum": 0},
    ]
}
Wait = Annotated[int, BeforeValidator(parse_wait), WithJsonSchema(WAIT_SCHEMA)]


class Section(BaseModel):
    """A section of the job spec: unknown keys are errors, strings travel, and errors name spec paths."""

    # hide_input_in_errors: a ValidationError's text never carries what was given, so an
    # env value that is a secret reaches no terminal, log or traceback.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, hide_input_in_errors=True)

    def __init__(self, /, **data: Any) -> None:
        """Build the section from keywords; bad values raise SpecValidationError, not pydantic's error.

        The messages are ``load_spec``'s, with the field paths of the whole spec
        (``Resources(hosts=0)`` names ``resources.hosts``), so Python and YAML users read
        the same words and catch the same cloudtrain error.
        """
        try:
            super().__init__(**data)
        except ValidationError as exc:
            spec = whole_spec()
            at = section_path(spec, type(self))
            raise SpecValidationError(validation_problems(exc, root=spec, at=at)) from None

    # pydantic calls a model's own __init__ for nested data and model_validate too, unless it is
    # marked as the base one (pydantic/main.py marks BaseModel.__init__ so). Marked, only a direct
    # ``Section(...)`` call comes here; model_validate keeps raising pydantic's ValidationError.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    # Set on the model of the whole spec (JobSpec), whose field paths every error names.
    whole: ClassVar[bool] = False

    # Fields users write free text into, which may hold a pasted credential: every string in
    # them is scanned (``cloudtrain.secrets``), and a credential is refused without being shown.
    scanned_fields: ClassVar[frozenset[str]] = frozenset()

    @field_validator("*")
    @classmethod
    def _portable_text(cls, value: Any, info: ValidationInfo) -> Any:
        """Every string of every field can travel (no NUL, valid Unicode), and holds no credential.

        No environment variable, argument or file name can hold a NUL character, and a lone
        surrogate (``"\\ud800"`` in YAML or Python) is not UTF-8, which Vertex AI's protos
        and SageMaker's JSON require of every string.
        """
        where, problem = _find(value, _text_problem)
        if problem:
            raise PydanticCustomError(
                "text", "{where}holds {problem}; remove it", {"where": where, "problem": problem}
            )
        if info.field_name in cls.scanned_fields:
            where, found = _find(value, value_kind)
            if found:
                raise PydanticCustomError(
                    "secret_env",
                    "{where}holds {found} (the value is not shown). Never put secrets in a job spec: "
                    "keep it in the provider's secret manager, or grant the job's identity "
                    "({identities}) access instead",
                    {"where": where, "found": found, "identities": identities()},
                )
        return value


class ProviderSection(Section):
    """A provider's own section of the spec (``vertex:``), defined in the provider's package.

    The spec has one such field per installed provider that has a section, named after
    the provider (``cloudtrain.installed``), and only that provider reads it.
    The class also states what the rest of cloudtrain must know of the provider before
    loading it, for the spec, the JSON Schema and the catalog.

    Attributes:
        provider: the provider's name, which is the section's name; ``title`` its own
            name, for messages ("Vertex AI").
        summary: the spec field's description; ``examples`` its examples.
        schemes: the storage URI schemes the provider's jobs read and write (``gs://``).
        identity: the field naming who the provider's jobs run as (``service_account``),
            which messages point to; None where there is none.
        reserved_parameters: prefixes of hyperparameter names the provider's own tools use,
            which a tuned parameter may not take.
        catalog_dir: a folder of catalog rows the provider ships (``machines.csv``,
            ``prices.csv``, ``images.csv``), or None.
    """

    provider: ClassVar[str]
    title: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    examples: ClassVar[tuple[dict[str, Any], ...]] = ()
    schemes: ClassVar[tuple[str, ...]] = ()
    identity: ClassVar[str | None] = None
    reserved_parameters: ClassVar[tuple[str, ...]] = ()
    catalog_dir: ClassVar[Path | None] = None

    @classmethod
    def of(cls, spec: BaseModel) -> Self:
        """This provider's section of ``spec`` (a ``JobSpec``)."""
        section = getattr(spec, cls.provider)
        if not isinstance(section, cls):
            raise TypeError(f"{type(spec).__name__}.{cls.provider} is not a {cls.__name__}")
        return section


class StoredSection(ProviderSection):
    """A provider section with a ``storage_root`` (a root used on that provider instead of
    ``storage.root``), which takes the provider's own ``schemes`` only."""

    schemes: ClassVar[tuple[str, ...]] = ()

    @field_validator("storage_root", check_fields=False)
    @classmethod
    def _bucket_uri(cls, value: str | None) -> str | None:
        if value is None:
            return None
        return uris.check_storage_root(value, cls.schemes, own=True)


def whole_spec() -> type[Section]:
    """The model of the whole spec (``JobSpec``): the one section marked ``whole``.

    Sections name their errors by its field paths; it is found here rather than imported,
    since the spec module imports this one.
    """
    found = [model for model in _subclasses(Section) if model.__dict__.get("whole")]
    if len(found) != 1:
        raise RuntimeError(f"Expected one section marked whole (JobSpec), found {found}.")
    return found[0]


def provider_sections(spec: type[BaseModel]) -> dict[str, type[ProviderSection]]:
    """The provider sections among ``spec``'s fields, by field name, in field order."""
    return {
        name: info.annotation
        for name, info in spec.model_fields.items()
        if isinstance(info.annotation, type) and issubclass(info.annotation, ProviderSection)
    }


def identities() -> str:
    """The fields naming who jobs run as, for messages: ``vertex.service_account or sagemaker.role``."""
    fields = [
        f"{name}.{section.identity}"
        for name, section in provider_sections(whole_spec()).items()
        if section.identity
    ]
    if len(fields) < 2:
        return "".join(fields) or "the provider's job identity"
    return f"{', '.join(fields[:-1])} or {fields[-1]}"


def _subclasses(model: type[Section]) -> list[type[Section]]:
    found = list(model.__subclasses__())
    for sub in list(found):
        found += _subclasses(sub)
    return found


def _text_problem(text: str) -> str | None:
    """Why ``text`` cannot travel in a request, environment or argument list; None if it can."""
    if "\0" in text:
        return "a NUL character, a control character no variable, argument or file name can carry"
    if _SURROGATE.search(text):
        return "a lone surrogate (not valid Unicode text)"
    return None


def _find(value: Any, test: Callable[[str], str | None], where: str = "") -> tuple[str, str | None]:
    """The first string in ``value`` (a string, or lists and mappings of them) ``test`` objects to.

    Returns where it is, in words ending in a space ("item 0 ", "'KEY' "), and the objection.
    """
    if isinstance(value, str):
        return where, test(value)
    items: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        items = [(f"the key {shorten(repr(key))} ", key) for key in value]
        items += [(f"{shorten(repr(key))} ", item) for key, item in value.items()]
    elif isinstance(value, list | tuple):
        items = [(f"item {index} ", item) for index, item in enumerate(value)]
    for inner, item in items:
        found = _find(item, test, where or inner)
        if found[1]:
            return found
    return where, None
