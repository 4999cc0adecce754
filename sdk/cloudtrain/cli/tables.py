"""Rows as a table that fits the terminal: low-priority columns drop first, long text wraps.

One helper for every command that prints rows (``list``, ``status``, ``cost``, ``bench``),
so a narrow terminal loses the same kind of detail everywhere and never gets lines that
wrap mid-column. Output that goes to a file or a pipe has no width to fit: every column
stays, each as wide as its widest cell (as ``ls`` and ``kubectl get`` do), unless
``$COLUMNS`` asks for a width. ``--json`` output never comes through here.

A table that fits whole and holds plain text is drawn here, exactly as rich would draw
it; rich, whose import and layout were a sixth of ``cloudtrain cost``'s start-up, draws
the rest: tables that must fold or drop columns, and text it could read as markup or
draw wider than one column per character.
"""

from __future__ import annotations

import io
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TextIO

import click

# The gap between two columns as rich draws this box: a cell's padding each side and the blank divider.
GAP = 3
# rich's SIMPLE_HEAD box: one rule under the header, across the whole table.
HEAD_RULE = "\u2500"
# Characters one column wide wherever rich measures them: Latin, punctuation, arrows, math
# signs (U+0020-U+02FF and U+2010-U+22FF; the zero-width and layout marks are not printable).
_NARROW = re.compile(r"[\u0020-\u02ff\u2010-\u22ff]*")
# What rich's markup would read: a tag ([bold]), an escape (\\[) or an emoji code (:smile:).
_MARKUP = re.compile(r"[\[\]\\:]")


@dataclass(frozen=True)
class Column:
    """A column: ``priority`` 0 always stays; higher numbers drop first when the terminal is narrow.

    ``wrap``: long text folds onto more lines, so the column needs only its header's width
    to stay. Any column folds once only priority-0 columns are left and they are too wide.
    """

    header: str
    priority: int = 0
    wrap: bool = False
    justify: Literal["left", "right"] = "left"


def render(columns: Sequence[Column], rows: Sequence[Sequence[str]], *, width: int | None = None) -> str:
    """The table as text at most ``width`` columns wide (None: ``output_width()`` of stdout).

    Without a width to fit (a pipe or a file), every column stays whole.
    """
    natural = _natural(columns, rows)
    whole = _total(natural, list(range(len(columns))))
    width = width or output_width(sys.stdout) or whole
    if whole <= width and _plain_text(columns, rows):
        return _whole(columns, rows, natural)
    return drawn(columns, rows, width=width)


def drawn(columns: Sequence[Column], rows: Sequence[Sequence[str]], *, width: int) -> str:
    """The table as rich draws it at most ``width`` columns wide: columns dropped and folded to fit."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    needed = _widths(columns, rows)
    kept = fitting(columns, rows, width)
    fits = _total(needed, kept) <= width
    table = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        header_style="bold",
        show_header=any(column.header for column in columns),  # all blank: rows of name and value
    )
    for index in kept:
        column = columns[index]
        # Where everything fits, only wrapping columns fold; otherwise rich folds what it must.
        whole = needed[index] if fits and not column.wrap else None
        table.add_column(
            column.header, justify=column.justify, overflow="fold", width=whole, no_wrap=whole is not None
        )
    for row in rows:
        table.add_row(*(row[index] for index in kept))
    out = io.StringIO()
    Console(file=out, width=width, color_system=None, soft_wrap=False).print(table)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()).strip("\n")


def _plain_text(columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> bool:
    """Whether every header and cell is one line of text that rich draws as it is, a column per character."""
    cells = [column.header for column in columns] + [cell for row in rows for cell in row]
    return all(cell.isprintable() and _NARROW.fullmatch(cell) and not _MARKUP.search(cell) for cell in cells)


def _whole(columns: Sequence[Column], rows: Sequence[Sequence[str]], widths: list[int]) -> str:
    """Every column at its natural width, laid out as ``render``'s rich table draws it.

    Cells are padded to their column's width and justified, columns ``GAP`` apart; the
    header (where any column has one) is followed by one rule as wide as the table.
    """
    lines = [_line(columns, row, widths) for row in rows]
    if any(column.header for column in columns):
        header = _line(columns, [column.header for column in columns], widths)
        lines = [header, HEAD_RULE * _total(widths, list(range(len(columns)))), *lines]
    return "\n".join(lines).strip("\n")


def _line(columns: Sequence[Column], cells: Sequence[str], widths: list[int]) -> str:
    """One row: rich pads a cell to its column's width, a right-justified one after dropping its trailing blanks."""
    padded = (
        cell.rstrip().rjust(width) if column.justify == "right" else cell.ljust(width)
        for column, cell, width in zip(columns, cells, widths, strict=True)
    )
    return (" " * GAP).join(padded).rstrip()


def fitting(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int) -> list[int]:
    """The indexes of the columns that fit ``width``, dropping the highest priority number first.

    A wrapping column counts at its header's width (it can fold); the others at their
    widest cell. Priority-0 columns stay even when they do not fit: rich then folds them.
    """
    needed = _widths(columns, rows)
    kept = list(range(len(columns)))
    for index in sorted(kept, key=lambda i: (-columns[i].priority, -i)):
        if _total(needed, kept) <= width or columns[index].priority == 0:
            break
        kept.remove(index)
    return kept


def echo(columns: Sequence[Column], rows: Sequence[Sequence[str]], *, err: bool = False) -> None:
    """Print the table (see ``render``) to stdout, or stderr with ``err``, fitting that stream."""
    width = output_width(sys.stderr if err else sys.stdout)
    click.echo(render(columns, rows, width=width), err=err)


def output_width(stream: TextIO) -> int | None:
    """The width to fit: ``$COLUMNS`` when set, else the terminal's; None for a pipe or a file.

    ``shutil.get_terminal_size`` answers 80 for a pipe, which would drop columns from
    ``cloudtrain cost > file`` that a file has room for.
    """
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(stream.fileno()).columns if stream.isatty() else None
    except (AttributeError, OSError, ValueError):  # a stream without a descriptor (a test's capture)
        return None


def _widths(columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> list[int]:
    """Each column's width to stay: a wrapping one its header's, the others their widest cell's."""
    return [_needed(column, [row[index] for row in rows]) for index, column in enumerate(columns)]


def _total(needed: list[int], kept: list[int]) -> int:
    return sum(needed[i] for i in kept) + GAP * (len(kept) - 1)


def _natural(columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> list[int]:
    """Each column's width with nothing folded: its widest cell's, or its header's."""
    return [
        _needed(Column(column.header), [row[index] for row in rows]) for index, column in enumerate(columns)
    ]


def _needed(column: Column, cells: list[str]) -> int:
    widest = max((len(line) for cell in cells for line in cell.splitlines()), default=0)
    return len(column.header) if column.wrap else max(len(column.header), widest)
