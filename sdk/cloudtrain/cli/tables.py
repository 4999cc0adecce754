"""Rows as a table that fits the terminal: low-priority columns drop first, long text wraps.

One helper for every command that prints rows (``list``, ``status``, ``cost``, ``bench``),
so a narrow terminal loses the same kind of detail everywhere and never gets lines that
wrap mid-column. Output that goes to a file or a pipe has no width to fit: every column
stays, each as wide as its widest cell (as ``ls`` and ``kubectl get`` do), unless
``$COLUMNS`` asks for a width. ``--json`` output never comes through here.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TextIO

import click

# The gap between two columns as rich draws this box: a cell's padding each side and the blank divider.
GAP = 3


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
    from rich import box
    from rich.console import Console
    from rich.table import Table

    width = width or output_width(sys.stdout) or _total(_natural(columns, rows), list(range(len(columns))))
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
