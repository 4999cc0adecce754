"""Where a run ran and kept its backups: its lineage under its prefix, and an index on this machine.

Every submit that names its run records an attempt in ``ROOT/runs/<run>/lineage.json``
(``LINEAGE_FILE``) on the provider's storage: the provider, region and shape it ran on,
the backup it started from and the copy that brought that backup there (bytes, time,
egress estimate). A run resumed somewhere new carries the attempts before it in its new
lineage; the old location's file is left as it was. The file is plain JSON for anything
that tracks runs (an MLflow run logs it as an artifact).

This machine keeps an index of the places each run has been
(``$XDG_CACHE_HOME/cloudtrain/runs/<run>.json``), so a submit of the same run on another
provider or in another region knows where to look for its backup.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cloudtrain.errors import ProviderError
from cloudtrain.planning import Plan
from cloudtrain.provider import Provider, registry
from cloudtrain.provider.backups import MissingObject, RunStore, StoresBackups
from cloudtrain.resume import found
from cloudtrain.resume.copy import write_small

LINEAGE_FILE = "lineage.json"
FORMAT = 1
MAX_LINEAGE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Location:
    """One place a run ran: the provider that submitted it, whose storage it used, the region, the run's prefix.

    ``storage`` is the provider the plan was made for: ``vertex`` for a job emulated as
    Vertex on this machine (``provider`` is then ``local``), so its egress is priced as
    Vertex's would be.
    """

    provider: str
    storage: str
    region: str
    run_uri: str

    def store(self, clients: Any = None) -> RunStore:
        """The run's files here, through the provider that wrote them.

        Raises:
            ProviderError: that provider cannot read or write a run's files.
        """
        provider = registry.get(self.provider)
        if not isinstance(provider, StoresBackups):
            raise ProviderError(
                f"{provider.title} cannot read or write a run's files, so a run's backup cannot be moved "
                f"to or from {self.run_uri}."
            )
        return provider.run_store(self.run_uri, region=self.region, clients=clients)

    def describe(self) -> str:
        """``vertex us-central1 (gs://b/root/runs/r1)``, ``sagemaker emulated here ...``, ``this machine (...)``."""
        if self.storage == "local":
            return f"this machine ({self.run_uri})"
        emulated = " emulated here" if self.provider != self.storage else ""
        return f"{self.storage}{emulated} {self.region} ({self.run_uri})"

    @classmethod
    def of(cls, plan: Plan, provider: Provider) -> Location:
        """Where ``plan``, submitted through ``provider``, runs and keeps its files."""
        return cls(provider.name, plan.provider, plan.region, plan.storage.run)


def shape(plan: Plan) -> str:
    """``n1-standard-8 + 1 × t4, 2 hosts``: what the attempt ran on."""
    hosts = f"{plan.hosts} host{'s' * (plan.hosts != 1)}"
    if plan.machine is None:
        return f"this machine, {hosts} of {plan.devices_per_host} device(s)"
    machine = plan.machine
    accelerator = (
        f" + {machine.accelerator_count} × {machine.accelerator}" if machine.accelerator_count else ""
    )
    return f"{machine.machine_type}{accelerator}, {hosts}"


def read_lineage(store: RunStore, run: str) -> dict[str, Any]:
    """The run's lineage in ``store``; a new one where there is none (or one that cannot be read)."""
    try:
        raw = json.loads(found.read_small(store, LINEAGE_FILE, MAX_LINEAGE_BYTES))
    except (MissingObject, ValueError):
        raw = None
    if not isinstance(raw, dict) or raw.get("run") != run or not isinstance(raw.get("attempts"), list):
        return {"format": FORMAT, "run": run, "attempts": []}
    return raw


def write_lineage(store: RunStore, lineage: dict[str, Any]) -> None:
    """Write the lineage to ``store`` whole (a reader sees the old file or the new one)."""
    write_small(store, LINEAGE_FILE, (json.dumps(lineage, indent=2) + "\n").encode())


def attempt(plan: Plan, location: Location, job: str, *, started_from: Any, copy: Any) -> dict[str, Any]:
    """One attempt as the lineage records it."""
    return {
        "submitted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "job": job,
        **asdict(location),
        "shape": shape(plan),
        "started_from": started_from,
        "copy": copy,
    }


def index_file(run: str) -> Path:
    """This machine's record of where run ``run`` has been."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "cloudtrain" / "runs" / f"{run}.json"


def places(run: str) -> list[Location]:
    """Where run ``run`` has been, as this machine recorded it, newest last."""
    try:
        raw = json.loads(index_file(run).read_text())
        return [Location(**place) for place in raw["locations"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def remember(run: str, location: Location) -> None:
    """Add ``location`` to the run's index on this machine (moved to the end when it was there)."""
    known = [place for place in places(run) if place != location] + [location]
    path = index_file(run)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(
        json.dumps({"run": run, "locations": [asdict(place) for place in known]}, indent=2) + "\n"
    )
    partial.replace(path)
