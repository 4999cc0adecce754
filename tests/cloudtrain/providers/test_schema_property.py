"""Validated ⇒ the provider's own schema accepts the render.

A spec ``validate`` passes must never be refused by the service's schema after its code
was uploaded: every SageMaker request is checked by botocore's service model (types,
required members, and the lengths, patterns and enums its validator skips), every Vertex
AI body by the ``aiplatform_v1`` protos (strict parsing, then the wire encoding, which
requires valid UTF-8), every Kubernetes JobSet by the vendored JobSet CRD, the
``kubernetes`` client's pod models and the API machinery's rules for names, labels,
tolerations and quantities (``fakes.kubernetes_schema``, transcribed from the Go source).

The specs are drawn from the Python API with the fields users type free text into. A
few hundred examples run by default; ``CLOUDTRAIN_FUZZ_EXAMPLES=20000`` runs more, and
``pytest --hypothesis-seed=N`` picks the seed.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cloudtrain import api, catalog, planning
from cloudtrain.errors import SpecError
from cloudtrain.provider import registry
from cloudtrain.spec import JobSpec

aiplatform_v1 = pytest.importorskip("google.cloud.aiplatform_v1")
json_format = pytest.importorskip("google.protobuf.json_format")
sagemaker_model = pytest.importorskip("tests.cloudtrain.providers.fakes.sagemaker_model")
kube_models = pytest.importorskip("kubernetes.client.models")
kubernetes_schema = pytest.importorskip("tests.cloudtrain.providers.fakes.kubernetes_schema")

EXAMPLES = int(os.environ.get("CLOUDTRAIN_FUZZ_EXAMPLES", "300"))

# Any code point, surrogates and control characters included, and the shapes that broke limits.
ANY_CHAR = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())
TEXT = st.one_of(
    st.text(ANY_CHAR, max_size=12),
    st.text("abcXYZ019 _.:/=+-@!\t", max_size=20),
    st.text("ab-", min_size=240, max_size=600),  # past every length limit
    st.sampled_from(["", "aws:owner", "\ud800", "a\x00b", "x" * 257, "é", "tab\there", "subnet-0abc1234"]),
)
IDENT = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True) | st.sampled_from(["K" * 600])
ROLE = st.from_regex(r"arn:aws:iam::[0-9]{12}:role/[A-Za-z0-9+=,.@_/-]{1,40}", fullmatch=True)
# Near the API machinery's edges: empty parts, capitals, '_', 63 and 64 characters, two '/'.
KUBE_NAME = st.one_of(
    st.from_regex(r"([a-z0-9.-]{1,8}/)?[A-Za-z0-9._-]{1,10}", fullmatch=True),
    st.text("aZ09-_./", max_size=12),
    st.sampled_from(["a..b/x", "a..b", "x" * 63, "x" * 64, "a/b/c", "kubernetes.io/gpu", "", "-x", "Team"]),
    TEXT,
)
TOLERATION = st.fixed_dictionaries(
    {},
    optional={
        "key": KUBE_NAME,
        "operator": st.sampled_from(["Equal", "Exists"]),
        "value": KUBE_NAME,
        "effect": st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute"]),
    },
)
URI = st.sampled_from(["gs://corpus-bucket/data", "s3://corpus-bucket/data"]) | st.builds(
    lambda scheme, tail: f"{scheme}://corpus-bucket/{tail}", st.sampled_from(["gs", "s3"]), TEXT
)


@st.composite
def specs(draw: st.DrawFn) -> dict[str, Any]:
    """A spec's data: a valid base, with the free-text fields drawn."""
    data: dict[str, Any] = {
        "name": draw(st.from_regex(r"[a-z][a-z0-9-]{0,70}[a-z0-9]", fullmatch=True) | TEXT),
        "code": {"module": "trainer.task", "args": draw(st.lists(TEXT, max_size=3))},
        "resources": {
            "accelerator": draw(st.sampled_from(catalog.accelerator_names())),
            "per_host": draw(st.sampled_from([1, 2, 4, 8])),
            "hosts": draw(st.integers(1, 3)),
        },
        "storage": {"root": "gs://corpus-bucket/job"},
        "env": draw(st.dictionaries(IDENT, TEXT, max_size=3)),
        "data": draw(st.dictionaries(st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True), URI, max_size=2)),
        "limits": {"max_runtime": draw(st.integers(1, 40 * 86400))},
        "vertex": {
            "project": "corpus-project",
            "labels": draw(st.dictionaries(TEXT, TEXT, max_size=3)),
            "network": draw(st.none() | TEXT),
        },
        "sagemaker": {
            "role": draw(ROLE),
            "storage_root": "s3://corpus-bucket/job",
            "tags": draw(st.dictionaries(TEXT, TEXT, max_size=3)),
            "metrics": draw(
                st.lists(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,62}", fullmatch=True), max_size=3)
            ),
        },
    }
    if draw(st.booleans()):
        data["kubernetes"] = draw(kubernetes_sections())
    if draw(st.booleans()):
        data["image"] = draw(TEXT)
    if draw(st.booleans()):
        data["sagemaker"] |= {
            "subnets": draw(st.lists(TEXT, min_size=1, max_size=17)),
            "security_groups": draw(st.lists(TEXT, min_size=1, max_size=6)),
        }
    return data


