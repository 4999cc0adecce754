"""The ``placement:`` section of a job spec: where a run may start, in the order to try.

A run that names candidates is placed on the first that takes it: each candidate is a
provider, a region and, where it differs from the spec's, a shape (accelerator, devices
per host, hosts, machine, spot). The spec's global batch and learning-rate schedule hold
whatever shape runs: the per-replica batch is the one that divides the spec's global
batch among the candidate's replicas (``cloudtrain.placement``, which also does the
trying).

Example:
>>> Placement.model_validate([{"provider": "vertex", "region": "us-central1"},
...                           {"provider": "sagemaker", "region": "us-east-1", "per_host": 4}]).order
'listed'
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, GetJsonSchemaHandler, field_validator, model_validator
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError

from cloudtrain import installed
from cloudtrain.errors import did_you_mean
from cloudtrain.messages import QUOTE_LIMIT, quote
from cloudtrain.sections import Section, Text, Whole, shaped

# More candidates than this is a search, not a placement: each one may cost a minute.
MAX_CANDIDATES = 20
# What a candidate may change of the spec's resources.
SHAPE_FIELDS = ("accelerator", "per_host", "hosts", "machine_type", "spot")

PlacementOrder = Literal["listed", "cheapest"]
Region = Annotated[
    str, shaped("region", r"[a-z][a-z0-9-]{1,62}", "is not a region; use one like us-central1")
]


class Candidate(Section):
    """One place a run may start: a provider and region, and the shape there where it differs."""

    provider: str = Field(
        ...,
        description="The provider (its section of the spec holds its settings).",
        examples=[name for name in installed.BUILTIN if name != "local"],
    )
    region: Region | None = Field(
        None, description="The region to try; default: the provider section's.", examples=["europe-west4"]
    )
    accelerator: Text | None = Field(
        None, description="The accelerator here, if not the spec's.", examples=["l4"]
    )
    per_host: Whole | None = Field(None, gt=0, le=64, description="Accelerators per host here.", examples=[4])
    hosts: Whole | None = Field(None, gt=0, le=1024, description="Hosts here.", examples=[2])
    machine_type: Text | None = Field(
        None, description="The provider's machine type here.", examples=["a2-highgpu-4g"]
    )
    spot: bool | None = Field(
        None, description="Spot capacity here, if not as the spec says.", examples=[True]
    )
    storage_root: Text | None = Field(
        None,
        description="Where this candidate's run keeps its files, if not the provider section's or "
        "storage.root (a bucket in this candidate's region).",
        examples=["gs://my-bucket-europe-west4/churn"],
    )

    @field_validator("provider")
    @classmethod
    def _installed(cls, value: str) -> str:
        if value not in installed.names():
            hint = did_you_mean(value, installed.names()) if len(value) <= QUOTE_LIMIT else ""
            raise PydanticCustomError(
                "provider", "{value} is not valid.{hint}", {"value": quote(value), "hint": hint}
            )
        return value

    def shape(self) -> dict[str, Any]:
        """The resources this candidate sets, by field."""
        return {name: getattr(self, name) for name in SHAPE_FIELDS if getattr(self, name) is not None}

    def label(self) -> str:
        """``vertex us-central1``, with the shape where it differs: ``sagemaker us-east-1 (per_host=4)``."""
        shape = ", ".join(f"{name}={value}" for name, value in self.shape().items())
        where = " ".join(part for part in (self.provider, self.region) if part)
        return f"{where} ({shape})" if shape else where


class Placement(Section):
    """Where the run may start, tried in order: the first candidate that takes it runs it."""

    candidates: list[Candidate] = Field(
        ...,
        description=f"Providers, regions and shapes to try, at most {MAX_CANDIDATES}.",
        examples=[[{"provider": name} for name in installed.BUILTIN if name != "local"]],
    )
    order: PlacementOrder = Field(
        "listed",
        description="listed: as written; cheapest: by the estimated cost of each candidate.",
        examples=["cheapest"],
    )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        """The mapping, or the candidates alone (a list): both forms a spec may write."""
        found = handler(schema)
        return {"anyOf": [found, handler.resolve_ref_schema(found)["properties"]["candidates"]]}

    @model_validator(mode="before")
    @classmethod
    def _list_alone(cls, data: Any) -> Any:
        """``placement: [...]`` is the candidates, tried as listed."""
        return {"candidates": data} if isinstance(data, list) else data

    @field_validator("candidates", mode="before")
    @classmethod
    def _how_many(cls, value: Any) -> Any:
        if isinstance(value, list) and not 1 <= len(value) <= MAX_CANDIDATES:
            raise PydanticCustomError(
                "candidates",
                "{count} candidates; name 1 to {most} (each is tried in turn, and each try may take minutes)",
                {"count": len(value), "most": MAX_CANDIDATES},
            )
        return value

    @field_validator("candidates")
    @classmethod
    def _distinct(cls, value: list[Candidate]) -> list[Candidate]:
        seen: dict[str, int] = {}
        for index, candidate in enumerate(value):
            key = candidate.model_dump_json(exclude={"storage_root"})
            if key in seen:
                raise PydanticCustomError(
                    "duplicate_candidate",
                    "candidates[{index}] ({label}) is candidates[{first}] again; remove one",
                    {"index": index, "label": candidate.label(), "first": seen[key]},
                )
            seen[key] = index
        return value
