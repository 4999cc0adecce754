"""The CLI's upload bar: drawn on stderr from the library's progress reports, for large uploads only."""

from __future__ import annotations

import pytest

from cloudtrain.cli.progress import PROGRESS_MIN_BYTES, UploadBars
from cloudtrain.progress import Progress

LARGE = 2 * PROGRESS_MIN_BYTES


def upload(name: str, total: int, *dones: int) -> list[Progress]:
    return [Progress("upload", name, done=done, total=total) for done in dones]


def test_a_large_upload_is_drawn_on_stderr_and_closed_when_complete(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with UploadBars() as draw:
        for event in upload("3f2a.tar.gz", LARGE, 0, LARGE // 2, LARGE):
            draw(event)
        assert repr(draw) == f"UploadBars(min_bytes={PROGRESS_MIN_BYTES}, drawing=False)"
    out, err = capsys.readouterr()
    assert out == ""
    assert "Uploading 3f2a.tar.gz" in err
    assert "16.8/16.8 MB" in err  # the bar's last state: all of it sent


def test_a_small_upload_draws_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with UploadBars() as draw:
        for event in upload("3f2a.tar.gz", PROGRESS_MIN_BYTES - 1, 0, PROGRESS_MIN_BYTES - 1):
            draw(event)
    assert capsys.readouterr() == ("", "")


def test_a_failed_upload_leaves_no_bar_running(capsys: pytest.CaptureFixture[str]) -> None:
    draw = UploadBars()
    with pytest.raises(ConnectionError), draw:
        for event in upload("3f2a.tar.gz", LARGE, 0, LARGE // 4):
            draw(event)
        raise ConnectionError("reset by peer")
    assert repr(draw).endswith("drawing=False)")
    assert "Uploading 3f2a.tar.gz" in capsys.readouterr().err