@st.composite
def kubernetes_sections(draw: st.DrawFn) -> dict[str, Any]:
    """The ``kubernetes:`` fields that reach the JobSet's names, labels, tolerations and resources."""
    fields = {
        "namespace": KUBE_NAME,
        "service_account": KUBE_NAME,
        "node_type": KUBE_NAME | st.just("g5." + "x" * 90),
        "queue": KUBE_NAME,
        "gpu_resource": KUBE_NAME,
        "node_selector": st.dictionaries(KUBE_NAME, KUBE_NAME, max_size=2),
        "labels": st.dictionaries(KUBE_NAME, KUBE_NAME, max_size=2),
        "tolerations": st.lists(TOLERATION, max_size=2),
        "image_pull_secrets": st.lists(KUBE_NAME, max_size=2),
    }
    chosen = draw(st.lists(st.sampled_from(sorted(fields)), unique=True, max_size=4))
    return {name: draw(fields[name]) for name in chosen}


def _accepted_by_kubernetes(request: dict[str, Any]) -> list[str]:
    problems = kubernetes_schema.problems(request) + kubernetes_schema.api_server_problems(request)
    try:
        kube_models.V1JobTemplateSpec.model_validate(request["spec"]["replicatedJobs"][0]["template"])
    except ValueError as err:  # the client's pydantic models refuse a field of the wrong type
        problems.append(str(err)[:300])
    return problems


def _accepted_by_sagemaker(request: dict[str, Any]) -> list[str]:
    return sagemaker_model.problems("CreateTrainingJob", request)


def _accepted_by_vertex(request: dict[str, Any]) -> list[str]:
    message = aiplatform_v1.CustomJob.pb(aiplatform_v1.CustomJob())
    try:
        json_format.ParseDict(request, message, ignore_unknown_fields=False)
        message.SerializeToString()  # what gRPC sends: valid UTF-8 only
    except Exception as err:  # whatever the protos raise is a refusal
        return [f"{type(err).__name__}: {err}"[:300]]
    return []


SCHEMAS = {
    "sagemaker": _accepted_by_sagemaker,
    "vertex": _accepted_by_vertex,
    "kubernetes": _accepted_by_kubernetes,
}


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(specs())
def test_a_spec_validate_accepts_renders_a_request_the_provider_schema_accepts(data: dict[str, Any]) -> None:
    try:
        spec = JobSpec.model_validate(data)
    except ValueError:  # refused with a clean error: nothing is sent
        return
    for name, accepts in SCHEMAS.items():
        provider = registry.get(name)
        try:
            request = api.placeholder_request(planning.plan(spec, provider), provider)
        except SpecError:
            continue
        assert accepts(request) == [], f"{name} refuses what validate accepted"


# A spec every provider takes, so each drawn ``kubernetes:`` section is what decides.
KUBERNETES_BASE: dict[str, Any] = {
    "name": "fuzz-kubernetes",
    "code": {"module": "trainer.task"},
    "resources": {"accelerator": "t4", "per_host": 1, "hosts": 2},
    "storage": {"root": "gs://corpus-bucket/job"},
}


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(kubernetes_sections())
def test_a_kubernetes_section_validate_accepts_renders_a_jobset_the_api_server_accepts(
    section: dict[str, Any],
) -> None:
    # regression: 268 such renders per 20,000 specs passed validate and were refused by the API server
    try:
        spec = JobSpec.model_validate({**KUBERNETES_BASE, "kubernetes": section})
    except ValueError:  # refused with a clean error: nothing is sent
        return
    provider = registry.get("kubernetes")
    request = api.placeholder_request(planning.plan(spec, provider), provider)
    assert _accepted_by_kubernetes(request) == [], "the API server refuses what validate accepted"
