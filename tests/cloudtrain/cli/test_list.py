"""``cloudtrain list`` and finding a job by its run id, name or short id, over real local run folders.

Each run folder holds the records the launcher writes (``request.json``, ``launcher.pid``,
``status.json``); their modification times are the run's times, set here with ``os.utime``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cloudtrain.outputs import Outputs
from cloudtrain.providers.local.records import write_record
from tests.conftest import Result

SUBMITTED = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
REQUEST = {
    "replicas": [{"name": "chief-0"}],
    "outputs": dict.fromkeys(Outputs.names(), "/nowhere"),
    "restarts": {},
}
# name -> (state, minutes after SUBMITTED it was submitted); the launcher pid file is a fake pid.
RUNS = {
    "demo-20261203-120000-0a1b": ("succeeded", 0),
    "demo-20261203-130000-0c1d": ("failed", 60),
    "other-20261203-140000-0e1f": ("succeeded", 120),
}
# name -> its run: the two demo jobs are two attempts of one run, as --run-id makes them.
RUN_IDS = {
    "demo-20261203-120000-0a1b": "nightly-42",
    "demo-20261203-130000-0c1d": "nightly-42",
    "other-20261203-140000-0e1f": "sweep_7-t1",
}


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Three ended local runs: two of job ``demo``, one of ``other``, each started 1 min and ended 11 min in."""
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path))
    for name, (state, minutes) in RUNS.items():
        folder = tmp_path / "runs" / name
        folder.mkdir(parents=True)
        write_record(folder / "request.json", {**REQUEST, "run_id": RUN_IDS[name]})
        write_record(folder / "launcher.pid", {"pid": 2})
        write_record(folder / "status.json", {"state": state, "provider_state": state.upper(), "detail": ""})
        submitted = SUBMITTED + timedelta(minutes=minutes)
        for record, offset in (("request.json", 0), ("launcher.pid", 1), ("status.json", 11)):
            stamp = (submitted + timedelta(minutes=offset)).timestamp()
            os.utime(folder / record, (stamp, stamp))
    (tmp_path / "runs" / "not-a-run").mkdir()  # not named as submit names runs: not listed
    return tmp_path


def test_list_json_is_newest_first_with_times(run_cli: Callable[..., Result], runs: Path) -> None:
    result = run_cli("list", "--provider", "local", "--json")
    assert result.code == 0, result.err
    jobs = json.loads(result.out)
    assert [job["short_id"] for job in jobs] == list(reversed(RUNS))
    newest = jobs[0]
    assert newest["id"] == "local:other-20261203-140000-0e1f"
    assert (newest["name"], newest["provider"], newest["state"]) == ("other", "local", "succeeded")
    assert newest["created"] == "2026-12-03T14:00:00+00:00"
    assert newest["started"] == "2026-12-03T14:01:00+00:00"
    assert newest["ended"] == "2026-12-03T14:11:00+00:00"
    assert newest["duration_s"] == 600.0


def test_list_table_drops_low_priority_columns_when_narrow(
    run_cli: Callable[..., Result], runs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "180")
    wide = run_cli("list", "--provider", "local").out.splitlines()
    header = [
        "id",
        "run",
        "name",
        "provider",
        "shape",
        "state",
        "progress",
        "created",
        "started",
        "duration",
        "estimate",
        "cost",
    ]
    assert wide[0].split() == header
    assert "10.0m" in wide[2] and wide[2].startswith("other-20261203-140000-0e1f")
    assert "1 × process" in wide[2]
    monkeypatch.setenv("COLUMNS", "50")
    narrow = run_cli("list", "--provider", "local").out.splitlines()
    assert narrow[0].split() == ["id", "provider", "state"]
    assert all(len(line) <= 50 for line in narrow)


def test_list_limits_to_the_newest_unless_all(
    run_cli: Callable[..., Result], runs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("cloudtrain.cli.list_command.DEFAULT_LIMIT", 2)
    assert len(json.loads(run_cli("list", "--json").out)) == 2
    assert len(json.loads(run_cli("list", "--all", "--json").out)) == 3


def test_list_skips_the_clouds_not_set_up_here_and_says_how(
    run_cli: Callable[..., Result], runs: Path
) -> None:
    result = run_cli("list", "--json")
    assert result.code == 0, result.err
    assert len(json.loads(result.out)) == len(RUNS)
    assert "vertex: skipped: " in result.err and "GOOGLE_CLOUD_PROJECT" in result.err
    assert "sagemaker: skipped: " in result.err and "aws configure" in result.err


def test_local_jobs_are_not_billed_and_carry_no_estimate(run_cli: Callable[..., Result], runs: Path) -> None:
    newest = json.loads(run_cli("list", "--provider", "local", "--json").out)[0]
    assert (newest["billed"], newest["estimate"], newest["cost"]) == (False, None, None)
    assert newest["shape"] == "1 × process"
    lines = run_cli("status", "other").out.splitlines()
    fields = {
        line.split()[0]: " ".join(line.split()[1:]) for line in lines[1:] if line.strip() and "─" not in line
    }
    assert (fields["estimate"], fields["cost"]) == ("-", "not billed")


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("other", "local:other-20261203-140000-0e1f"),  # the job name
        ("0c1d", "local:demo-20261203-130000-0c1d"),  # a suffix of the short id
        ("demo-20261203-12", "local:demo-20261203-120000-0a1b"),  # a prefix
        ("demo-20261203-120000-0a1b", "local:demo-20261203-120000-0a1b"),  # the whole short id
        ("local:demo-20261203-120000-0a1b", "local:demo-20261203-120000-0a1b"),  # the full ID
    ],
)
def test_status_finds_a_job_by_what_list_shows(
    run_cli: Callable[..., Result], runs: Path, reference: str, expected: str
) -> None:
    result = run_cli("status", reference, "--json")
    assert result.code == 0, result.err
    shown = json.loads(result.out)
    assert shown["id"] == expected
    assert shown["state"] == RUNS[expected.removeprefix("local:")][0]
    assert shown["duration_s"] == 600.0


