"""Where a ``--plot`` picture goes: the path checked before any work, the figure written or an error.

``compare``, ``cost`` and ``bench`` draw with matplotlib (the ``plot`` extra, imported
inside the drawing functions only, with the headless Agg backend). The path is the
user's: ``check_path`` refuses, before a run is read or a bench is started, a name whose
format matplotlib does not write (``x.txt``) or whose folder does not exist; ``save``
renders the figure in memory and writes it with ``files.write_bytes``, so a failed write
(``/dev/full``, a full disk) is one error line, never "Plot written to ..." after all.

Example:
>>> check_path("scaling.svg").name
'scaling.svg'
>>> check_path("scaling.txt")
Traceback (most recent call last):
    ...
cloudtrain.errors.SpecError: --plot 'scaling.txt': matplotlib cannot draw .txt. Name it .png, .svg or .pdf.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import TYPE_CHECKING

from cloudtrain import files
from cloudtrain.errors import SpecError
from cloudtrain.messages import quote, shorten

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# What matplotlib's Agg backend writes by itself (no Pillow); a name without a suffix is a PNG.
FORMATS = ("png", "svg", "pdf")


def check_path(path: str | os.PathLike[str], option: str = "--plot") -> Path:
    """``path`` if a figure can be written there: a format of ``FORMATS``, in a folder that exists.

    Raises:
        SpecError: the suffix names another format, or the folder is missing or not one.
    """
    chosen = Path(path)
    suffix = chosen.suffix.lower().lstrip(".")
    if suffix and suffix not in FORMATS:
        raise SpecError(
            f"{option} {quote(str(path))}: matplotlib cannot draw .{shorten(suffix)}. "
            f"Name it {', '.join('.' + name for name in FORMATS[:-1])} or .{FORMATS[-1]}."
        )
    folder = chosen.parent
    if not os.path.isdir(folder):
        raise SpecError(
            f"{option} {quote(str(path))}: the folder {quote(str(folder))} does not exist. Create it first."
        )
    return chosen


def save(fig: Figure, path: str | os.PathLike[str]) -> Path:
    """Write ``fig`` to ``path`` in the format its suffix names (PNG without one), then close it.

    Raises:
        SpecError: ``path`` fails ``check_path``.
        UnwritableFile: the file cannot be written (one line: the path and why).
    """
    import matplotlib.pyplot as plt

    chosen = check_path(path)
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format=chosen.suffix.lower().lstrip(".") or FORMATS[0])
    finally:
        plt.close(fig)
    files.write_bytes(chosen, buffer.getvalue())
    return chosen
