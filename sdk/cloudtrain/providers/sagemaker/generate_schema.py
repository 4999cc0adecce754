"""Generate ``catalog/sagemaker_request.csv`` from the installed botocore's SageMaker model.

Run ``python -m cloudtrain.providers.sagemaker.generate_schema`` after upgrading botocore;
``tests/cloudtrain/providers/sagemaker/test_schema.py`` fails while the file and the model
differ. Needs botocore (``pip install 'cloudtrain[sagemaker]'``); nothing else imports this.

Patterns are translated for Python's ``re`` with the semantics Smithy models state for
their ``pattern`` trait (ECMA-262: ``.`` stops at a line end, ``\\d`` and ``\\w`` are ASCII),
and the Unicode classes ``\\p{L}``, ``\\p{N}`` and ``\\p{Z}`` spelt out
(https://smithy.io/2.0/spec/constraint-traits.html#pattern-trait).
"""

from __future__ import annotations

import csv
import re
import unicodedata
from pathlib import Path
from typing import Any

from cloudtrain import catalog
from cloudtrain.providers.sagemaker.schema import CATALOG_FILE, OPERATION

COLUMNS = ("path", "type", "min", "max", "pattern", "python_pattern", "enum", "source")
# The top-level members ``render`` writes; their constraints are generated, nested ones included.
RENDERED = (
    "TrainingJobName",
    "AlgorithmSpecification",
    "RoleArn",
    "ResourceConfig",
    "EnableManagedSpotTraining",
    "StoppingCondition",
    "CheckpointConfig",
    "OutputDataConfig",
    "TensorBoardOutputConfig",
    "InputDataConfig",
    "HyperParameters",
    "Environment",
    "RetryStrategy",
    "VpcConfig",
    "MlflowConfig",
    "Tags",
)

# Line terminators in ECMA-262 (Smithy's pattern dialect): '.' matches anything else.
_ECMA_DOT = r"[^\n\r\u2028\u2029]"
_ASCII = {"d": "0-9", "w": "A-Za-z0-9_"}


def python_pattern(pattern: str) -> str:
    r"""``pattern`` (ECMA-262 with Java's ``\p{...}`` classes) for Python's ``re``.

    Example:
    >>> python_pattern(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")
    '[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}'
    >>> python_pattern(r".*\d")
    '[^\\n\\r\\u2028\\u2029]*[0-9]'
    """
    out, in_class, index = [], False, 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            token, index = _escape(pattern, index)
            out.append(token if in_class or not _is_set(token) else f"[{token}]")
            continue
        if char == "[" and not in_class:
            in_class = True
        elif char == "]" and in_class:
            in_class = False
        elif char == "." and not in_class:
            char = _ECMA_DOT
        out.append(char)
        index += 1
    return _unicode_word("".join(out))


def _escape(pattern: str, index: int) -> tuple[str, int]:
    """The Python text for the escape at ``pattern[index]`` and the index after it."""
    letter = pattern[index + 1]
    if letter == "p":
        end = pattern.index("}", index)
        return _PROPERTY[pattern[index + 3 : end]], end + 1
    if letter in _ASCII:
        return _ASCII[letter], index + 2
    return pattern[index : index + 2], index + 2


def _is_set(token: str) -> bool:
    """Whether ``token`` is the inside of a character class (so needs brackets outside one)."""
    return token in _ASCII.values() or token in _PROPERTY.values()


def _z_characters() -> str:
    """Unicode's separators (Zs, Zl, Zp) as escapes; every one of them is below U+3001."""
    return "".join(
        f"\\u{code:04x}" for code in range(0x3001) if unicodedata.category(chr(code)).startswith("Z")
    )


# Python's \w is exactly letters, numbers and '_' (str.isalnum plus '_'); the model names
# letters only beside numbers and '_', so \p{L}\p{N}_ together become \w (see _unicode_word).
_PROPERTY = {"L": "\\p{L}", "N": "\\p{N}", "Z": _z_characters(), "Alnum": "A-Za-z0-9"}


def _unicode_word(pattern: str) -> str:
    r"""Replace ``\p{L}`` and ``\p{N}`` (which always come with ``_`` in the model) by ``\w``.

    Raises:
        ValueError: a class names letters or numbers without the other and '_'.
    """
    for body in re.findall(r"\[[^\]]*\]", pattern):
        if "\\p{" not in body:
            continue
        if not ("\\p{L}" in body and "\\p{N}" in body and "_" in body):
            raise ValueError(f"cannot translate {body!r}: letters and numbers apart from '_'")
        pattern = pattern.replace(body, body.replace("\\p{L}", "\\w").replace("\\p{N}", ""))
    return pattern


def generate() -> list[dict[str, str]]:
    """The catalog rows for ``RENDERED``, read from the installed botocore's service model."""
    import botocore
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    source = f"botocore {botocore.__version__} sagemaker {model.api_version} {OPERATION}"
    shape = model.operation_model(OPERATION).input_shape
    rows: list[dict[str, str]] = []
    for name in RENDERED:
        rows += _shape_rows(shape.members[name], name, source, frozenset())
    return rows


def _shape_rows(shape: Any, path: str, source: str, seen: frozenset[str]) -> list[dict[str, str]]:
    kind = shape.type_name
    rows = []
    if kind in ("string", "integer", "long", "boolean", "list", "map"):
        metadata = shape.metadata
        pattern = metadata.get("pattern", "")
        rows.append(
            {
                "path": path,
                "type": kind,
                "min": str(metadata.get("min", "")),
                "max": str(metadata.get("max", "")),
                "pattern": pattern,
                "python_pattern": python_pattern(pattern) if pattern else "",
                "enum": "|".join(shape.enum) if kind == "string" and shape.enum else "",
                "source": source,
            }
        )
    if kind == "structure" and shape.name not in seen:
        for name, member in shape.members.items():
            rows += _shape_rows(member, f"{path}.{name}", source, seen | {shape.name})
    elif kind == "list":
        rows += _shape_rows(shape.member, f"{path}[]", source, seen)
    elif kind == "map":
        rows += _shape_rows(shape.key, f"{path}{{key}}", source, seen)
        rows += _shape_rows(shape.value, f"{path}{{}}", source, seen)
    return rows


def main() -> None:
    """Write ``catalog/sagemaker_request.csv`` from the installed botocore."""
    target = Path(catalog.__file__).parent / CATALOG_FILE
    with target.open("w", newline="") as file:
        writer = csv.DictWriter(file, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(generate())


if __name__ == "__main__":
    main()
