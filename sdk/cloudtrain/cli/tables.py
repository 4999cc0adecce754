"""Rows as a table that fits the terminal: low-priority columns drop first, long text wraps.

One helper for every command that prints rows (``list``, ``status``), so a narrow
terminal loses the same kind of detail everywhere and never gets lines that wrap
mid-column. ``--json`` output never comes through here.
"""

from __future__ import annotations

import io
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

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
    """The table as text at most ``width`` columns wide (None: the terminal's, ``$COLUMNS`` honoured)."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    width = width or shutil.get_terminal_size().columns
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
    """Print the table (see ``render``)."""
    click.echo(render(columns, rows), err=err)


def _widths(columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> list[int]:
    """Each column's width to stay: a wrapping one its header's, the others their widest cell's."""
    return [_needed(column, [row[index] for row in rows]) for index, column in enumerate(columns)]


def _total(needed: list[int], kept: list[int]) -> int:
    return sum(needed[i] for i in kept) + GAP * (len(kept) - 1)


def _needed(column: Column, cells: list[str]) -> int:
    widest = max((len(line) for cell in cells for line in cell.splitlines()), default=0)
    return len(column.header) if column.wrap else max(len(column.header), widest)
