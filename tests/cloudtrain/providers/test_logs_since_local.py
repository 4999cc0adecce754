"""``logs --since/--tail`` on a local run, read from the run folder's real ``output.log``.

A local log line carries no time, so ``since`` goes by the file's last write (set here
with ``os.utime``, as a run that ended at that time leaves it).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cloudtrain.outputs import Outputs
from cloudtrain.provider.follow import read_until_done
from cloudtrain.providers.local.job import LocalJob
from cloudtrain.providers.local.records import write_record
from tests.conftest import Result

RUN = "demo-20260101-120000-0a1b"
ENDED = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
OUTPUTS = dict.fromkeys(Outputs.names(), "/nowhere")
REQUEST = {"replicas": [{"name": "chief-0"}], "outputs": OUTPUTS, "restarts": {}}
LINES = ["[chief-0] epoch 1", "[worker-0] epoch 1", "[chief-0] saved"]


@pytest.fixture
def ended_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run that succeeded (its request, status and log), its log last written at ``ENDED``."""
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path))
    folder = tmp_path / "runs" / RUN
    folder.mkdir(parents=True)
    write_record(folder / "request.json", REQUEST)
    write_record(folder / "status.json", {"state": "succeeded", "provider_state": "SUCCEEDED", "detail": ""})
    log = folder / "output.log"
    log.write_text("".join(f"{line}\n" for line in LINES), encoding="utf-8")
    os.utime(log, (ENDED.timestamp(), ENDED.timestamp()))
    return folder


@pytest.mark.parametrize(
    ("since", "tail", "expected"),
    [
        (None, None, LINES),  # everything
        (ENDED - timedelta(minutes=1), None, LINES),  # written since then: shown whole
        (ENDED + timedelta(minutes=1), None, []),  # last written before then: nothing
        (None, 2, LINES[-2:]),  # the last two
        (None, 0, []),  # none at all
        (ENDED - timedelta(minutes=1), 1, LINES[-1:]),  # both
    ],
)
def test_since_and_tail(
    ended_run: Path, since: datetime | None, tail: int | None, expected: list[str]
) -> None:
    assert list(LocalJob(f"local:{RUN}").logs(since=since, tail=tail)) == expected


def test_tail_with_follow_prints_the_last_lines_then_the_rest(ended_run: Path) -> None:
    with (ended_run / "output.log").open("a", encoding="utf-8") as log:
        log.write("[chief-0] no newline yet")
    followed = list(LocalJob(f"local:{RUN}").logs(follow=True, tail=1))
    assert followed == ["[chief-0] saved", "[chief-0] no newline yet"]


def test_tail_applies_to_the_first_read_only() -> None:
    reads, states = iter([["a", "b", "c"], ["d", "e"]]), iter([False, True])
    lines = read_until_done(
        lambda: next(reads), follow=True, is_done=lambda: next(states), sleep=lambda _: None, poll_s=1, tail=1
    )
    assert list(lines) == ["c", "d", "e"]  # like kubectl logs --tail 1 --follow


def test_the_cli(ended_run: Path, run_cli: Callable[..., Result]) -> None:
    after = run_cli("logs", f"local:{RUN}", "--since", (ENDED + timedelta(seconds=1)).isoformat())
    before = run_cli("logs", f"local:{RUN}", "--since", "2026-12-03T11:59:00+00:00", "--tail", "1")
    assert (after.code, after.out, after.err) == (0, "", "")
    assert (before.code, before.out) == (0, "[chief-0] saved\n")
