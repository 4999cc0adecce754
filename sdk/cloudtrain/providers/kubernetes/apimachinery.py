"""The Kubernetes API server's own rules for names, label keys and values, tolerations and quantities.

Written out from the API machinery, so ``validate`` refuses what the API server would
refuse after the code was uploaded. Each check returns ``None`` for a valid value, else
the problem in words (the first one the server would report). Sources, Kubernetes
v1.34 (kubernetes/kubernetes, ``staging/src/k8s.io/apimachinery``):

- ``pkg/util/validation/validation.go``: ``IsDNS1123Label`` (63 characters,
  ``[a-z0-9]([-a-z0-9]*[a-z0-9])?``), ``IsDNS1123Subdomain`` (253 characters, labels
  joined by '.'), ``IsQualifiedName`` and ``IsValidLabelValue``, which it takes from
  ``pkg/api/validate/content/kube.go``: ``IsLabelKey`` (an optional DNS-subdomain prefix
  and '/', then a name of at most 63 characters,
  ``([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]``) and ``IsLabelValue`` (the same, empty
  allowed, at most 63 characters).
- ``pkg/api/resource/quantity.go``: ``ParseQuantity`` (a number and a suffix of
  ``splitREString``, ``^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$``).
- kubernetes ``pkg/apis/core/validation/validation.go``: ``ValidateTolerations`` (a key
  is a qualified name; an empty key needs operator Exists; Exists takes no value; Equal's
  value is a label value; the effect is NoSchedule, PreferNoSchedule or NoExecute),
  ``ValidateNamespaceName`` (a DNS-1123 label), ``ValidateServiceAccountName`` and
  ``ValidateSecretName`` (DNS-1123 subdomains), the pod's ``nodeSelector`` through
  ``ValidateLabels`` (qualified keys, label values), and an extended resource's name
  through ``validateResourceName`` and ``helper.IsExtendedResourceName`` (a qualified
  name with a domain outside ``kubernetes.io``, and ``requests.<name>`` a qualified name too).

Example:
>>> label_key("a..b/x")
"its prefix 'a..b' is not a DNS subdomain (lowercase letters, digits and '-', in parts joined by '.')"
>>> toleration({"operator": "Exists", "value": "yes"})
"value must be empty when operator is 'Exists'"
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
LABEL_NAME_MAX = 63
LABEL_VALUE_MAX = 63
_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL = re.compile(_LABEL)
DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")
LABEL_NAME = re.compile("([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
LABEL_VALUE = re.compile(f"({LABEL_NAME.pattern})?")
QUANTITY = re.compile(r"[+-]?[0-9.]+[eEinumkKMGTP]*[-+]?[0-9]*")
TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# Extended resources may not live under the kubernetes.io domain (helper.IsNativeResource).
NATIVE_DOMAIN = "kubernetes.io"
REQUESTS_PREFIX = "requests."

_SUBDOMAIN_WORDS = "lowercase letters, digits and '-', in parts joined by '.'"
_LABEL_WORDS = "lowercase letters, digits and '-', starting and ending with a letter or digit"
_NAME_WORDS = "letters, digits, '-', '_' and '.', starting and ending with a letter or digit"


def dns1123_label(value: str) -> str | None:
    """``IsDNS1123Label``: a namespace's name."""
    return _shaped(value, DNS1123_LABEL_MAX, DNS1123_LABEL, f"not a DNS label ({_LABEL_WORDS})")


def dns1123_subdomain(value: str) -> str | None:
    """``IsDNS1123Subdomain``: a Secret's or a ServiceAccount's name, a label key's prefix."""
    return _shaped(
        value, DNS1123_SUBDOMAIN_MAX, DNS1123_SUBDOMAIN, f"not a DNS subdomain ({_SUBDOMAIN_WORDS})"
    )


def label_key(value: str) -> str | None:
    """``IsQualifiedName`` (``IsLabelKey``): a label's or a taint's key, ``[prefix/]name``."""
    parts = value.split("/")
    if len(parts) > 2:
        return "more than one '/': a label key is [prefix/]name, e.g. example.com/team"
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            return "its prefix before '/' is empty"
        if (problem := dns1123_subdomain(prefix)) is not None:
            return f"its prefix {_shown(prefix)} is {problem}"
    name = parts[-1]
    if not name:
        return "its name is empty"
    if len(name) > LABEL_NAME_MAX:
        return f"its name is longer than {LABEL_NAME_MAX} characters"
    return None if LABEL_NAME.fullmatch(name) else f"its name {_shown(name)} is not {_NAME_WORDS}"


def label_value(value: str) -> str | None:
    """``IsValidLabelValue`` (``IsLabelValue``): empty, or a name of at most 63 characters."""
    return _shaped(value, LABEL_VALUE_MAX, LABEL_VALUE, f"not {_NAME_WORDS} (or empty)")


def extended_resource(value: str) -> str | None:
    """An extended resource's name (``nvidia.com/gpu``), as a container's requests and limits take it."""
    if "/" not in value:
        return "it has no domain: an extended resource is named domain/name"
    if (problem := label_key(value)) is not None:
        return problem
    if f"{NATIVE_DOMAIN}/" in value:
        return f"it is in the {NATIVE_DOMAIN} domain, which Kubernetes keeps for its own resources"
    if value.startswith(REQUESTS_PREFIX):
        return f"it starts with {REQUESTS_PREFIX!r}, which a ResourceQuota puts before a resource's name"
    if label_key(REQUESTS_PREFIX + value) is not None:  # ResourceQuota names it requests.<name>
        return f"it is too long to be named {REQUESTS_PREFIX}<name> in a ResourceQuota"
    return None


def quantity(value: str) -> str | None:
    """``ParseQuantity``'s shape: a resource request or limit such as ``1``, ``500m``, ``16Gi``."""
    return None if QUANTITY.fullmatch(value) else "not a quantity (a number and a suffix, e.g. 2, 500m, 16Gi)"


def toleration(value: Mapping[str, Any]) -> str | None:
    """``ValidateTolerations`` for one toleration, as the pod spec carries it."""
    key, operator = value.get("key") or "", value.get("operator") or "Equal"
    effect, given = value.get("effect") or "", value.get("value") or ""
    if key and (problem := label_key(key)) is not None:
        return f"key {_shown(key)}: {problem}"
    if not key and operator != "Exists":
        return "operator must be 'Exists' when key is empty (which means: every taint)"
    if operator not in TOLERATION_OPERATORS:
        return f"operator must be one of {', '.join(TOLERATION_OPERATORS)}"
    if operator == "Exists" and given:
        return "value must be empty when operator is 'Exists'"
    if operator == "Equal" and (problem := label_value(given)) is not None:
        return f"value {_shown(given)}: {problem}"
    if effect and effect not in TAINT_EFFECTS:
        return f"effect must be one of {', '.join(TAINT_EFFECTS)}"
    return None


def _shaped(value: str, longest: int, pattern: re.Pattern[str], problem: str) -> str | None:
    """None when ``value`` has at most ``longest`` characters and matches ``pattern``; else what is wrong."""
    if len(value) > longest:
        return f"longer than {longest} characters"
    return None if pattern.fullmatch(value) else problem


def _shown(value: str) -> str:
    return repr(value) if len(value) <= 80 else repr(value[:80]) + "…"
