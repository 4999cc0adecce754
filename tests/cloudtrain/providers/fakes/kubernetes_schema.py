"""The JobSet CRD's OpenAPI schema, as strict as the API server with ``fieldValidation=Strict``.

``jobset-crd.yaml`` beside this file is the CRD of kubernetes-sigs/jobset v0.12.0 (its
header says where from). The API server validates a custom resource against the
version's ``openAPIV3Schema`` and prunes fields the schema does not declare; with
``fieldValidation=Strict`` it refuses them instead ("Strict: This will fail the request
with a BadRequest error if any unknown fields would be dropped", the ``kubernetes``
client's ``create_namespaced_custom_object``). ``strict_schema`` makes that refusal part of
the schema (``additionalProperties: false`` wherever an object lists its properties and
does not keep unknown fields), so ``jsonschema`` finds a misspelt field too.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator

CRD = Path(__file__).with_name("jobset-crd.yaml")
VERSION = "v1alpha2"


@functools.cache
def strict_schema() -> dict[str, Any]:
    """The ``v1alpha2`` schema with unknown fields refused."""
    crd = yaml.load(CRD.read_text(), Loader=yaml.CSafeLoader)
    (version,) = (v for v in crd["spec"]["versions"] if v["name"] == VERSION)
    return _strict(version["schema"]["openAPIV3Schema"])


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    strict = {key: _strict(value) for key, value in node.items()}
    if (
        "properties" in node
        and "additionalProperties" not in node
        and not node.get("x-kubernetes-preserve-unknown-fields")
    ):
        strict["additionalProperties"] = False
    return strict


def problems(jobset: dict[str, Any]) -> list[str]:
    """Every way ``jobset`` breaks the CRD schema, as ``path: message``; empty when valid."""
    validator = Draft202012Validator(strict_schema())
    return sorted(
        f"{'.'.join(map(str, error.absolute_path)) or '(root)'}: {error.message}"
        for error in validator.iter_errors(jobset)
    )
