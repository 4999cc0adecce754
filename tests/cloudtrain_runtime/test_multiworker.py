"""Real 2-process MultiWorkerMirroredStrategy runs equal a single-process reference.

Same global batch (2 × 16 against 1 × 32), same seed, same data: the loss of every
epoch and the final weights must match, for Keras 3 (with the detected fit fixes)
and for tf_keras. The 2-process Keras 3 run also checks the export: exactly one
SavedModel, no temporary export folders left, and a serving_default that answered.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.cloudtrain_runtime.harness import Run, launch, runtime_config
from tests.shared import made_once

pytestmark = pytest.mark.multiprocess

FLAVOURS = {"keras3": {}, "tf_keras": {"TF_USE_LEGACY_KERAS": "1"}}
# tf_keras is not in the extras (its wheel would replace tensorflow-cpu); the Makefile installs it.
NEEDS_TF_KERAS = pytest.mark.skipif(
    importlib.util.find_spec("tf_keras") is None,
    reason="tf_keras is not installed: pip install --no-deps 'tf-keras==2.21.*' (see the Makefile)",
)


def _reference_and_distributed(root: Path, env: dict[str, str]) -> tuple[Run, Run]:
    single = runtime_config(root / "single", per_replica_batch=32, replicas=1, hosts=1)
    double = runtime_config(root / "double")
    return launch(1, single, root / "single", env=env), launch(2, double, root / "double", env=env)


@pytest.fixture(scope="session", params=["keras3", pytest.param("tf_keras", marks=NEEDS_TF_KERAS)])
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, Run]:
    """The flavour's two runs, made once for its tests whichever worker runs them."""
    flavour = FLAVOURS[request.param]
    reference, distributed = made_once(
        tmp_path_factory,
        f"multiworker-{request.param}",
        lambda root: _reference_and_distributed(root, flavour),
    )
    assert reference.ok, reference.explain()
    assert distributed.ok, distributed.explain()
    return reference, distributed


def test_losses_and_weights_equal_single_process_reference(runs: tuple[Run, Run]) -> None:
    reference, distributed = runs
    assert distributed.result["replicas"] == 2 and reference.result["replicas"] == 1
    assert distributed.result["global_batch"] == reference.result["global_batch"] == 32
    assert distributed.result["strategy"] == "multi-worker"
    assert distributed.result["history"]["loss"] == pytest.approx(
        reference.result["history"]["loss"], rel=1e-5
    )
    assert distributed.result["weights_l1"] == pytest.approx(reference.result["weights_l1"], rel=1e-6)


def test_export_leaves_one_saved_model_and_no_temp_dirs(runs: tuple[Run, Run]) -> None:
    _, distributed = runs
    saved = sorted(distributed.root.rglob("saved_model.pb"))
    assert saved == [Path(distributed.result["export"]) / "saved_model.pb"]
    assert list((distributed.root / "tmp" / "cloudtrain").glob("export-*")) == []
    outputs = distributed.result["serving_default"]["outputs"]
    assert len(next(iter(outputs.values()))) == 1


def test_chief_logs_progress_and_summary(runs: tuple[Run, Run]) -> None:
    _, distributed = runs
    chief, worker = distributed.outputs
    assert "strategy=multi-worker:" in chief
    assert [line.split()[1] for line in chief.splitlines() if line.startswith("epoch ")] == [
        "1/3",
        "2/3",
        "3/3",
    ]
    assert "replicas=2" in chief and "global_batch=32" in chief and "final_val_mae=" in chief
    assert "epoch " not in worker
