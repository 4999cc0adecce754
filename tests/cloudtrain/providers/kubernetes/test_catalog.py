"""The Kubernetes node catalog is what its generator makes of the Vertex and SageMaker rows."""

from __future__ import annotations

from decimal import Decimal

from cloudtrain import catalog
from cloudtrain.cost.inputs import prices
from cloudtrain.providers.kubernetes import generate_catalog


def test_the_shipped_files_are_the_generators_output() -> None:
    for name, text in generate_catalog.generated().items():
        assert (generate_catalog.FOLDER / name).read_text() == text, (
            f"{name} is stale: run python -m cloudtrain.providers.kubernetes.generate_catalog"
        )


def test_a_gke_node_costs_the_compute_engine_price_vertex_marks_up() -> None:
    premium = Decimal(
        next(
            r["value"] for r in catalog.rows("cost_assumptions.csv") if r["name"] == generate_catalog.PREMIUM
        )
    )
    vertex = prices().lookup("vertex", "us-central1", "n1-standard-8", "t4")
    node = prices().lookup("kubernetes", "us-central1", "n1-standard-8", "t4")
    assert vertex is not None and node is not None
    assert not node.is_estimate and vertex.is_estimate
    assert abs(Decimal(str(node.on_demand)) * premium - Decimal(str(vertex.on_demand))) < Decimal("0.0001")
    assert "GCE n1-standard-8" in node.formula and "NVIDIA_TESLA_T4" in node.formula


def test_an_eks_node_costs_the_ec2_price_and_no_spot_price_is_assumed() -> None:
    node = prices().lookup("kubernetes", "us-east-1", "g5.xlarge", "a10g")
    assert node is not None
    assert node.on_demand == 1.006 and node.spot is None
    assert node.billing_increment_s == 1


def test_every_node_type_has_the_hardware_of_its_cloud_row() -> None:
    clouds = {
        (m.machine_type.removeprefix("ml."), m.accelerator): m
        for m in catalog.machines()
        if m.provider != "kubernetes"
    }
    for node in catalog.machines("kubernetes"):
        cloud = clouds[(node.machine_type, node.accelerator)]
        assert (node.accelerator_count, node.vcpus, node.memory_gb) == (
            cloud.accelerator_count,
            cloud.vcpus,
            cloud.memory_gb,
        )


def test_the_auto_image_is_the_tensorflow_projects_own() -> None:
    images = {
        row["kind"]: row["uri"] for row in catalog.rows("images.csv") if row["provider"] == "kubernetes"
    }
    assert images == {"gpu": "tensorflow/tensorflow:2.21.0-gpu", "cpu": "tensorflow/tensorflow:2.21.0"}
