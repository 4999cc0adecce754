"""The JobSet and Kueue CRDs' OpenAPI schemas, as strict as the API server with ``fieldValidation=Strict``.

``jobset-crd.yaml`` beside this file is the CRD of kubernetes-sigs/jobset v0.12.0,
``kueue-workload-crd.yaml`` and ``kueue-localqueue-crd.yaml`` those of kubernetes-sigs/kueue
v0.19.2 (their headers say where from). The API server validates a custom resource against the
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

HERE = Path(__file__).parent
# The vendored CRDs by kind, and the version of each the fakes serve.
CRDS = {
    "JobSet": (HERE / "jobset-crd.yaml", "v1alpha2"),
    "Workload": (HERE / "kueue-workload-crd.yaml", "v1beta2"),
    "LocalQueue": (HERE / "kueue-localqueue-crd.yaml", "v1beta2"),
}


@functools.cache
def strict_schema(kind: str = "JobSet") -> dict[str, Any]:
    """The served version's schema of ``kind``'s vendored CRD, with unknown fields refused."""
    path, served = CRDS[kind]
    crd = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
    (version,) = (v for v in crd["spec"]["versions"] if v["name"] == served)
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


def problems(resource: dict[str, Any], kind: str = "JobSet") -> list[str]:
    """Every way ``resource`` breaks ``kind``'s CRD schema, as ``path: message``; empty when valid."""
    validator = Draft202012Validator(strict_schema(kind))
    return sorted(
        f"{'.'.join(map(str, error.absolute_path)) or '(root)'}: {error.message}"
        for error in validator.iter_errors(resource)
    )
