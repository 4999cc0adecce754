"""Local replica logs without TensorFlow's start-up lines, and with all of them under ``submit -v``.

A fast run whose replica prints TensorFlow's real start-up lines (as captured from
TensorFlow 2.21 here) among the user's own warnings, and one real TensorFlow run
through the CLI each way (marked multiprocess: each imports TensorFlow).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cloudtrain import api
from cloudtrain.api import plan
from cloudtrain.providers import local
from cloudtrain.providers.local.launcher import VERBOSE_ENV, Launcher, RunFiles, is_start_up_noise
from cloudtrain.spec import JobSpec
from tests.cloudtrain.providers.test_local_launcher import stop_runs

pytestmark = pytest.mark.timeout(300)

BANNER = [
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "I0000 00:00:1796327994.474821   16293 port.cc:153] oneDNN custom operations are on. You may see "
    "slightly different numerical results due to floating-point round-off errors from different "
    "computation orders. To turn them off, set the environment variable `TF_ENABLE_ONEDNN_OPTS=0`.",
    "I0000 00:00:1796327994.860043   16293 cpu_feature_guard.cc:227] This TensorFlow binary is optimized "
    "to use available CPU instructions in performance-critical operations.",
    "To enable the following instructions: AVX2 AVX512F AVX512_VNNI AVX512_BF16 FMA, in other operations, "
    "rebuild TensorFlow with the appropriate compiler flags.",
    # bash -m without a terminal: the SageMaker DLC's ENTRYPOINT, emulated with image: auto
    "bash: cannot set terminal process group (-1): Inappropriate ioctl for device",
    "bash: no job control in this shell",
]
KEPT = [
    "W0000 00:00:1796327994.9   16293 gpu_device.cc:2342] Cannot dlopen some GPU libraries.",  # a C++ warning
    "E0000 00:00:1796327995.1   16293 cuda_dnn.cc:8310] Unable to register cuDNN factory",  # a C++ error
    "I1203 19:58:00.123456  16293 task.py:12] the user's absl-py INFO line",  # Python, not C++
    "WARNING:tensorflow:the user's own warning",
    "epoch 1/1 loss=0.5",
]


@pytest.mark.parametrize(
    ("line", "noise"),
    [(line, True) for line in BANNER] + [(line, False) for line in KEPT],
)
def test_only_tensorflows_start_up_lines_are_noise(line: str, noise: bool) -> None:
    assert is_start_up_noise(line + "\n") is noise


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    yield tmp_path / "home"
    stop_runs(tmp_path / "home")


def noisy_run(tmp_path: Path, *, verbose: bool) -> list[str]:
    """Run one replica that prints BANNER, KEPT and its TF_CPP_MIN_LOG_LEVEL in the launcher; its log lines."""
    script = tmp_path / "replica.py"
    printed = [*BANNER, *KEPT, *BANNER]  # TensorFlow prints its banner twice
    script.write_text(
        f"import os\nfor line in {printed!r}:\n    print(line)\n"
        "print('level', os.environ.get('TF_CPP_MIN_LOG_LEVEL'))\n"
    )
    spec = JobSpec(
        name="quiet-test",
        code={"module": "trainer.task", "source_dir": str(tmp_path)},
        storage={"root": str(tmp_path / "outputs")},
    )
    planned, packed = api.pack_code(plan(spec, "local").with_run("r1"))
    request = local.render(planned)
    request["replicas"][0]["argv"] = [sys.executable, str(script)]
    job = local.provider.submit(planned, request, packed)
    job.wait(poll_s=0.2)
    files = RunFiles(job.run_dir)  # run the same request again, in this process, to choose verbose
    (job.run_dir / "output.log").write_text("")
    Launcher(files, verbose=verbose).run()
    files.close()
    return [line.removeprefix("[chief-0] ") for line in (job.run_dir / "output.log").read_text().splitlines()]


def test_by_default_the_banner_is_gone_and_everything_else_kept(tmp_path: Path, home: Path) -> None:
    lines = noisy_run(tmp_path, verbose=False)
    assert lines[: len(KEPT)] == KEPT
    assert "level 1" in lines  # TensorFlow's own INFO filter, where the user set none
    assert not any(line in lines for line in BANNER)


def test_verbose_keeps_every_line_and_tensorflows_default_level(tmp_path: Path, home: Path) -> None:
    lines = noisy_run(tmp_path, verbose=True)
    assert lines[: 2 * len(BANNER) + len(KEPT)] == [*BANNER, *KEPT, *BANNER]
    assert "level None" in lines


def test_the_users_own_level_wins(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")
    assert "level 0" in noisy_run(tmp_path, verbose=False)


@pytest.fixture
def project(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The providers' ``project`` (conftest), with neither log-level setting of the user's."""
    for name in ("TF_CPP_MIN_LOG_LEVEL", VERBOSE_ENV):
        monkeypatch.delenv(name, raising=False)
    return project


@pytest.mark.multiprocess
def test_a_real_run_hides_the_banner_and_submit_v_shows_it(project: Path) -> None:
    def submit(*flags: str) -> str:
        command = [sys.executable, "-m", "cloudtrain", "submit", str(project / "job.yaml"), *flags]
        one_host = ["--set", "resources.hosts=1", "--set", "training.epochs=1"]
        done = subprocess.run([*command, *one_host], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stderr  # piped: stdout holds the job ID alone, the followed log is on stderr

    quiet, verbose = submit(), submit("-v")
    assert "oneDNN custom operations are on" not in quiet
    assert "absl::InitializeLog()" not in quiet
    assert "[chief-0] epoch 1/1" in quiet
    assert verbose.count("port.cc:") >= 1
    assert "absl::InitializeLog()" in verbose
    assert "[chief-0] epoch 1/1" in verbose
