"""The API server's rules for names, labels, tolerations and resources, and the spec fields they guard.

Regressions of issue 40: a toleration with ``operator: Exists`` and a value, or ``Equal``
without a key; label keys like ``a..b/x`` in ``node_selector`` or a toleration; image pull
secret names like ``a..b``; a 93-character ``node_type`` copied into a label value: each
passed ``validate`` and ``render`` and was refused by the API server.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cloudtrain.errors import SpecError
from cloudtrain.providers.kubernetes import apimachinery
from cloudtrain.providers.kubernetes.settings import KubernetesSettings
from tests.cloudtrain.providers.fakes import kubernetes_schema

LABEL_KEYS = [
    ("team", True),  # a name alone
    ("example.com/team", True),  # a DNS-subdomain prefix
    ("Team_1.x", True),  # capitals, '_' and '.' inside the name
    ("a..b/x", False),  # the key: an empty part in the prefix
    ("Example.com/x", False),  # a prefix is lowercase
    ("a/b/c", False),  # two '/'
    ("/x", False),  # an empty prefix
    ("x/", False),  # an empty name
    ("-x", False),  # a name starts with a letter or digit
    ("x" * 63, True),  # the longest name
    ("x" * 64, False),  # one over
    ("a" * 253 + "/x", True),  # the longest prefix
    ("a" * 254 + "/x", False),  # one over
    ("x\n", False),  # a trailing newline: Go's $ is the end of the text
]
LABEL_VALUES = [
    ("", True),  # empty is a value
    ("g5.xlarge", True),  # a node type
    ("a" * 63, True),  # the longest
    ("a" * 64, False),  # one over
    ("a b", False),  # a space
    ("_x", False),  # starts with '_'
]
SUBDOMAINS = [
    ("registry", True),
    ("registry.credentials", True),  # dots join labels
    ("a..b", False),  # the secret name: an empty label
    ("a.", False),  # ends with a dot
    ("Registry", False),  # upper case
    ("a" * 253, True),
    ("a" * 254, False),
]
RESOURCES = [
    ("nvidia.com/gpu", True),  # the NVIDIA device plugin's
    ("amd.com/gpu", True),  # AMD's
    ("gpu", False),  # no domain: a native resource name
    ("kubernetes.io/gpu", False),  # Kubernetes' own domain
    ("example.kubernetes.io/gpu", False),  # under it
    ("requests.example.com/gpu", False),  # what a ResourceQuota writes before one
]
TOLERATIONS = [
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, None),
    ({"operator": "Exists"}, None),  # every taint
    ({"key": "k", "operator": "Equal", "value": "v"}, None),
    ({"key": "k", "operator": "Exists", "value": "v"}, "value must be empty when operator is 'Exists'"),
    ({"operator": "Exists", "value": "v"}, "value must be empty when operator is 'Exists'"),
    ({"operator": "Equal", "value": "v"}, "operator must be 'Exists' when key is empty"),
    ({"value": "v"}, "operator must be 'Exists' when key is empty"),  # Equal is the default
    ({"key": "a..b/x", "operator": "Exists"}, "key 'a..b/x': its prefix 'a..b' is not a DNS subdomain"),
    ({"key": "k", "value": "v" * 64}, "value 'vvvv"),  # a label value of 64 characters
    ({"key": "k", "operator": "Exists", "effect": "Sometimes"}, "effect must be one of"),
]


@pytest.mark.parametrize(("value", "valid"), LABEL_KEYS)
def test_label_keys(value: str, valid: bool) -> None:
    assert (apimachinery.label_key(value) is None) is valid
    assert kubernetes_schema.is_qualified_name(value) is valid  # the fake's own transcription agrees


@pytest.mark.parametrize(("value", "valid"), LABEL_VALUES)
def test_label_values(value: str, valid: bool) -> None:
    assert (apimachinery.label_value(value) is None) is valid
    assert kubernetes_schema.is_label_value(value) is valid


@pytest.mark.parametrize(("value", "valid"), SUBDOMAINS)
def test_dns_subdomains(value: str, valid: bool) -> None:
    assert (apimachinery.dns1123_subdomain(value) is None) is valid
    assert kubernetes_schema.is_dns1123_subdomain(value) is valid


@pytest.mark.parametrize(("value", "valid"), RESOURCES)
def test_extended_resources(value: str, valid: bool) -> None:
    assert (apimachinery.extended_resource(value) is None) is valid
    assert kubernetes_schema.is_extended_resource(value) is valid


@pytest.mark.parametrize(
    ("value", "valid"), [("1", True), ("500m", True), ("16Gi", True), ("1e3", True), ("x", False)]
)
def test_quantities(value: str, valid: bool) -> None:
    assert (apimachinery.quantity(value) is None) is valid


@pytest.mark.parametrize(("toleration", "problem"), TOLERATIONS)
def test_tolerations(toleration: dict[str, str], problem: str | None) -> None:
    found = apimachinery.toleration(toleration)
    assert (found is None) if problem is None else (found is not None and found.startswith(problem))
    assert (kubernetes_schema._toleration(toleration) is None) is (problem is None)


NAMEISH = st.text("abAB09-_./", max_size=70) | st.sampled_from(["a..b/x", "x" * 64, "a" * 254 + "/x", "é/x"])


@given(NAMEISH)
def test_the_two_transcriptions_of_the_go_rules_agree(value: str) -> None:
    assert (apimachinery.label_key(value) is None) is kubernetes_schema.is_qualified_name(value)
    assert (apimachinery.label_value(value) is None) is kubernetes_schema.is_label_value(value)
    assert (apimachinery.dns1123_subdomain(value) is None) is kubernetes_schema.is_dns1123_subdomain(value)
    assert (apimachinery.dns1123_label(value) is None) is kubernetes_schema.is_dns1123_label(value)
    assert (apimachinery.extended_resource(value) is None) is kubernetes_schema.is_extended_resource(value)


# Every field a rule guards: what validate now refuses, and the line that says why.
REFUSED = [
    (
        {"tolerations": [{"operator": "Exists", "value": "x"}]},
        "kubernetes.tolerations[0]: value must be empty",
    ),
    (
        {"tolerations": [{"operator": "Equal"}]},
        "kubernetes.tolerations[0]: operator must be 'Exists' when key",
    ),
    ({"tolerations": [{"key": "a..b/x"}]}, "kubernetes.tolerations[0].key: 'a..b/x' is not a label key: its"),
    (
        {"node_selector": {"a..b/x": "v"}},
        "kubernetes.node_selector.a..b/x.[key]: 'a..b/x' is not a label key",
    ),
    ({"node_selector": {"pool": "a" * 64}}, "kubernetes.node_selector.pool: 'aaaa"),
    ({"labels": {"a..b/x": "v"}}, "kubernetes.labels.a..b/x.[key]: 'a..b/x' is not a label key"),
    ({"labels": {"team": "a b"}}, "kubernetes.labels.team: 'a b' is not a label value"),
    ({"image_pull_secrets": ["a..b"]}, "kubernetes.image_pull_secrets[0]: 'a..b' is not a Secret name"),
    ({"service_account": "a..b"}, "kubernetes.service_account: 'a..b' is not a Kubernetes name"),
    ({"node_type": "g5." + "x" * 90}, "kubernetes.node_type: 'g5.xxx"),  # 93 characters into a label value
    (
        {"gpu_resource": "kubernetes.io/gpu"},
        "kubernetes.gpu_resource: 'kubernetes.io/gpu' is not an extended",
    ),
    ({"namespace": "a.b"}, "kubernetes.namespace: 'a.b' is not a Kubernetes name: not a DNS label"),
    ({"queue": "Team"}, "kubernetes.queue: 'Team' is not a Kubernetes name"),
]


@pytest.mark.parametrize(("fields", "problem"), REFUSED)
def test_validate_refuses_what_the_api_server_would(fields: dict[str, Any], problem: str) -> None:
    with pytest.raises(SpecError) as refused:
        KubernetesSettings(**fields)
    (line,) = refused.value.problems
    assert line.startswith(problem), line


@pytest.mark.parametrize(
    "fields",
    [
        {"service_account": "trainer.ml"},  # a ServiceAccount's name is a DNS subdomain
        {"image_pull_secrets": ["registry.credentials"]},
        {"tolerations": [{"operator": "Exists"}]},  # every taint
        {"labels": {"example.com/Team_1": ""}},  # an empty label value
        {"node_type": "a2-highgpu-1g"},
        {"gpu_resource": "amd.com/gpu"},
    ],
)
def test_what_the_api_server_takes_still_validates(fields: dict[str, Any]) -> None:
    KubernetesSettings(**fields)
