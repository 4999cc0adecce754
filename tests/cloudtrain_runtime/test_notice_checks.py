"""When the replicas act on a notice: at a checked step (its backup), or at an epoch's end (the epoch's own)."""

from __future__ import annotations

import pytest

from cloudtrain_runtime.errors import Reclaimed
from cloudtrain_runtime.notice import Agreement, Notice, SaveOnNotice


def _watcher(noticed: bool, saved: list[int], said: list[str]) -> SaveOnNotice:
    notice = Notice(24.0, said.append, clock=lambda: 100.0)
    notice.received_at = 99.0 if noticed else None
    watcher = SaveOnNotice(
        notice, Agreement(None, None, 1), saved.append, said.append, "keras 3 on tensorflow"
    )
    watcher.on_epoch_begin(1)
    return watcher


def test_a_checked_step_after_the_notice_backs_up_that_step_and_exits_75() -> None:
    saved: list[int] = []
    said: list[str] = []
    with pytest.raises(Reclaimed, match="resumes at epoch 2, batch 5"):
        _watcher(True, saved, said).on_train_batch_end(3)
    assert saved == [4]
    assert said == ["backup on notice after epoch 1 and 4 batches written in 0.00s (budget 24s)"]


def test_an_epoch_end_after_the_notice_ends_the_attempt_on_the_epochs_own_backup() -> None:
    saved: list[int] = []
    said: list[str] = []
    watcher = _watcher(True, saved, said)
    watcher.every = 1000  # steps so short that no step is checked before the epoch ends
    watcher.on_train_batch_end(3)
    with pytest.raises(Reclaimed, match="resumes at epoch 3"):
        watcher.on_epoch_end(1)
    assert saved == []  # the backup callback, before this one, wrote the epoch's backup
    assert said == ["backup on notice: epoch 2's own, written at its end (budget 24s)"]


def test_without_a_notice_steps_and_epochs_go_on() -> None:
    saved: list[int] = []
    watcher = _watcher(False, saved, [])
    watcher.on_train_batch_end(3)
    watcher.on_epoch_end(1)
    assert saved == []
