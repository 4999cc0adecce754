"""``cloudtrain compare --from mlflow``: two tracked runs read back from a real MLflow server
print the table their output folders print."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cloudtrain_runtime.harness import launch, runtime_config
from tests.conftest import Result

pytestmark = [
    pytest.mark.multiprocess,
    pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy is deprecated"),
]


def test_compare_from_mlflow_prints_the_table_of_the_output_folders(
    tmp_path: Path, mlflow_server: str, run_cli: Callable[..., Result]
) -> None:
    folders = []
    for run, batch in (("small-batch", 8), ("large-batch", 16)):
        root = tmp_path / run
        config = runtime_config(
            root,
            replicas=1,
            hosts=1,
            per_replica_batch=batch,
            run_id=run,
            tracking_uri=mlflow_server,
            tracking_experiment="compare",
        )
        assert launch(1, config, root).ok
        folders.append(str(root / "out"))

    from_files = run_cli("compare", *folders)
    from_mlflow = run_cli(
        "compare", "small-batch", "large-batch", "--from", "mlflow", "--tracking", mlflow_server
    )
    assert from_files.code == 0 and from_mlflow.code == 0, from_files.err + from_mlflow.err
    assert from_mlflow.out == from_files.out.replace(folders[0], "small-batch").replace(
        folders[1], "large-batch"
    )


def test_compare_from_mlflow_without_a_uri_exits_2(run_cli: Callable[..., Result], monkeypatch) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    result = run_cli("compare", "a", "b", "--from", "mlflow")
    assert result.code == 2 and "--from mlflow needs the MLflow tracking URI" in result.err


def test_compare_from_mlflow_names_a_run_it_cannot_find(
    run_cli: Callable[..., Result], mlflow_server: str
) -> None:
    result = run_cli("compare", "nothing-a", "nothing-b", "--from", "mlflow", "--tracking", mlflow_server)
    assert result.code != 0 and "No MLflow run at" in result.err and "'nothing-a'" in result.err
