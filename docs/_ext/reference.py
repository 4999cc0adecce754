"""The generated references: the CLI from its click group, the Python API from its
docstrings, the job spec from its JSON Schema.

``.. cloudtrain-reference:: KIND`` writes the reStructuredText of one reference and parses
it in place. What each KIND reads is ``cloudtrain_reference[KIND]`` in ``conf.py``, so a
module that moves is a one-line change there.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles


def cli(target: str) -> Iterator[str]:
    """Every command and option, from the click group (sphinx-click)."""
    yield f".. click:: {target}"
    yield "   :prog: cloudtrain"
    yield "   :nested: full"


def api(target: str) -> Iterator[str]:
    """The package's public names: its ``__all__``, each documented where it is defined.

    autodoc finds a module's members in ``dir(module)``; a package that loads its names on
    first use (PEP 562) lists them there only once loaded, so each is loaded first.
    """
    module = importlib.import_module(target)
    for name in module.__all__:
        getattr(module, name)
    yield f".. automodule:: {target}"
    yield "   :members:"
    yield "   :imported-members:"


def api_module(target: str) -> Iterator[str]:
    """A module's public functions and classes, less those the package already exports."""
    exported = importlib.import_module(target.partition(".")[0]).__all__
    yield f".. automodule:: {target}"
    yield "   :members:"
    yield f"   :exclude-members: {', '.join(exported)}"


def provider_api(target: str) -> Iterator[str]:
    """The interface a provider implements and the registry it joins: the package's ``__all__``.

    The job handle and its status are the API reference's (``cloudtrain.Job``,
    ``cloudtrain.JobStatus``); the same objects described twice would be one warning.
    """
    yield from api(target)
    yield "   :exclude-members: Job, JobStatus"


def spec(target: str) -> Iterator[str]:
    """Every field of the job spec, section by section, from the model's JSON Schema."""
    module, _, name = target.partition(":")
    schema = getattr(importlib.import_module(module), name).model_json_schema()
    yield from SchemaPage(schema).lines()


RENDERERS: dict[str, Callable[[str], Iterator[str]]] = {
    "cli": cli,
    "api": api,
    "api-module": api_module,
    "provider-api": provider_api,
    "spec": spec,
}


