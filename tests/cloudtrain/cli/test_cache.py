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


def _outside(tmp_path: Path) -> Path:
    """A folder of the user's outside the cache, with a file that must survive every clean."""
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "thesis.json").write_text("{}")
    _age(outside, 30 * 24 * HOUR)
    return outside


def _link(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target, target_is_directory=target.is_dir())
    os.utime(link, (time.time() - HOUR, time.time() - HOUR), follow_symlinks=False)


# regression: with bundles/index a symbolic link to another folder, clean deleted that folder's files
@pytest.mark.parametrize(
    "where",
    [
        lambda: bundle_cache() / "index",  # the index
        lambda: bundle_cache() / "old.tar.gz",  # a bundle
        bundle_cache,  # the bundles folder itself
    ],
)
def test_clean_removes_a_link_in_the_bundles_never_its_target(
    run_cli: Run, tmp_path: Path, where: Callable[[], Path]
) -> None:
    outside = _outside(tmp_path)
    link = where()
    _link(link, outside)

    cleaned = json.loads(run_cli("cache", "clean", "--json").out)

    assert (outside / "thesis.json").read_text() == "{}"
    assert not link.is_symlink() and not link.exists()
    assert str(link) in [item["path"] for item in cleaned["removed"]]


# regression: --buckets emptied the target of a symlinked buckets/
@pytest.mark.parametrize("linked", ["buckets", "buckets/my-bucket"])
def test_clean_buckets_removes_the_link_not_the_buckets_behind_it(
    run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, linked: str
) -> None:
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path / "home"))
    outside = _outside(tmp_path)
    _link(tmp_path / "home" / linked, outside)

    cleaned = run_cli("cache", "clean", "--buckets")

    assert cleaned.code == 0, cleaned.err
    assert (outside / "thesis.json").read_text() == "{}"
    assert not (tmp_path / "home" / linked).is_symlink()


def test_a_linked_runs_folder_is_kept_whole_and_says_why(
    run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path / "home"))
    outside = _outside(tmp_path)
    _link(tmp_path / "home" / "runs", outside)

    cleaned = json.loads(run_cli("cache", "clean", "--json").out)

    assert (outside / "thesis.json").exists() and (tmp_path / "home" / "runs").is_symlink()
    assert cleaned["kept"] == [
        {
            "path": str(tmp_path / "home" / "runs"),
            "why": f"a symbolic link out of the cache, not followed ({outside}); its runs are not judged through it",
        }
    ]


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("", "--older-than '' is not a duration. Use one like 30m, 12h or 7d."),  # an unset $AGE
        ("  ", "--older-than '  ' is not a duration. Use one like 30m, 12h or 7d."),
        ("7", "--older-than '7' is not a duration. Use one like 30m, 12h or 7d."),  # no unit
        (
            "99999999999999d",
            "--older-than '99999999999999d' is longer than 100 years. Use a shorter duration like 30d.",
        ),
        ("1000000d", "--older-than '1000000d' is longer than 100 years. Use a shorter duration like 30d."),
    ],
)
def test_an_empty_or_unbounded_age_removes_nothing(run_cli: Run, value: str, error: str) -> None:
    # regression: --older-than "" meant no cutoff and removed every bundle and ended run
    bundle = bundle_cache() / "0123456789abcdef.tar.gz"
    bundle.parent.mkdir(parents=True, exist_ok=True)
    bundle.write_bytes(b"0")
    _age(bundle, 30 * 24 * HOUR)
    result = run_cli("cache", "clean", "--older-than", value)
    assert (result.code, result.errors) == (2, [error])
    assert bundle.exists()
