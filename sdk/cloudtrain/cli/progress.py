"""The upload progress bar of ``cloudtrain submit``: drawn here, from what the library reports.

The library only calls a ``progress`` callback (``cloudtrain.progress``); showing it is
the CLI's choice, like every other line it prints.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cloudtrain.progress import Progress

# Below this size an upload takes a moment and a progress bar would only flicker.
PROGRESS_MIN_BYTES = 8 * 1024 * 1024
# The steps drawn (``cloudtrain.progress.Progress.step``), each with its bar's verb.
VERBS = {"upload": "Uploading", "copy": "Copying the backup"}


class UploadBars:
    """A ``progress`` callback that draws each upload (or backup copy) of ``min_bytes`` or more as a rich bar on stderr.

    A bar starts with an upload's first report and stops when it is complete; used as a
    context manager, a bar left open by a failed upload is closed too. Reports arrive one
    at a time (``cloudtrain.progress.reporter`` serialises them), so no lock is needed here.

    Example:
    >>> from cloudtrain.progress import Progress
    >>> with UploadBars() as draw:
    ...     draw(Progress("upload", "3f2a.tar.gz", done=0, total=1024))  # small: nothing drawn
    """

    def __init__(self, min_bytes: int = PROGRESS_MIN_BYTES) -> None:
        self.min_bytes = min_bytes
        self._bar: Any = None  # rich.progress.Progress while an upload is drawn
        self._task: Any = None

    def __call__(self, event: Progress) -> None:
        if event.step not in VERBS or event.total < self.min_bytes:
            return
        if self._bar is None:
            self._start(event)
        self._bar.update(self._task, completed=event.done)
        if event.done >= event.total:
            self.close()

    def _start(self, event: Progress) -> None:
        from rich.console import Console
        from rich.progress import DownloadColumn, TransferSpeedColumn
        from rich.progress import Progress as Bar

        columns = (*Bar.get_default_columns(), DownloadColumn(), TransferSpeedColumn())
        self._bar = Bar(*columns, console=Console(stderr=True))
        self._bar.start()
        self._task = self._bar.add_task(f"{VERBS[event.step]} {event.name}", total=event.total)

    def close(self) -> None:
        """Stop the bar being drawn, leaving its last state on stderr."""
        if self._bar is not None:
            self._bar.stop()
        self._bar = self._task = None

    def __enter__(self) -> UploadBars:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"UploadBars(min_bytes={self.min_bytes}, drawing={self._bar is not None})"
