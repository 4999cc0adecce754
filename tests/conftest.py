"""Fixtures shared by every test: the repository's paths and a clean cache per test."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_JOB = REPO / "examples" / "binary_classifier" / "job.yaml"


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bundles and local runs go to a fresh cache, never the developer's home."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def example_job() -> Path:
    return EXAMPLE_JOB
