"""The bounded reader of files cloudtrain does not own, and the bounded YAML loader.

Every hostile path (a folder, a FIFO with and without a writer, ``/dev/zero``, a file
over the limit, binary bytes, a NUL in the path) is one ``UnreadableFile`` line or the
right bytes, never a hang or a traceback; every hostile YAML text (alias bombs, deep
nesting, tabs, tags) one ``YamlRefused`` line, with libyaml's loader and with PyYAML's own.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from cloudtrain import boundedyaml, files
from cloudtrain.boundedyaml import Limits, YamlRefused
from cloudtrain.files import UnreadableFile, read_bytes, read_text


def test_a_regular_file_within_the_limit_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_bytes(b"x" * 100)
    assert read_bytes(path, limit=100) == b"x" * 100


@pytest.mark.parametrize(
    ("make", "special", "problem"),
    [
        (lambda tmp: tmp, False, "is a folder, not a file."),  # a folder
        (lambda tmp: _written(tmp / "big", b"x" * 101), False, "larger than 100 bytes"),  # over the limit
        (lambda tmp: Path("/dev/zero"), False, "not a regular file (a FIFO, socket or device)."),  # a device
        (lambda tmp: Path("/dev/zero"), True, "larger than 100 bytes"),  # a device read: capped, not endless
        (lambda tmp: _fifo(tmp), False, "not a regular file (a FIFO, socket or device)."),  # a FIFO
    ],
)
def test_each_hostile_path_is_one_line_naming_it(
    tmp_path: Path, make: object, special: bool, problem: str
) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    with pytest.raises(UnreadableFile) as refused:
        read_bytes(path, limit=100, special=special)
    assert str(refused.value).startswith(f"{path}: ")
    assert problem in refused.value.problem and "\n" not in str(refused.value)


def test_a_missing_file_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_bytes(tmp_path / "missing", limit=100)


def test_a_nul_in_the_path_is_refused_without_echoing_it_whole() -> None:
    with pytest.raises(UnreadableFile, match="the path holds a NUL byte") as refused:
        read_bytes("a\0" + "b" * 10_000, limit=100)
    assert len(str(refused.value)) < 200


def test_a_fifo_nobody_writes_reads_as_empty_at_once(tmp_path: Path) -> None:
    assert read_bytes(_fifo(tmp_path), limit=100, special=True) == b""


def test_a_fifo_whose_writer_stays_silent_is_given_up_on(tmp_path: Path) -> None:
    # regression: reading a FIFO waited for ever
    path = _fifo(tmp_path)
    writer = os.open(path, os.O_RDWR)  # a writer that never writes
    try:
        with pytest.raises(UnreadableFile, match=r"nothing came in 0.2 s \(a FIFO that no one writes\?\)"):
            read_bytes(path, limit=100, special=True, wait_s=0.2)
    finally:
        os.close(writer)


def test_a_pipe_is_read_to_its_end_as_the_shells_process_substitution_gives_it(tmp_path: Path) -> None:
    reader, writer = os.pipe()
    sender = threading.Thread(target=_send, args=(writer, b"current-context: a\n" * 1000))
    sender.start()
    try:
        assert read_text(f"/dev/fd/{reader}", limit=100_000, special=True) == "current-context: a\n" * 1000
    finally:
        sender.join()
        os.close(reader)


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b"\x00\xff\xfe", "not UTF-8 text (byte 1)"),  # binary
        (b"name: a\x00b", "holds a NUL byte (at byte 7)"),  # a NUL in UTF-8 text
    ],
)
def test_text_that_is_not_text_is_refused(tmp_path: Path, raw: bytes, problem: str) -> None:
    with pytest.raises(UnreadableFile) as refused:
        read_text(_written(tmp_path / "f", raw), limit=100)
    assert problem in refused.value.problem


@pytest.fixture(params=["libyaml", "python"])
def loader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Both of PyYAML's loaders: libyaml's where built, and the pure-Python one."""
    if request.param == "python":
        monkeypatch.setattr(boundedyaml, "_LOADER", yaml.SafeLoader)
    elif not hasattr(yaml, "CSafeLoader"):
        pytest.skip("PyYAML was built without libyaml")
    yield request.param


LOL = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
)


@pytest.mark.usefixtures("loader")
@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (LOL, "holds more than 200,000 values once its aliases are expanded"),  # 342 bytes, 387M values
        ("[" * 5000 + "]" * 5000, "nested deeper than 32 levels"),  # a 5,000-deep list
        ("\n".join(" " * i + f"k{i}:" for i in range(40)), "nested deeper than 32 levels"),  # block style
        ("a: &a [*a]", "an alias inside the value it names"),  # a value that contains itself
        ("contexts:\n\t- name: c\n", "line 2: found character"),  # a tab
        ("a: !!int abc", "holds a value YAML cannot build"),  # an explicit tag that fails
        ("---\na: 1\n---\nb: 2\n", "line 3: but found another document"),  # two documents
        ("a: [1,", "not valid YAML"),  # cut short
        ("x: " + "[1] " * 10, "not valid YAML"),  # not YAML at all
    ],
)
def test_hostile_yaml_is_refused_in_one_line(text: str, problem: str) -> None:
    with pytest.raises(YamlRefused, match=problem.replace("[", r"\[")) as refused:
        boundedyaml.load(text)
    assert "\n" not in str(refused.value)


@pytest.mark.usefixtures("loader")
def test_a_tab_says_to_indent_with_spaces() -> None:
    with pytest.raises(YamlRefused, match=r"Indent with spaces, not tabs\."):
        boundedyaml.load("contexts:\n\t- name: c\n")


@pytest.mark.usefixtures("loader")
def test_aliases_within_the_limits_build_as_safe_load_builds_them() -> None:
    text = "a: &x {k: [1, 2]}\nb: *x\nc: [*x, *x]\n"
    assert boundedyaml.load(text, Limits(depth=4, values=40)) == yaml.safe_load(text)


@pytest.mark.usefixtures("loader")
def test_a_long_chain_of_aliases_is_counted_without_recursion() -> None:
    # each anchor holds the one before: 3,000 levels deep once expanded, 2 levels as written
    text = "a0: &a0 [x]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 3000))
    assert boundedyaml.load(text, Limits(values=10**7))["a2999"][0][0][0] is not None


def _written(path: Path, raw: bytes) -> Path:
    path.write_bytes(raw)
    return path


def _fifo(folder: Path) -> Path:
    path = folder / "fifo"
    os.mkfifo(path)
    return path


def _send(fd: int, data: bytes) -> None:
    with os.fdopen(fd, "wb") as pipe:
        pipe.write(data)


def test_the_default_wait_is_a_few_seconds() -> None:
    assert 0 < files.WAIT_S <= 10
