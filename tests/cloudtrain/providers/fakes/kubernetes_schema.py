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
import re
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


# Go's regular expressions and limits, verbatim.
DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
LABEL_KEY_FMT = "(" + "[A-Za-z0-9]" + "[-A-Za-z0-9_.]" + "*)?" + "[A-Za-z0-9]"
LABEL_VALUE_FMT = "(" + LABEL_KEY_FMT + ")?"
SPLIT_RE_STRING = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
TOTAL_ANNOTATION_SIZE_LIMIT_B = 256 * (1 << 10)


def _go_match(fmt: str, value: str) -> bool:
    """Go's ``regexp.MustCompile("^" + fmt + "$").MatchString``: ``$`` is the text's end, as ``fullmatch``."""
    return re.fullmatch(fmt, value) is not None


def is_dns1123_label(value: str) -> bool:
    return len(value) <= 63 and _go_match(DNS1123_LABEL_FMT, value)


def is_dns1123_subdomain(value: str) -> bool:
    return len(value) <= 253 and _go_match(DNS1123_SUBDOMAIN_FMT, value)


def is_qualified_name(value: str) -> bool:
    parts = value.split("/")
    if len(parts) not in (1, 2) or (len(parts) == 2 and not is_dns1123_subdomain(parts[0])):
        return False
    return 0 < len(parts[-1]) <= 63 and _go_match(LABEL_KEY_FMT, parts[-1])


def is_label_value(value: str) -> bool:
    return len(value) <= 63 and _go_match(LABEL_VALUE_FMT, value)


def is_extended_resource(name: str) -> bool:
    native = "/" not in name or "kubernetes.io/" in name
    return not native and not name.startswith("requests.") and is_qualified_name("requests." + name)


def api_server_problems(jobset: dict[str, Any]) -> list[str]:
    """What the API server refuses in ``jobset`` by the API machinery's rules; empty when it takes it."""
    found = _meta_problems("metadata", jobset.get("metadata", {}))
    if not is_dns1123_label(str(jobset.get("metadata", {}).get("namespace", "default"))):
        found.append("metadata.namespace: not a DNS-1123 label")
    for index, replicated in enumerate(jobset.get("spec", {}).get("replicatedJobs", [])):
        template = replicated["template"]["spec"]["template"]
        where = f"spec.replicatedJobs.{index}.template.spec.template"
        found += _meta_problems(f"{where}.metadata", template.get("metadata", {}))
        found += _pod_problems(f"{where}.spec", template["spec"])
    return found


def _meta_problems(where: str, metadata: dict[str, Any]) -> list[str]:
    found = _labels_problems(f"{where}.labels", metadata.get("labels", {}))
    annotations = metadata.get("annotations", {})
    found += [
        f"{where}.annotations: {k!r} is not a qualified name" for k in annotations if not is_qualified_name(k)
    ]
    if sum(len(k) + len(v) for k, v in annotations.items()) > TOTAL_ANNOTATION_SIZE_LIMIT_B:
        found.append(f"{where}.annotations: larger than 256 KiB")
    return found


def _labels_problems(where: str, labels: dict[str, str]) -> list[str]:
    """``ValidateLabels``: qualified keys and label values (metadata.labels, a pod's nodeSelector)."""
    found = [f"{where}: {key!r} is not a qualified name" for key in labels if not is_qualified_name(key)]
    return found + [f"{where}.{key}: not a label value" for key, v in labels.items() if not is_label_value(v)]


def _pod_problems(where: str, pod: dict[str, Any]) -> list[str]:
    found = _labels_problems(f"{where}.nodeSelector", pod.get("nodeSelector", {}))
    found += [
        f"{where}.tolerations.{i}: {p}"
        for i, t in enumerate(pod.get("tolerations", []))
        if (p := _toleration(t))
    ]
    found += [
        f"{where}.imagePullSecrets.{i}: not a Secret name"
        for i, secret in enumerate(pod.get("imagePullSecrets", []))
        if not is_dns1123_subdomain(secret["name"])
    ]
    if "serviceAccountName" in pod and not is_dns1123_subdomain(pod["serviceAccountName"]):
        found.append(f"{where}.serviceAccountName: not a ServiceAccount name")
    for container in pod.get("containers", []) + pod.get("initContainers", []):
        for kind, resources in container.get("resources", {}).items():
            for name, amount in resources.items():
                if not is_extended_resource(name) and name not in ("cpu", "memory", "ephemeral-storage"):
                    found.append(f"{where}: resources.{kind}: {name!r} is not a resource name")
                if re.fullmatch(SPLIT_RE_STRING.strip("^$"), str(amount)) is None:
                    found.append(f"{where}: resources.{kind}.{name}: {amount!r} is not a quantity")
    return found


def _toleration(toleration: dict[str, Any]) -> str | None:
    key, operator = toleration.get("key", ""), toleration.get("operator", "")
    value, effect = toleration.get("value", ""), toleration.get("effect", "")
    if key and not is_qualified_name(key):
        return "key: not a qualified name"
    if not key and operator != "Exists":
        return "operator must be Exists when `key` is empty"
    if operator == "Exists" and value:
        return "value must be empty when `operator` is 'Exists'"
    if operator in ("", "Equal") and not is_label_value(value):
        return "value: not a label value"
    if operator not in ("", "Equal", "Exists"):
        return "operator: not supported"
    if effect and effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
        return "effect: not supported"
    return None
