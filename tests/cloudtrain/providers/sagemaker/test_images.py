"""image: auto on SageMaker: every region renders the Deep Learning Container of its own registry."""

from __future__ import annotations

from pathlib import Path

import pytest
from botocore.loaders import create_loader
from botocore.regions import EndpointResolver

from cloudtrain import catalog
from cloudtrain.api import plan
from cloudtrain.errors import SpecError
from cloudtrain.planning import Plan
from cloudtrain.providers import sagemaker
from cloudtrain.specfile import load_spec

ROOT = Path(__file__).resolve().parents[4]
EXAMPLE = ROOT / "examples" / "binary_classifier" / "job.yaml"
REGIONS = sorted(catalog.image_registries("sagemaker"))
GPU_TAG = "tensorflow-training:2.21.0-gpu-py312-cu129-amzn2023-sagemaker"
CPU_TAG = "tensorflow-training:2.21.0-cpu-py312-amzn2023-sagemaker"


def planned(region: str, *overrides: str) -> Plan:
    """The example (2 × T4) planned for SageMaker in ``region``, ready to render."""
    p = plan(load_spec(EXAMPLE, [f"sagemaker.region={region}", *overrides]), "sagemaker")
    return p.with_bundle(f"{p.storage.code}/0123456789abcdef.tar.gz").with_run("r1")


def training_image(region: str, *overrides: str) -> str:
    return sagemaker.provider.render(planned(region, *overrides))["AlgorithmSpecification"]["TrainingImage"]


@pytest.mark.parametrize(
    ("region", "registry"),
    [
        ("us-east-1", "763104351884.dkr.ecr.us-east-1.amazonaws.com"),  # the account most regions share
        ("af-south-1", "626614931356.dkr.ecr.af-south-1.amazonaws.com"),  # opt-in regions have their own
        ("ap-east-1", "871362719292.dkr.ecr.ap-east-1.amazonaws.com"),
        ("me-south-1", "217643126080.dkr.ecr.me-south-1.amazonaws.com"),
        ("eu-south-1", "692866216735.dkr.ecr.eu-south-1.amazonaws.com"),
        ("il-central-1", "780543022126.dkr.ecr.il-central-1.amazonaws.com"),
        ("cn-north-1", "727897471807.dkr.ecr.cn-north-1.amazonaws.com.cn"),  # China: the .com.cn domain
        ("us-gov-west-1", "442386744353.dkr.ecr.us-gov-west-1.amazonaws.com"),  # GovCloud: .com, own account
    ],
)
def test_named_regions_render_their_own_registry(region: str, registry: str) -> None:
    assert training_image(region) == f"{registry}/{GPU_TAG}"
    assert (
        training_image(region, "resources.accelerator=cpu", "resources.per_host=1") == f"{registry}/{CPU_TAG}"
    )


@pytest.mark.parametrize("region", REGIONS)
def test_every_catalog_region_renders_its_account_and_domain(region: str) -> None:
    found = catalog.image_registry("sagemaker", region)
    assert training_image(region) == f"{found.account}.dkr.ecr.{region}.{found.domain}/{GPU_TAG}"


def test_the_catalog_covers_the_regions_the_issue_named_and_sources_every_row() -> None:
    assert {"af-south-1", "ap-east-1", "me-south-1", "eu-south-1", "il-central-1"} <= set(REGIONS)
    assert len(REGIONS) == 39  # the 2.21.0 registries the spec's region pattern accepts
    for region in REGIONS:
        found = catalog.image_registry("sagemaker", region)
        assert found.account.isdigit() and len(found.account) == 12, found
        assert "image_uri_config/tensorflow.json" in found.source, found


def test_every_domain_is_the_one_botocore_resolves_for_ecr() -> None:
    resolver = EndpointResolver(create_loader().load_data("endpoints"))
    for region in REGIONS:
        hostname = resolver.construct_endpoint("ecr", region)["hostname"]
        assert hostname == f"ecr.{region}.{catalog.image_registry('sagemaker', region).domain}"


def test_a_misspelt_region_suggests_the_closest() -> None:
    with pytest.raises(SpecError) as info:
        planned("il-centrl-1")
    assert info.value.problems == [
        "sagemaker.region: 'il-centrl-1' is not a region SageMaker trains in. Did you mean 'il-central-1'?"
    ]


def test_a_region_far_from_any_lists_them_all() -> None:
    with pytest.raises(SpecError) as info:
        planned("xq-zzzzzzz-9")
    (problem,) = info.value.problems
    assert problem.startswith("sagemaker.region: 'xq-zzzzzzz-9' is not a region SageMaker trains in.")
    assert f"Valid regions: {', '.join(sorted(catalog.regions('sagemaker')))}." in problem


def test_an_own_image_needs_no_registry_row_but_a_region_still_needs_to_be_one() -> None:
    own = "123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn/train:1"
    assert training_image("cn-north-1", f"image={own}") == own  # no image: auto there; an image of one's own
    with pytest.raises(SpecError, match="'us-eats-1' is not a region SageMaker trains in"):
        planned("us-eats-1", f"image={own}")  # regression: accepted with an image of one's own


def test_the_regions_are_the_sagemaker_apis_in_botocores_endpoints_data() -> None:
    endpoints = create_loader().load_data("endpoints")
    served = {
        region
        for partition in endpoints["partitions"]
        for region in partition["services"].get("api.sagemaker", {}).get("endpoints", {})
    }
    rows = {region: source for region, source in _region_rows()}
    unlisted = {region for region in rows if region not in served}
    assert unlisted == {"me-west-1"}  # its image: auto image is published; botocore does not list it yet
    assert "not yet in botocore" in rows["me-west-1"]


def _region_rows() -> list[tuple[str, str]]:
    return [
        (row["region"], row["source"])
        for row in catalog.rows("regions.csv")
        if row["provider"] == "sagemaker"
    ]
