"""Runs read back from MLflow, for ``cloudtrain compare --from mlflow``.

The chief logs a run's history and result files as artifacts of its MLflow run
(``cloudtrain_runtime.tracking``), so a run read here is the same record a run read from
its output folder is (``cloudtrain.scaling.runs.read_stored``), and ``compare`` prints the
same table. A run is named by its MLflow run id, or by its cloudtrain run id (the tag
``cloudtrain.run_id``, searched in every experiment of the store).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudtrain import files
from cloudtrain.errors import CloudtrainError, ProviderError
from cloudtrain.scaling.runs import MAX_FILE_BYTES, read_stored
from cloudtrain.tracking import store
from cloudtrain_runtime.tracking import RUN_TAG

if TYPE_CHECKING:
    from cloudtrain.scaling import RunRecord
    from cloudtrain.spec import JobSpec


def read_runs(refs: Sequence[str], *, uri: str, settings: JobSpec) -> list[RunRecord]:
    """The runs ``refs`` name in the MLflow store at ``uri``, as ``compare`` reads runs.

    Raises:
        CloudtrainError: a ref names no run there, or a run cloudtrain did not log (no history artifact).
    """
    client = store.client(uri)
    with tempfile.TemporaryDirectory(prefix="cloudtrain-mlflow-") as folder:
        return [
            read_stored(ref, _artifacts(client, _run_id(client, ref, uri), Path(folder)), settings=settings)
            for ref in refs
        ]


def _run_id(client: Any, ref: str, uri: str) -> str:
    """The MLflow run ``ref`` names: a cloudtrain run id (its tag), else an MLflow run id."""
    experiments = [experiment.experiment_id for experiment in client.search_experiments()]
    tagged = store.tagged(client, experiments, ref, limit=2)
    if len(tagged) == 1:
        return str(tagged[0].info.run_id)
    if tagged:
        raise CloudtrainError(
            f"{len(tagged)} MLflow runs at {uri} carry {RUN_TAG}={ref!r}; name one by its MLflow run id."
        )
    try:
        return str(client.get_run(ref).info.run_id)
    except Exception:  # MLflow's error for an unknown id differs by store: one message for all
        raise CloudtrainError(
            f"No MLflow run at {uri} is {ref!r}: give a cloudtrain run id (the tag {RUN_TAG}) or an MLflow run id."
        ) from None


def _artifacts(client: Any, run_id: str, folder: Path) -> Callable[[str], bytes]:
    """A reader of the run's artifacts by name; one that is missing is a ``ProviderError``, as in an output folder."""

    def read(name: str) -> bytes:
        try:
            local = client.download_artifacts(run_id, name, str(folder / run_id))
        except Exception:  # a missing artifact: MLflow raises its own error per store
            raise ProviderError(
                f"MLflow run {run_id} has no {name} (cloudtrain logs it when the run ends)."
            ) from None
        return files.read_bytes(local, limit=MAX_FILE_BYTES)

    return read
