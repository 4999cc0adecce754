"""The one scan of installed packages' entry points decides as ``importlib.metadata`` does."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from importlib.metadata import entry_points as metadata_entry_points
from pathlib import Path

import pytest

from cloudtrain_runtime import entry_points

GROUP = "cloudtrain.test_group"


def install(site: Path, folder: str, text: str) -> None:
    """A distribution's metadata folder in ``site`` with ``text`` as its ``entry_points.txt``."""
    (site / folder).mkdir(parents=True)
    (site / folder / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {folder.split('-')[0]}\nVersion: 1\n"
    )
    (site / folder / "entry_points.txt").write_text(text)


@pytest.fixture
def sites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    """Two folders on ``sys.path``, the first ahead of the second."""
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (second, first):
        folder.mkdir()
        monkeypatch.syspath_prepend(str(folder))
    entry_points.forget()
    yield first, second
    monkeypatch.undo()
    entry_points.forget()


def test_the_first_distribution_of_a_name_on_the_path_wins_as_importlib_metadata_decides(
    sites: tuple[Path, Path],
) -> None:
    first, second = sites
    install(first, "Lake.Cloud-2.0.dist-info", f"[{GROUP}]\nlake = lake_new:ENV\n")
    install(second, "lake_cloud-1.0.dist-info", f"[{GROUP}]\nlake = lake_old:ENV\nold_only = lake_old:X\n")
    install(
        second,
        "river-1.0.egg-info",
        f"# a comment\n[console_scripts]\nriver = river:main\n\n[{GROUP}]\nriver=river : ENV\n",
    )
    found = [(entry.name, entry.value) for entry in entry_points.group(GROUP)]
    expected = [(entry.name, entry.value) for entry in metadata_entry_points(group=GROUP)]
    assert sorted(found) == sorted(expected) == [("lake", "lake_new:ENV"), ("river", "river : ENV")]


def test_a_damaged_entry_points_file_is_passed_over_and_the_others_still_read(
    sites: tuple[Path, Path],
) -> None:
    first, _ = sites
    install(first, "broken-1.0.dist-info", "")
    (first / "broken-1.0.dist-info" / "entry_points.txt").write_bytes(
        b"[" + GROUP.encode() + b"]\nx = \xff\xfe\n"
    )
    install(first, "lake-1.0.dist-info", f"[{GROUP}]\nlake = lake:ENV\n")
    assert [entry.name for entry in entry_points.group(GROUP)] == ["lake"]


def test_forget_reads_packages_installed_since(sites: tuple[Path, Path]) -> None:
    first, _ = sites
    assert entry_points.group(GROUP) == ()
    install(first, "lake-1.0.dist-info", f"[{GROUP}]\nlake = lake:ENV\n")
    assert entry_points.group(GROUP) == ()  # scanned once per process
    entry_points.forget()
    assert [entry.name for entry in entry_points.group(GROUP)] == ["lake"]


def test_an_entry_point_loads_its_attribute_path_and_ignores_extras() -> None:
    entry = entry_points.EntryPoint("bare", "cloudtrain_runtime.environments : NEUTRAL [extra]", GROUP)
    assert entry.load() is sys.modules["cloudtrain_runtime.environments"].NEUTRAL
