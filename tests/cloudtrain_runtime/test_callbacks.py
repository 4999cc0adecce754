"""Fault specs and progress lines, driven through their hooks."""

from __future__ import annotations

import pytest

from cloudtrain_runtime import callbacks
from cloudtrain_runtime.errors import ConfigError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", None),  # no fault planned
        ("worker:1@epoch:2", callbacks.Fault("worker", 1, "epoch", 2)),
        ("chief:0@step:10", callbacks.Fault("chief", 0, "step", 10)),
    ],
)
def test_parse_fault(text: str, expected: callbacks.Fault | None) -> None:
    assert callbacks.parse_fault(text) == expected


@pytest.mark.parametrize("text", ["worker@epoch:2", "worker:1@minute:2", "ps:0@epoch:1"])
def test_bad_fault_spec_shows_the_format(text: str) -> None:
    with pytest.raises(ConfigError, match="worker:1@epoch:2"):
        callbacks.parse_fault(text)


def test_progress_prints_one_line_per_epoch_and_records_the_resumed_epoch() -> None:
    lines: list[str] = []
    progress = callbacks.Progress(4, lines.append)
    for epoch, loss in ((2, 0.5), (3, 0.25)):
        progress.on_epoch_begin(epoch)
        progress.on_epoch_end(epoch, {"loss": loss, "val_binary_accuracy": 0.9375})
    assert lines == [
        "epoch 3/4 loss=0.5000 val_binary_accuracy=0.9375",
        "epoch 4/4 loss=0.2500 val_binary_accuracy=0.9375",
    ]
    assert progress.resumed_from_epoch == 2
