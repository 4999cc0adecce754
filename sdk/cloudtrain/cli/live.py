"""Where a job stands while ``wait`` and ``submit --wait`` wait on it, drawn on stderr.

A cloud job can sit queued or provisioning for minutes with nothing to show. The
library reports each change of state through ``Job.wait``'s ``on_status`` callback and
prints nothing; this module draws it. Every change is one plain line (what a log file or
CI shows); on a terminal a spinner line below it also counts the time in that state:
``⠋ Queued · JOB_STATE_PENDING · 1m12s``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from cloudtrain.provider import JobStatus


def plain(current: JobStatus) -> str:
    """The line printed when the state changes: ``queued (JOB_STATE_PENDING) detail``, and why a job waits.

    Example:
    >>> from datetime import UTC, datetime
    >>> from cloudtrain.provider import JobStatus
    >>> since = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    >>> plain(JobStatus("queued", "JOB_STATE_PENDING", pending_since=since, pending_reason="waiting for spot capacity"))[:60]
    'queued (JOB_STATE_PENDING): waiting for spot capacity, since'
    """
    said = f"{current.state} ({current.provider_state}) {current.detail}".rstrip()
    return f"{said}: {waiting(current)}" if current.waiting and current.pending_reason else said


def waiting(current: JobStatus) -> str:
    """Why a job waits and since when (local time): ``waiting for spot capacity, since 2026-01-01 13:00:00``."""
    since = current.pending_since
    when = f", since {since.astimezone().strftime('%Y-%m-%d %H:%M:%S')}" if since else ""
    return f"{current.pending_reason}{when}"


def elapsed(seconds: float) -> str:
    """``72`` -> ``1m12s``: short enough to change in place every second.

    Example:
    >>> elapsed(5), elapsed(72), elapsed(3725)
    ('5s', '1m12s', '1h02m')
    """
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class StatusLine:
    """An ``on_status`` callback: a plain line per change, and on a terminal a live spinner line.

    Used as a context manager, so the spinner is gone however the wait ends.

    Args:
        console: where to draw; default, a rich console on stderr. Nothing animates unless
            it is a terminal.
        clock: seconds, for the time in the current state (``time.monotonic``).

    Example:
    >>> import io
    >>> from rich.console import Console
    >>> from cloudtrain.provider import JobStatus
    >>> out = io.StringIO()
    >>> with StatusLine(Console(file=out)) as line:
    ...     line(JobStatus("queued", "JOB_STATE_PENDING"))
    >>> out.getvalue()
    'queued (JOB_STATE_PENDING)\\n'
    """

    def __init__(self, console: Console | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        if console is None:
            from rich.console import Console

            console = Console(stderr=True)
        self.console = console
        self._clock = clock
        self._current: JobStatus | None = None
        self._since = clock()
        self._live: Any = None  # rich.live.Live while the spinner is drawn
        self._spinner: Any = None

    def __call__(self, current: JobStatus) -> None:
        if current.done:  # the spinner goes first, so its last frame is the state before the end
            self.close()
        self.console.print(plain(current), markup=False, highlight=False, soft_wrap=True)
        self._current, self._since = current, self._clock()
        if not current.done and self.console.is_terminal and self._live is None:
            self._start()

    def text(self) -> str:
        """The spinner's words now: ``Queued · JOB_STATE_PENDING · 1m12s``."""
        if self._current is None:
            return ""
        state, word = self._current.state.capitalize(), self._current.provider_state
        return f"{state} · {word} · {elapsed(self._clock() - self._since)}"

    def _start(self) -> None:
        from rich.live import Live
        from rich.spinner import Spinner

        self._spinner = Spinner("dots", style="cyan")
        self._live = Live(self, console=self.console, transient=True, refresh_per_second=4)
        self._live.start()

    def __rich__(self) -> RenderableType:
        """What ``Live`` draws on each refresh: the one spinner, its words brought up to date."""
        self._spinner.update(text=self.text())
        return self._spinner

    def close(self) -> None:
        """Stop the spinner; the plain lines stay."""
        if self._live is not None:
            self._live.stop()
        self._live = self._spinner = None

    def __enter__(self) -> StatusLine:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"StatusLine(state={self._current.state if self._current else None!r}, live={self._live is not None})"


class Working:
    """A step that takes seconds with nothing to show: one plain line, and on a terminal a clock.

    ``doctor``'s child imports TensorFlow and runs a training step before it reports
    anything (6-10 s here); without a word the command looks hung.

    Example:
    >>> import io
    >>> from rich.console import Console
    >>> out = io.StringIO()
    >>> with Working("doctor: running the checks", Console(file=out)):
    ...     pass
    >>> out.getvalue()
    'doctor: running the checks\\n'
    """

    def __init__(
        self, text: str, console: Console | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if console is None:
            from rich.console import Console

            console = Console(stderr=True)
        self.text, self.console, self._clock = text, console, clock
        self._since = clock()
        self._live: Any = None
        self._spinner: Any = None

    def __enter__(self) -> Working:
        self.console.print(self.text, markup=False, highlight=False, soft_wrap=True)
        if self.console.is_terminal:
            from rich.live import Live
            from rich.spinner import Spinner

            self._spinner = Spinner("dots", style="cyan")
            self._live = Live(self, console=self.console, transient=True, refresh_per_second=4)
            self._live.start()
        return self

    def __rich__(self) -> RenderableType:
        self._spinner.update(text=elapsed(self._clock() - self._since))
        return self._spinner

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._live is not None:
            self._live.stop()
        self._live = None

    def __repr__(self) -> str:
        return f"Working(text={self.text!r}, live={self._live is not None})"
