"""YAML from a file cloudtrain does not own, built only within limits: nesting, values, aliases.

``yaml.safe_load`` builds whatever a text describes. A few hundred bytes of aliases (a
"billion laughs") describe hundreds of millions of values, which the code that walks
them then expands; a list nested 5,000 deep recurses past Python's limit. ``load``
counts first, on the parser's events (libyaml's, when PyYAML has it: ten times faster,
and it caps nesting at 1,000 itself), then composes the nodes, counts the values as if
every alias were expanded, and builds the document only when it is within ``Limits``.
Each refusal, a YAML syntax error included, is one ``YamlRefused`` line with the line
number where the parser gives one.

Example:
>>> load("a: &x [1, 2]\\nb: *x")
{'a': [1, 2], 'b': [1, 2]}
>>> load("a: &x [1, 2]\\nb: [*x, *x, *x]", Limits(depth=8, values=12))
Traceback (most recent call last):
    ...
cloudtrain.boundedyaml.YamlRefused: holds more than 12 values once its aliases are expanded (an alias bomb?).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

# libyaml's loader when PyYAML was built with it; the pure-Python one reads the same YAML.
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Limits:
    """How deep a document may nest, and how many values it may hold with its aliases expanded."""

    depth: int = 32
    values: int = 200_000


class YamlRefused(ValueError):
    """The text is not YAML, or not YAML within the limits; the message says which, in one line."""


def load(text: str, limits: Limits = Limits()) -> Any:
    """The single YAML document in ``text``, built as ``yaml.safe_load`` builds it, within ``limits``.

    Raises:
        YamlRefused: ``text`` is not YAML, holds several documents, nests deeper than
            ``limits.depth``, holds more than ``limits.values`` values with its aliases
            expanded, an alias that refers to itself, or a tagged value YAML cannot build.
    """
    loader = _LOADER(text)
    try:
        _within(yaml.parse(text, Loader=_LOADER), limits)
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_within(node, limits.values)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        if "nesting depth" in str(getattr(exc, "problem", "")):  # libyaml's own cap, met first
            raise YamlRefused(f"nested deeper than {limits.depth} levels.") from None
        raise YamlRefused(_described(exc, text)) from None
    except (ValueError, TypeError, OverflowError) as exc:  # "!!int abc", "!!binary é"
        if isinstance(exc, YamlRefused):
            raise
        raise YamlRefused(f"holds a value YAML cannot build ({_cut(str(exc))}).") from None
    finally:
        loader.dispose()


def _within(events: Any, limits: Limits) -> None:
    """Count nesting and values on the parser's events, before any node is built."""
    depth = values = 0
    for event in events:
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > limits.depth:
                line = event.start_mark.line + 1 if event.start_mark else 0
                raise YamlRefused(f"nested deeper than {limits.depth} levels (line {line}).")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        if isinstance(event, yaml.NodeEvent):
            values += 1
            if values > limits.values:
                raise YamlRefused(f"holds more than {limits.values:,} values.")


def _expanded_within(root: yaml.Node, limit: int) -> None:
    """Count the values under ``root`` as if every alias were written out, without recursion.

    A node that aliases share is counted once and its size reused, so the count costs
    one visit per node however large the expanded document would be.
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            open_nodes.discard(key)
            if sizes[key] > limit:
                raise YamlRefused(
                    f"holds more than {limit:,} values once its aliases are expanded (an alias bomb?)."
                )
            continue
        if key in sizes:
            continue
        if key in open_nodes:  # met again below itself: an alias inside its own anchor
            raise YamlRefused("holds an alias inside the value it names (a value that contains itself).")
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _described(exc: yaml.YAMLError, text: str) -> str:
    """A parser's error as one line: where, what, and the fix when the line is indented with a tab."""
    mark = getattr(exc, "problem_mark", None)
    problem = _cut(getattr(exc, "problem", None) or getattr(exc, "context", None) or "invalid YAML")
    if mark is None:
        return f"not valid YAML ({problem})."
    line = text.split("\n", mark.line + 1)[mark.line] if mark.line < text.count("\n") + 1 else ""
    tab = "\t" in line[: mark.column + 1]
    return (
        f"not valid YAML (line {mark.line + 1}: {problem}).{' Indent with spaces, not tabs.' if tab else ''}"
    )


def _cut(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else f"{text[:limit]}…"
