"""TensorFlow's C++ lines that report nothing wrong are left out of a local run's log; ``-v`` keeps them.

The lines are the ones TensorFlow 2.21 printed in the example's runs here (dataset.cc) and
the one util.cc logs at ERROR level when a half-precision op meets oneDNN on a CPU without
AVX-512 FP16 (tensorflow/core/util/util.cc, DataTypeUnsupportedWarning).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cloudtrain.providers.local.launcher import VERBOSE_ENV, is_noise
from tests.cloudtrain.cli.conftest import Scripted
from tests.conftest import Result

Run = Callable[..., Result]
HARMLESS = [
    "W0000 00:00:1796395868.701724   16870 dataset.cc:997] Input of GeneratorDatasetOp::Dataset will not be "
    "optimized because the dataset does not implement the AsGraphDefInternal() method needed to apply "
    "optimizations.",
    "E0000 00:00:1796395869.123456   16870 util.cc:131] oneDNN supports DT_HALF only on platforms with AVX-512. "
    "Falling back to the default Eigen-based implementation if present.",
]
KEPT = [
    "W0000 00:00:1796395868.9   16870 dataset.cc:997] Another tf.data warning, which stays.",
    "E0000 00:00:1796395869.2   16870 util.cc:131] Another C++ error, which stays.",
    "epoch 1/1 loss=0.5",
]


@pytest.mark.parametrize(
    ("line", "noise"), [(line, True) for line in HARMLESS] + [(line, False) for line in KEPT]
)
def test_only_the_known_harmless_lines_are_noise(line: str, noise: bool) -> None:
    assert is_noise(line + "\n") is noise


# regression: W0000 dataset.cc and E0000 ... DT_HALF lines in the example's output
@pytest.mark.parametrize("verbose", [False, True])
def test_a_run_leaves_them_out_and_verbose_keeps_them(
    run_cli: Run, scripted_job: Scripted, monkeypatch: pytest.MonkeyPatch, verbose: bool
) -> None:
    monkeypatch.delenv(VERBOSE_ENV, raising=False)  # submit -v sets it for the launcher; undone after
    job = scripted_job(f"for line in {[*HARMLESS, *KEPT]!r}:\n    print(line)\n")
    result = run_cli("submit", str(job), *(["-v"] if verbose else []))
    shown = [line.removeprefix("[chief-0] ") for line in result.err.splitlines()]
    assert result.code == 0, result.err
    assert all(line in shown for line in KEPT)
    assert all((line in shown) is verbose for line in HARMLESS)
