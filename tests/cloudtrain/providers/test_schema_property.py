"""Validated ⇒ the provider's own schema accepts the render.

A spec ``validate`` passes must never be refused by the service's schema after its code
was uploaded: every SageMaker request is checked by botocore's service model (types,
required members, and the lengths, patterns and enums its validator skips), every Vertex
AI body by the ``aiplatform_v1`` protos (strict parsing, then the wire encoding, which
requires valid UTF-8).

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
        data["image"] = draw(TEXT)
    if draw(st.booleans()):
        data["sagemaker"] |= {
            "subnets": draw(st.lists(TEXT, min_size=1, max_size=17)),
            "security_groups": draw(st.lists(TEXT, min_size=1, max_size=6)),
        }
    return data


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


SCHEMAS = {"sagemaker": _accepted_by_sagemaker, "vertex": _accepted_by_vertex}


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
