"""``cloudtrain check`` for the local provider, the line format, and a provider without checks.

The cloud providers' checks run against the loopback clouds in
``tests/cloudtrain/providers/test_setup_checks.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cloudtrain.providers.local.job import local_home

Run = Callable[..., Any]


def test_local_check_without_a_job_is_all_ok(
    run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("check")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert [row.split()[:2] for row in lines[:-1]] == [["ok", "python"], ["ok", "runtime"], ["ok", "outputs"]]
    assert f"{tmp_path / 'outputs'}: " in lines[2]  # the outputs root, resolved from here
    assert lines[-1] == "0 failed, 0 warnings, 3 ok"


def test_local_check_of_a_job_uses_its_storage_root(run_cli: Run, example_job: Path) -> None:
    code, out, _ = run_cli("check", str(example_job), "--json")
    rows = {row["check"]: row for row in json.loads(out)}
    assert code == 0
    assert rows["outputs"]["detail"].startswith(f"{example_job.parent / 'outputs'}: ")


def test_a_bucket_root_is_checked_where_the_stand_in_buckets_are(run_cli: Run) -> None:
    _, out, _ = run_cli("check", "--set", "storage.root=gs://my-bucket/x", "--json")
    rows = {row["check"]: row for row in json.loads(out)}
    assert rows["outputs"]["detail"].startswith(f"{local_home() / 'buckets'}: ")


def test_an_unmet_requirement_fails_the_runtime_line_and_the_exit_code(
    run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "requirements.txt").write_text("no-such-package-for-cloudtrain==1.0\n")
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli("check", "--json")
    runtime = next(row for row in json.loads(out) if row["check"] == "runtime")
    assert code == 1
    assert runtime["status"] == "fail"
    assert "no-such-package-for-cloudtrain" in runtime["fix"]
    assert "pip install -r" in runtime["fix"]


def test_a_provider_without_checks_says_so(run_cli: Run, toycloud: Path) -> None:
    code, out, _ = run_cli("check", "--provider", "toycloud")
    assert code == 0
    assert out.splitlines()[0].split(maxsplit=2)[:2] == ["ok", "setup"]
    assert "has no set-up checks" in out


def test_an_unknown_profile_is_an_input_error(run_cli: Run) -> None:
    result = run_cli("check", "--profile", "nope")
    assert result.code == 2
    assert result.errors and "nope" in result.errors[0]
