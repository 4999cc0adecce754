"""Tables that fit the terminal: which columns drop, what wraps."""

from __future__ import annotations

import fcntl
import os
import pty
import random
import struct
import sys
import termios

import pytest

from cloudtrain.cli.tables import GAP, Column, drawn, fitting, output_width, render

COLUMNS = (
    Column("id"),
    Column("name", priority=1),
    Column("note", priority=3, wrap=True),
    Column("usd", priority=2, justify="right"),
)
ROWS = [["local:demo-20260101-120000-0a1b", "demo", "a note long enough to need folding here", "1.20"]]


@pytest.mark.parametrize(
    ("width", "kept"),
    [
        (200, [0, 1, 2, 3]),  # everything fits
        (52, [0, 1, 2, 3]),  # the note fits folded to its header's width
        (51, [0, 1, 3]),  # not even folded: it goes first
        (44, [0, 1]),  # then usd (priority 2)
        (20, [0]),  # priority 0 stays even when too wide
    ],
)
def test_columns_drop_by_priority(width: int, kept: list[int]) -> None:
    assert fitting(COLUMNS, ROWS, width) == kept


def test_rendered_lines_fit_and_long_text_wraps() -> None:
    lines = render(COLUMNS, ROWS, width=70).splitlines()
    assert all(len(line) <= 70 for line in lines)
    assert lines[0].split() == ["id", "name", "note", "usd"]
    assert len(lines) > 3  # the note folded onto more lines
    assert "1.20" in lines[2]


@pytest.mark.parametrize("width", [52, 51, 44, 38])
def test_kept_columns_stay_whole_and_only_the_note_folds(width: int) -> None:
    lines = render(COLUMNS, ROWS, width=width).splitlines()
    assert all(len(line) <= width for line in lines)
    assert lines[2].startswith(f"{ROWS[0][0]}   {ROWS[0][1]}")  # id and name unfolded
    assert len(lines) == 3 or "note" in lines[0]  # more lines only where the note folds


def test_too_narrow_for_priority_0_folds_instead_of_cropping() -> None:
    lines = render(COLUMNS, ROWS, width=20).splitlines()
    assert all(len(line) <= 20 for line in lines)
    assert "".join(line.strip() for line in lines[2:]) == ROWS[0][0]


def test_a_pipe_has_no_width_to_fit_so_every_column_stays_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    read, write = os.pipe()
    with os.fdopen(read) as _, os.fdopen(write, "w") as pipe:
        assert output_width(pipe) is None
        monkeypatch.setattr(sys, "stdout", pipe)
        lines = render(COLUMNS, ROWS).splitlines()
    assert lines[0].split() == ["id", "name", "note", "usd"]
    assert lines[2].split() == " ".join(ROWS[0]).split()  # the note on one line, not folded


def test_a_terminal_is_fitted_and_columns_overrides_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 44, 0, 0))
    with os.fdopen(leader) as _, os.fdopen(follower, "w") as terminal:
        assert output_width(terminal) == 44
        monkeypatch.setenv("COLUMNS", "120")
        assert output_width(terminal) == 120


def _random_table(seed: int) -> tuple[list[Column], list[list[str]]]:
    """Columns and rows of plain text of every kind ``render`` draws without rich."""
    chance = random.Random(seed)
    letters = "abcxyz0189 .,-_$%#@/()×≥≈→–·é"
    columns = [
        Column(
            "".join(chance.choices(letters, k=chance.randint(0, 6))) if seed % 5 else "",
            priority=chance.randint(0, 3),
            wrap=chance.random() < 0.3,
            justify=chance.choice(["left", "right"]),
        )
        for _ in range(chance.randint(1, 6))
    ]
    rows = [
        ["".join(chance.choices(letters, k=chance.randint(0, 12))) for _ in columns]
        for _ in range(chance.randint(0, 5))
    ]
    return columns, rows


@pytest.mark.parametrize("seed", range(200))
def test_a_table_that_fits_is_drawn_as_rich_draws_it(seed: int) -> None:
    # render draws a whole plain table itself; it must match rich's drawing to the character.
    columns, rows = _random_table(seed)
    natural = sum(max([len(c.header)] + [len(row[i]) for row in rows]) for i, c in enumerate(columns))
    width = natural + GAP * (len(columns) - 1)
    for room in (width, width + 7):
        assert render(columns, rows, width=room) == drawn(columns, rows, width=room)


@pytest.mark.parametrize(
    "cell",
    [
        "[bold]x[/bold]",  # markup: rich drops the tags
        "a :smile: b",  # an emoji code
        "two\nlines",  # a cell of two lines
        "漢字",  # two columns per character
        "e\u0301",  # a combining accent: no column of its own
        "a\u00a0b",  # a no-break space
    ],
)
def test_text_rich_reads_otherwise_is_left_to_rich(cell: str) -> None:
    columns = [Column("a"), Column("b", justify="right")]
    rows = [[cell, "1"], ["x", "22"]]
    assert render(columns, rows, width=80) == drawn(columns, rows, width=80)
