"""``latest.json``: the storage root's pointer to the run whose export was verified last.

Every run keeps its artifacts under its own prefix (``ROOT/runs/<run_id>/``), so "the
current model" is no fixed folder that each run overwrites. Instead, once a run's export
is written, reloaded and answered, the chief writes this small file at the storage root,
where the replica can reach it (a local folder, Vertex's ``/gcs`` mount): the run id, the
model's URI and when it completed. The run that completes last is the latest; nothing of
any run is overwritten. Where the root is out of reach (SageMaker mounts no bucket), the
SDK writes it when it sees the job complete.

Example:
>>> record("2026-12-03", "gs://b/churn/runs/2026-12-03/model", at=0.0)
{'run_id': '2026-12-03', 'model': 'gs://b/churn/runs/2026-12-03/model', 'completed_at': '1970-01-01T00:00:00Z'}
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from cloudtrain_runtime.backups import write_json


def record(run_id: str | None, model: str, *, at: float | None = None) -> dict[str, Any]:
    """The pointer's content: which run, where its model is, and when it completed (UTC)."""
    stamp = time.gmtime(time.time() if at is None else at)
    return {"run_id": run_id, "model": model, "completed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", stamp)}


def point(path: Path, run_id: str | None, model: str) -> None:
    """Write the pointer at ``path`` whole, replacing the previous run's."""
    write_json(path, record(run_id, model))
