"""The code bundle's way to a job: its URI in the plan, and an upload that happens once.

Every provider's request names the bundle by the URI ``cloudtrain.api.pack_code`` puts
in the plan; ``bundle_uri`` is the one check that it is there. A bundle's file name is
its content hash, so an object already at that URI is the same bundle: ``upload_once``
asks whether it is there and uploads only if not, reporting how far it has got to the
caller's ``progress`` callback (``cloudtrain.progress``); nothing is drawn here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from cloudtrain.errors import ProviderError
from cloudtrain.progress import Advance, OnProgress, reporter

if TYPE_CHECKING:
    from cloudtrain.planning import Plan

NO_BUNDLE = (
    "The plan has no code bundle URI, so the job would have no code. "
    "Pack the code first: cloudtrain.api.pack_code(plan) (the CLI does this)."
)


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
    upload: Callable[[Advance], None],
    name: str,
    size: int,
    progress: OnProgress | None = None,
) -> bool:
    """Run ``upload`` unless ``exists()``, reporting each byte sent to ``progress``.

    Args:
        exists: whether the bundle is already where it goes.
        upload: sends it, calling the callback it is given with each number of bytes sent.
        name: the bundle's file name, as ``Progress.name``.
        size: the bundle's size in bytes.
        progress: the caller's callback (``cloudtrain.progress``); None reports nothing.

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
    upload(reporter(progress, step="upload", name=name, total=size))
    return True


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

    def __init__(self, file: IO[bytes], advance: Advance) -> None:
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
