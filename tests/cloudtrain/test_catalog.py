"""The hardware catalog is data: every row is complete, sourced, and names real provider values."""

from __future__ import annotations

import pytest

from cloudtrain import catalog
from cloudtrain.provider import registry


def test_every_machine_row_is_complete_and_sourced() -> None:
    names = catalog.accelerators()
    for m in catalog.machines():
        assert m.provider in registry.names()
        assert m.accelerator in names, m
        assert m.source.strip(), f"{m.machine_type} has no source"
        assert m.vcpus > 0 and m.memory_gb > 0 and m.network_gbps > 0
        assert (m.accelerator == "cpu") == (m.accelerator_count == 0)
        assert m.intra_host in {"none", "pcie", "nvlink", "ici"}


@pytest.mark.parametrize(
    ("provider", "accelerator"),
    [
        ("vertex", "t4"), ("vertex", "v100"), ("vertex", "l4"), ("vertex", "a100-40gb"),
        ("vertex", "a100-80gb"), ("vertex", "h100-80gb"), ("vertex", "h200-141gb"), ("vertex", "tpu-v5e"),
        ("sagemaker", "t4"), ("sagemaker", "v100"), ("sagemaker", "l4"), ("sagemaker", "a10g"),
        ("sagemaker", "a100-40gb"), ("sagemaker", "a100-80gb"), ("sagemaker", "h100-80gb"), ("sagemaker", "h200-141gb"),
    ],
)  # fmt: skip
def test_required_accelerators_are_covered(provider: str, accelerator: str) -> None:
    assert catalog.device_counts(provider, accelerator)


def test_vertex_accelerator_enums_exist_in_the_api() -> None:
    from google.cloud.aiplatform_v1.types import AcceleratorType

    for m in catalog.machines("vertex"):
        if m.provider_accelerator:
            assert m.provider_accelerator in AcceleratorType.__members__, m.machine_type


def test_sagemaker_instance_types_exist_in_the_api() -> None:
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    allowed = set(model.shape_for("TrainingInstanceType").enum)
    for m in catalog.machines("sagemaker"):
        assert m.machine_type in allowed, m.machine_type


def test_tpu_rows_carry_a_topology() -> None:
    for m in catalog.machines(accelerator="tpu-v5e"):
        rows, cols = (int(n) for n in m.tpu_topology.split("x"))
        assert rows * cols == m.accelerator_count
