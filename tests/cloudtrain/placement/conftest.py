"""A copy of the bundled examples (the placement example reads the binary classifier's code) and a private local home."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

# The clouds' loopback fakes, as the provider tests have them: a placement talks to every provider.
from tests.cloudtrain.providers.conftest import aws, fake_gcs, fake_vertex, google_fakes, loopback_aws
from tests.cloudtrain.providers.test_local_launcher import stop_runs

__all__ = ["aws", "fake_gcs", "fake_vertex", "google_fakes", "loopback_aws"]

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.fixture
def placed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The placement example's job.yaml, in a copy of the examples; whatever a failing test left running is cancelled."""
    for name in ("placement", "binary_classifier"):
        shutil.copytree(EXAMPLES / name, tmp_path / name, ignore=shutil.ignore_patterns("outputs"))
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path / "placement")
    yield tmp_path / "placement" / "job.yaml"
    stop_runs(tmp_path / "home")
