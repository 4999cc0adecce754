"""``cloudtrain cache``: what the cache holds, and ``clean`` removing what may go and nothing else."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cloudtrain.api import bundle_cache
from cloudtrain.providers import local
from tests.cloudtrain.cli.conftest import Scripted
from tests.conftest import Result

Run = Callable[..., Result]
HOUR = 3600


def _age(path: Path, seconds: float) -> None:
    """Make ``path`` (and everything under it) look written ``seconds`` ago."""
    then = time.time() - seconds
    for inner in [path, *path.rglob("*")]:
        os.utime(inner, (then, then))


def _packed(run_cli: Run, job: Path, times: int) -> None:
    """``times`` dry runs, the code changed before each: one bundle each."""
    for _ in range(times):
        (job.parent / "trainer" / "weights.bin").write_bytes(os.urandom(20_000))  # does not compress
        assert run_cli("submit", str(job), "--dry-run").code == 0


# regression: three dry runs of a changed folder left three bundles, with no way to see or clean them
def test_cache_shows_the_bundles_and_clean_removes_them(run_cli: Run, scripted_job: Scripted) -> None:
    job = scripted_job("print('fine')\n")
    _packed(run_cli, job, times=3)
    shown = {part["name"]: part for part in json.loads(run_cli("cache", "--json").out)}
    assert shown["bundles"]["bundles"] == 3 and shown["bundles"]["bytes"] > 3 * 20_000
    _age(bundle_cache(), HOUR)

    cleaned = run_cli("cache", "clean")

    assert cleaned.code == 0 and cleaned.out.startswith("Removed 6 item(s)")  # 3 bundles, 3 index records
    assert list(bundle_cache().glob("*.tar.gz")) == []
    assert run_cli("submit", str(job), "--dry-run").code == 0  # packed again when needed


def test_clean_keeps_a_running_run_and_what_is_newer_than_asked(
    run_cli: Run, scripted_job: Scripted, tmp_path: Path
) -> None:
    ended = run_cli("submit", str(scripted_job("print('fine')\n"))).out.strip()
    running = run_cli("submit", str(scripted_job("import time\ntime.sleep(600)\n")), "--no-wait").out.strip()
    local.provider.attach(running).wait(poll_s=0.1, until=lambda now: now.state == "running")
    runs = tmp_path / "home" / "runs"
    _age(runs / ended.removeprefix("local:"), 8 * 24 * HOUR)

    recent = json.loads(run_cli("cache", "clean", "--older-than", "30d", "--dry-run", "--json").out)
    cleaned = json.loads(run_cli("cache", "clean", "--older-than", "7d", "--json").out)

    assert recent["removed"] == [] and recent["dry_run"] is True
    assert [Path(item["path"]).name for item in cleaned["removed"] if "runs" in item["path"]] == [
        ended.removeprefix("local:")
    ]
    kept = {Path(item["path"]).name: item["why"] for item in cleaned["kept"]}
    assert kept[running.removeprefix("local:")] == "it is running"
    assert (runs / running.removeprefix("local:")).is_dir() and not (
        runs / ended.removeprefix("local:")
    ).exists()


def test_stand_in_buckets_go_only_when_asked(
    run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path / "home"))
    buckets = tmp_path / "home" / "buckets" / "my-bucket"
    buckets.mkdir(parents=True)
    (buckets / "model.keras").write_bytes(b"0" * 1000)
    assert json.loads(run_cli("cache", "clean", "--json").out)["removed"] == []
    assert json.loads(run_cli("cache", "clean", "--buckets", "--json").out)["bytes"] == 1000
    assert not buckets.exists()


def test_a_bad_age_is_a_one_line_error(run_cli: Run) -> None:
    result = run_cli("cache", "clean", "--older-than", "a week")
    assert (result.code, result.errors) == (
        2,
        ["--older-than 'a week' is not a duration. Use one like 30m, 12h or 7d."],
    )