def test_status_shows_the_times_under_the_state(run_cli: Callable[..., Result], runs: Path) -> None:
    lines = run_cli("status", "other").out.splitlines()
    assert lines[0] == "succeeded (SUCCEEDED)"
    fields = {line.split()[0]: line.split()[1:] for line in lines[1:] if line.strip() and "─" not in line}
    assert fields["id"] == ["local:other-20261203-140000-0e1f"]
    assert fields["duration"] == ["10.0m"]


@pytest.mark.parametrize(("reference", "count"), [("demo", 2), ("demo-2026", 2)])
def test_an_ambiguous_reference_exits_2_listing_the_candidates(
    run_cli: Callable[..., Result], runs: Path, reference: str, count: int
) -> None:
    for command in ("status", "logs", "cancel", "wait"):
        result = run_cli(command, reference)
        assert result.code == 2
        assert f"matches {count} jobs" in result.err
        assert result.err.count("  local:demo-") == count
        assert "Traceback" not in result.err


def test_an_unknown_reference_exits_2(run_cli: Callable[..., Result], runs: Path) -> None:
    result = run_cli("status", "nothing-like-it")
    assert result.code == 2
    assert "No job or run matches 'nothing-like-it'" in result.err


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        (
            "nightly-42",
            "demo-20261203-130000-0c1d",
        ),  # regression: a --run-id "matched no job"; its newest attempt
        ("local:nightly-42", "demo-20261203-130000-0c1d"),  # a local job ID names its run too
        ("sweep_7-t1", "other-20261203-140000-0e1f"),  # a sweep trial's run id, as status --json lists it
        ("local:sweep_7-t1", "other-20261203-140000-0e1f"),  # regression: "No local run"
    ],
)
@pytest.mark.parametrize("command", ["status", "logs"])  # cancel and wait find a job as these do
def test_the_job_commands_take_a_run_id(
    run_cli: Callable[..., Result], runs: Path, reference: str, expected: str, command: str
) -> None:
    (runs / "runs" / expected / "output.log").write_text(f"[chief-0] I am {expected}\n")
    result = run_cli(command, reference)
    assert result.code == 0, result.err
    shown = result.out + result.err
    assert expected in shown and all(other not in shown for other in RUNS if other != expected)


def test_list_and_status_show_the_run(run_cli: Callable[..., Result], runs: Path) -> None:
    jobs = json.loads(run_cli("list", "--provider", "local", "--json").out)
    assert {job["short_id"]: job["run"] for job in jobs} == RUN_IDS
    lines = run_cli("status", "nightly-42").out.splitlines()
    assert any(line.split()[:2] == ["run", "nightly-42"] for line in lines)


@pytest.mark.parametrize(
    "reference", ["nothing-like-it", "local:nothing-like-it", "local:nothing_like_it", "local-sweep:nope"]
)
@pytest.mark.parametrize("command", ["status", "logs", "cancel", "wait"])
def test_no_such_job_is_one_exit_code_whatever_the_prefix(
    run_cli: Callable[..., Result], runs: Path, reference: str, command: str
) -> None:
    # regression: "No such job" exited 1 with a local: prefix and 2 without
    result = run_cli(command, reference)
    assert result.code == 2 and len(result.errors) == 1 and "Traceback" not in result.err
    assert "`cloudtrain list" in result.errors[0]


@pytest.mark.parametrize("reference", ["", " ", "\t\n"])
@pytest.mark.parametrize("command", ["status", "logs", "cancel", "wait"])
def test_an_empty_or_blank_reference_names_no_job(
    run_cli: Callable[..., Result], runs: Path, command: str, reference: str
) -> None:
    # regression: every short id starts with "", so `cancel "$JOB"` with JOB unset took the only match
    for name in list(RUNS)[1:]:
        for path in sorted((runs / "runs" / name).iterdir()):
            path.unlink()
        (runs / "runs" / name).rmdir()
    result = run_cli(command, reference)
    assert (result.code, result.out) == (2, "")
    assert result.errors == [
        f"No job given: the job reference {reference!r} is empty. Give its full ID, its name or part "
        "of its id as `cloudtrain list` shows it (is the shell variable you passed set?)."
    ]
