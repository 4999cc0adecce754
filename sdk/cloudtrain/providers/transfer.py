"""The code bundle's way to a job: its URI in the plan, and an upload that happens once.

Every provider's request names the bundle by the URI ``cloudtrain.api.pack_code`` puts
in the plan; ``bundle_uri`` is the one check that it is there. A bundle's file name is
its content hash, so an object already at that URI is the same bundle: ``upload_once``
asks whether it is there and uploads only if not. Large uploads show a progress bar on
stderr, drawn here for every provider; small ones end before a bar would be readable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any

from cloudtrain.errors import ProviderError

if TYPE_CHECKING:
    from cloudtrain.planning import Plan

# Below this size an upload takes a moment and a progress bar would only flicker.
PROGRESS_MIN_BYTES = 8 * 1024 * 1024
NO_BUNDLE = (
    "The plan has no code bundle URI, so the job would have no code. "
    "Pack the code first: cloudtrain.api.pack_code(plan) (the CLI does this)."
)

Progress = Callable[[int], None]


def bundle_uri(plan: Plan, *, scheme: str | None = None) -> str:
    """The plan's code bundle URI, which ``render`` puts in the request.

    Args:
        plan: a plan packed by ``cloudtrain.api.pack_code`` (or ``Plan.with_bundle``).
        scheme: the URI scheme the provider reads code from (``"s3://"``), if it has one.

    Raises:
        ProviderError: the plan has no bundle URI, or one on another scheme; the message
            names the fix.
    """
    if plan.bundle is None:
        raise ProviderError(NO_BUNDLE)
    if scheme is not None and not plan.bundle.startswith(scheme):
        raise ProviderError(
            f"The plan's code bundle is {plan.bundle!r}, but {plan.provider} reads code from {scheme} URIs. "
            "Pack the code for this provider first: cloudtrain.api.pack_code(plan)."
        )
    return plan.bundle


def upload_once(
    *,
    exists: Callable[[], bool],
    upload: Callable[[Progress], None],
    name: str,
    size: int,
    progress_min_bytes: int = PROGRESS_MIN_BYTES,
) -> bool:
    """Run ``upload`` unless ``exists()``, with a progress bar from ``progress_min_bytes`` up.

    Args:
        exists: whether the bundle is already where it goes.
        upload: sends it, calling the callback it is given with each number of bytes sent.
        name: the bundle's file name, for the bar.
        size: the bundle's size in bytes.
        progress_min_bytes: show the bar on stderr from this size up.

    Returns:
        True if the bundle was uploaded, False if it was already there.

    Example:
    >>> sent = []
    >>> upload_once(exists=lambda: False, upload=lambda advance: sent.append("x"), name="b.tar.gz", size=1)
    True
    >>> upload_once(exists=lambda: True, upload=lambda advance: sent.append("x"), name="b.tar.gz", size=1), sent
    (False, ['x'])
    """
    if exists():
        return False
    with progress_bar(name, size, show=size >= progress_min_bytes) as advance:
        upload(advance)
    return True


@contextmanager
def progress_bar(name: str, size: int, *, show: bool) -> Iterator[Progress]:
    """A rich progress bar on stderr while in the block (or nothing); yields the bytes-sent callback.

    The callback may be called from several threads (s3transfer's workers): rich's
    ``advance`` takes a lock.
    """
    if not show:
        yield lambda _sent: None
        return
    from rich.console import Console
    from rich.progress import DownloadColumn, Progress, TransferSpeedColumn

    columns = (*Progress.get_default_columns(), DownloadColumn(), TransferSpeedColumn())
    with Progress(*columns, console=Console(stderr=True)) as bar:
        task = bar.add_task(f"Uploading {name}", total=size)
        yield lambda sent: bar.advance(task, sent)


class ProgressReader:
    """A binary file that reports to ``advance`` how far it has been read, for uploads that take a file.

    Reading again after a seek back (a retried chunk) reports nothing new, so the bar never
    passes the file's size.

    Example:
    >>> import io
    >>> seen = []
    >>> reader = ProgressReader(io.BytesIO(b"abcdef"), seen.append)
    >>> reader.read(4), reader.seek(0), reader.read(), seen
    (b'abcd', 0, b'abcdef', [4, 2])
    """

    def __init__(self, file: IO[bytes], advance: Progress) -> None:
        self._file = file
        self._advance = advance
        self._reported = 0

    def read(self, size: int = -1) -> bytes:
        data = self._file.read(size)
        position = self._file.tell()
        if position > self._reported:
            self._advance(position - self._reported)
            self._reported = position
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)

    def __repr__(self) -> str:
        return f"ProgressReader(file={self._file!r})"