class SchemaPage:
    """The reStructuredText of a JSON Schema: the top-level fields, then one section per object."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self.defs: dict[str, Any] = schema.get("$defs", {})

    def lines(self) -> Iterator[str]:
        yield from paragraph(self.schema.get("description", ""))
        yield from self.table("", self.schema)
        for name, field in self.schema["properties"].items():
            yield from self.section(name, field, level="-")

    def section(self, path: str, field: dict[str, Any], *, level: str) -> Iterator[str]:
        """The section of an object-valued field, and of the objects inside it, one level down."""
        target, shape = self.object_of(field)
        if target is None:
            return
        title = f"``{path}{shape}``"
        yield f".. _spec-{anchor(path)}:"
        yield ""
        yield title
        yield level * len(title)
        yield ""
        yield from paragraph(field.get("description", ""))
        if target.get("description") and target.get("description") != field.get("description"):
            yield from paragraph(target["description"])
        yield from self.table(f"{path}{shape}.", target)
        for name, inner in target.get("properties", {}).items():
            yield from self.section(f"{path}{shape}.{name}", inner, level="~")

    def object_of(self, field: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
        """The object a field holds (itself, a list's item, a map's value), and how to write its path."""
        for option in [field, *field.get("anyOf", [])]:
            if "$ref" in option:
                return self.resolve(option), ""
            if option.get("type") == "array" and "$ref" in option.get("items", {}):
                return self.resolve(option["items"]), "[]"
            if (
                isinstance(option.get("additionalProperties"), dict)
                and "$ref" in option["additionalProperties"]
            ):
                return self.resolve(option["additionalProperties"]), ".<name>"
        return None, ""

    def resolve(self, ref: dict[str, Any]) -> dict[str, Any]:
        """The object a ``$ref`` names; of a model written several ways (``placement``), its object form."""
        found = self.defs[ref["$ref"].rsplit("/", 1)[1]]
        forms = [option for option in found.get("anyOf", []) if "properties" in option]
        return forms[0] if forms and "properties" not in found else found

    def table(self, prefix: str, obj: dict[str, Any]) -> Iterator[str]:
        required = set(obj.get("required", []))
        yield ".. list-table::"
        yield "   :header-rows: 1"
        yield "   :widths: 20 15 15 50"
        yield ""
        yield from row("field", "type", "default", "description")
        for name, field in obj.get("properties", {}).items():
            default = "required" if name in required else literal(field.get("default", None))
            yield from row(f"``{prefix}{name}``", self.type_of(field), default, self.describe(field))
        yield ""

    def type_of(self, field: dict[str, Any]) -> str:
        if "$ref" in field:
            return "object"
        if "anyOf" in field:
            return " or ".join(self.type_of(option) for option in field["anyOf"])
        if "enum" in field:
            return "string" if all(isinstance(value, str) for value in field["enum"]) else "value"
        if "const" in field:
            return literal(field["const"])
        kind = field.get("type", "any")
        if kind == "array":
            return f"list of {self.type_of(field.get('items', {}))}"
        if kind == "object" and isinstance(field.get("additionalProperties"), dict):
            return f"map of {self.type_of(field['additionalProperties'])}"
        return str(kind)

    def describe(self, field: dict[str, Any]) -> str:
        parts = [text(field.get("description", ""))]
        values = self.values(field)
        if values:
            parts.append("One of: " + ", ".join(literal(value) for value in values) + ".")
        limits = constraints(field)
        if limits:
            parts.append(limits)
        examples = field.get("examples", [])
        if examples and "$ref" not in field:
            parts.append("Example: " + ", ".join(literal(example) for example in examples) + ".")
        return " ".join(part for part in parts if part)

    def values(self, field: dict[str, Any]) -> list[Any]:
        found: list[Any] = []
        for option in [field, *field.get("anyOf", [])]:
            found += option.get("enum", [])
            if "const" in option and option["const"] is not None:
                found.append(option["const"])
        return found


BOUNDS = {
    "minimum": ">=",
    "exclusiveMinimum": ">",
    "maximum": "<=",
    "exclusiveMaximum": "<",
    "minLength": "length >=",
    "maxLength": "length <=",
    "minItems": "items >=",
    "maxItems": "items <=",
}


def constraints(field: dict[str, Any]) -> str:
    """Bounds, lengths and patterns, in words."""
    options = [field, *field.get("anyOf", [])]
    bounds = [f"{word} {option[key]}" for option in options for key, word in BOUNDS.items() if key in option]
    patterns = [f"Pattern: {literal(option['pattern'])}." for option in options if "pattern" in option]
    return " ".join(([f"Must be {', '.join(bounds)}."] if bounds else []) + patterns)


def row(*cells: str) -> Iterator[str]:
    first, *rest = (cell or " " for cell in cells)
    yield f"   * - {first}"
    for cell in rest:
        yield f"     - {cell}"


def literal(value: Any) -> str:
    """A value as inline code, written as JSON (what YAML reads too)."""
    if value is None:
        return " "
    shown = value if isinstance(value, str) else json.dumps(value)
    return f"``{shown}``" if shown.strip() else " "


INLINE_CODE = re.compile(r"(``[^`]+``)")
SPECIAL = re.compile(r"([\\*`|_\[\]<>])")


def text(description: str) -> str:
    """A description as reStructuredText: its ``code`` kept, every other markup character escaped."""
    parts = INLINE_CODE.split(" ".join(description.split()))
    return "".join(part if INLINE_CODE.fullmatch(part) else SPECIAL.sub(r"\\\1", part) for part in parts)


def paragraph(description: str) -> Iterator[str]:
    if description:
        yield text(description)
        yield ""


def anchor(path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-")


EXAMPLE = re.compile(r"^\s*Examples?:$")
ATTRIBUTES = ("attribute", "property", "data")
_written: dict[str, list[str]] = {}


def indent_examples(app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """Indent the lines under ``Example:`` as napoleon's Google style reads a section.

    This code writes an example at the header's own indent (``Example:`` then ``>>>``);
    napoleon takes that for the section's end and runs the example into the text.
    """
    in_example = False
    for number, line in enumerate(lines):
        if EXAMPLE.match(line):
            in_example = True
        elif not line.strip():
            in_example = False
        elif in_example:
            lines[number] = "    " + line


def keep_attribute_sentences(
    app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    """Before napoleon: remember an attribute's or a property's docstring as written."""
    if what in ATTRIBUTES:
        _written[name] = list(lines)


def restore_attribute_sentences(
    app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    """After napoleon: put it back. Napoleon reads the text before an attribute docstring's
    first colon as its type; here that colon is a sentence's (``None: the request alone``)."""
    if what in ATTRIBUTES and name in _written:
        lines[:] = _written.pop(name)


def skip_pydantic_config(
    app: Sphinx, what: str, name: str, obj: Any, skip: bool, options: Any
) -> bool | None:
    """A model's ``model_config`` is pydantic's setting, not part of the API."""
    return True if name == "model_config" else None


class ReferenceDirective(SphinxDirective):
    """``.. cloudtrain-reference:: KIND``: one generated reference, parsed where it stands."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        kind = self.arguments[0]
        targets = self.config.cloudtrain_reference
        if kind not in RENDERERS or kind not in targets:
            raise self.error(f"Unknown reference {kind!r}. Use one of: {', '.join(sorted(RENDERERS))}.")
        content = StringList(list(RENDERERS[kind](targets[kind])), source=f"<cloudtrain-reference {kind}>")
        holder = nodes.container()
        nested_parse_with_titles(self.state, content, holder)
        return holder.children


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("cloudtrain_reference", {}, "env")
    app.add_directive("cloudtrain-reference", ReferenceDirective)
    # napoleon handles autodoc-process-docstring at the default priority, 500.
    app.connect("autodoc-process-docstring", indent_examples, priority=400)
    app.connect("autodoc-process-docstring", keep_attribute_sentences, priority=400)
    app.connect("autodoc-process-docstring", restore_attribute_sentences, priority=600)
    app.connect("autodoc-skip-member", skip_pydantic_config)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
