"""Toy Cloud's section of a job spec (``toycloud:``), as a plugin ships it: a small module of its own.

cloudtrain reads it through the ``cloudtrain.spec_sections`` entry point when it builds
the spec, without loading the provider: the section, its ``toy://`` scheme and its
catalog rows are known before any Toy Cloud code runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import Field

from cloudtrain.sections import StoredSection, shaped

ZONE = r"toy-[a-z]+-\d"


class ToyCloudSettings(StoredSection):
    """Toy Cloud settings; only read when the provider is toycloud."""

    provider: ClassVar[str] = "toycloud"
    title: ClassVar[str] = "Toy Cloud"
    summary: ClassVar[str] = "Toy Cloud settings; read only on --provider toycloud."
    examples: ClassVar[tuple[dict[str, Any], ...]] = ({"region": "toy-east-1"},)
    schemes: ClassVar[tuple[str, ...]] = ("toy://",)
    identity: ClassVar[str | None] = "account"
    catalog_dir: ClassVar[Path | None] = Path(__file__).parent / "toycloud_catalog"

    region: Annotated[str, shaped("region", ZONE, "is not a Toy Cloud region; use one like toy-east-1")] = (
        Field(
            "toy-east-1",
            description="The Toy Cloud region.",
            json_schema_extra={"pattern": f"^{ZONE}$"},
        )
    )
    account: str | None = Field(None, description="The account the jobs run as.")
    storage_root: str | None = Field(
        None, description="toy:// root used on Toy Cloud instead of storage.root."
    )
