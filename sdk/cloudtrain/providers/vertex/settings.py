"""The ``vertex:`` section of a job spec: the project, region and identity of a Vertex AI job.

Only the vertex provider reads it; ``JobSpec`` has it because the provider is installed
(``cloudtrain.installed``). This module imports nothing of the provider's own,
so building the spec does not load the provider.

Example:
>>> VertexSettings(project="my-project").region
'us-central1'
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from cloudtrain.sections import StoredSection, shaped

# Region shapes: us-central1, northamerica-northeast1.
_GCP_REGION = r"^[a-z]+(-[a-z]+)+\d+$"
# Project IDs: 6-30 lowercase letters, digits and '-', starting with a letter, not ending in '-'
# (cloud.google.com/resource-manager/docs/creating-managing-projects).
_GCP_PROJECT = r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$"
_EMAIL = r"^[^@\s]+@[^@\s]+\.[^@\s]+$"
# Dynamic Workload Scheduler is one capacity mode among others now: resources.capacity.
MOVED = {
    "flex_start": "resources.capacity: flex",
    "max_wait": "resources.capacity: {mode: flex, max_wait: 2h}",
}


class VertexSettings(StoredSection):
    """Vertex AI settings; only read when the provider is vertex."""

    provider: ClassVar[str] = "vertex"
    title: ClassVar[str] = "Vertex AI"
    summary: ClassVar[str] = "Vertex AI settings; read only on --provider vertex."
    examples: ClassVar[tuple[dict[str, Any], ...]] = ({"project": "my-project", "region": "us-central1"},)
    schemes: ClassVar[tuple[str, ...]] = ("gs://",)
    identity: ClassVar[str | None] = "service_account"
    scanned_fields: ClassVar[frozenset[str]] = frozenset({"labels"})

    project: Annotated[
        str | None,
        shaped(
            "gcp_project",
            _GCP_PROJECT,
            "is not a Google Cloud project ID; use 6-30 lowercase letters, "
            "digits and '-', starting with a letter",
        ),
    ] = Field(
        None,
        description="The Google Cloud project ID (required on Vertex AI).",
        examples=["my-project"],
        json_schema_extra={"pattern": _GCP_PROJECT},
    )
    # The region is part of the API host name ({region}-aiplatform.googleapis.com).
    region: Annotated[
        str, shaped("region", _GCP_REGION, "is not a Google Cloud region; use a region like us-central1")
    ] = Field(
        "us-central1",
        description="The Vertex AI region.",
        examples=["europe-west4"],
        json_schema_extra={"pattern": _GCP_REGION},
    )
    storage_root: str | None = Field(
        None,
        description="gs:// root used on Vertex instead of storage.root.",
        examples=["gs://bucket/churn"],
    )
    service_account: Annotated[
        str | None,
        shaped("email", _EMAIL, "is not a service account email; use NAME@PROJECT.iam.gserviceaccount.com"),
    ] = Field(
        None,
        description="The service account the job runs as.",
        examples=["trainer@my-project.iam.gserviceaccount.com"],
        json_schema_extra={"pattern": _EMAIL},
    )
    network: str | None = Field(
        None,
        description="VPC network to peer with: projects/NUMBER/global/networks/NAME.",
        examples=["projects/123456789012/global/networks/default"],
    )
    labels: dict[str, str] = Field(
        default_factory=dict, description="Labels on the CustomJob.", examples=[{"team": "search"}]
    )
    tensorboard: str | None = Field(
        None,
        description="projects/P/locations/L/tensorboards/ID; needs service_account.",
        examples=["projects/my-project/locations/us-central1/tensorboards/123"],
    )
    experiment: Annotated[
        str | None,
        shaped(
            "vertex_experiment",
            r"[a-z0-9][a-z0-9-]{0,127}",
            "is not a Vertex AI experiment name; use lowercase letters, digits and '-' (at most 128)",
        ),
    ] = Field(
        None,
        description="A Vertex AI Experiments experiment the job belongs to (CustomJobSpec.experiment); its run "
        "is the cloudtrain run id. Vertex records no metrics of a distributed job: see docs/tracking.md.",
        examples=["churn"],
    )

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: Any) -> Any:
        """A field that moved to ``resources.capacity`` names its new place, not "unknown field"."""
        for key, where in MOVED.items():
            if isinstance(data, dict) and key in data:
                raise PydanticCustomError("moved", "{key} moved to {where}", {"key": key, "where": where})
        return data


SECTION = VertexSettings
