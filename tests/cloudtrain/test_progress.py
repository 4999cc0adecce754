"""Progress reports: summed across upload threads, one call at a time, and nothing when not asked for."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from cloudtrain.progress import Progress, reporter
from cloudtrain.providers.local import run

THREADS = 8
CHUNKS = 25


def test_reports_from_many_threads_add_up_one_call_at_a_time() -> None:
    """s3transfer calls back from its worker threads; the caller's callback must not be entered twice."""
    seen: list[Progress] = []
    inside = 0
    overlapped = False

    def callback(event: Progress) -> None:
        nonlocal inside, overlapped
        inside += 1
        overlapped = overlapped or inside > 1
        time.sleep(0.0005)  # long enough for another thread to arrive if nothing holds it back
        seen.append(event)
        inside -= 1

    advance = reporter(callback, step="upload", name="b.tar.gz", total=THREADS * CHUNKS * 10)
    workers = [threading.Thread(target=lambda: [advance(10) for _ in range(CHUNKS)]) for _ in range(THREADS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not overlapped
    assert [event.done for event in seen] == list(range(0, THREADS * CHUNKS * 10 + 1, 10))
    assert seen[-1].fraction == 1.0


def test_no_callback_no_report() -> None:
    advance = reporter(None, step="upload", name="b.tar.gz", total=10)
    advance(10)  # nothing to call, nothing fails


def test_the_local_upload_reports_each_byte_it_copies(tmp_path: Path) -> None:
    source = tmp_path / "0123abcd.tar.gz"
    source.write_bytes(bytes(range(256)) * 1024)
    target = tmp_path / "bucket" / "code" / source.name
    seen: list[Progress] = []
    run._upload(source, target, seen.append)
    assert target.read_bytes() == source.read_bytes()
    assert (seen[0].done, seen[-1].done, seen[-1].total) == (0, 262144, 262144)
    run._upload(source, target, seen.append)  # already there: nothing copied, nothing reported
    assert seen[-1].done == 262144 and len([e for e in seen if e.done == 0]) == 1
