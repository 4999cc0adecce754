"""Pack the user's source directory into a reproducible, content-addressed tarball.

Every provider ships code the same way: one ``.tar.gz`` named by the SHA-256 of its
bytes, so an unchanged project is never uploaded twice and the container needs no cloud
SDK to fetch it (Vertex reads it through ``/gcs``, SageMaker as an input channel, local
from a folder). The tarball is byte-for-byte reproducible: sorted entries, fixed
mtimes, owners and modes, and a gzip header without a timestamp.

What ships, in order:

1. The files git would commit: in a git work tree, ``git ls-files --cached --others
   --exclude-standard``; elsewhere the same rules read from ``.git/info/exclude`` and the
   ``.gitignore`` of every folder.
2. Less ``.cloudtrainignore`` at the root (gitignore syntax; it can only exclude more).
3. Less ``ALWAYS_EXCLUDED`` (version control, virtual environments, caches, build
   output) and every local folder the job writes to (``exclude``: the storage root of a
   local run), which no ignore file can bring back.
4. Less credentials (``cloudtrain.secrets``), by name and by the first bytes of each
   file (scanned by detect-secrets too, ``cloudtrain.scanning``), whatever the ignore
   files say. They are reported in ``Bundle.refused``.

A symbolic link is packed as the file it points to when that stays inside the source
folder; a link out of it is an error naming the link. FIFOs, sockets and devices are
skipped.

Packing streams the archive to disk. An index under ``out_dir/index`` remembers, per
list of (path, size, mtime, mode), the bundle it gave, so packing an unchanged project
again reads no file contents.

Example:
>>> import tempfile, pathlib
>>> src, out = pathlib.Path(tempfile.mkdtemp()), pathlib.Path(tempfile.mkdtemp())
>>> _ = (src / "task.py").write_text("print('hi')\\n")
>>> _ = (src / ".env").write_text("TOKEN=...\\n")
>>> a, b = pack(src, out), pack(src, out)
>>> a.sha256 == b.sha256, a.files, a.refused
(True, 1, (Refused(path='.env', reason='a dotenv file'),))
"""

from __future__ import annotations

import gzip
import hashlib
import heapq
import json
import os
import shutil
import stat
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import pathspec

from cloudtrain import scanning, secrets
from cloudtrain.errors import SpecError
from cloudtrain_runtime.bundle import RUNTIME_PREFIX

# Never shipped, whatever the ignore files say: version control, environments, local
# state, caches and build output. ``outputs/`` is the local provider's default storage root.
ALWAYS_EXCLUDED = [
    ".git/",
    ".hg/",
    ".svn/",
    ".venv/",
    "venv/",
    ".cloudtrain/",
    "/outputs/",
    "__pycache__/",
    "*.pyc",
    ".pytest_cache/",
    ".mypy_cache/",
    ".ruff_cache/",
    ".ipynb_checkpoints/",
    "*.egg-info/",
    "/build/",
    "/dist/",
]
IGNORE_FILE = ".cloudtrainignore"
IGNORE_FILES = (".gitignore", IGNORE_FILE)  # the files a user edits to leave something out
# Above this many bytes of files, ``Bundle.notes`` names the largest ones.
LARGE_BYTES = 50_000_000
# gzip level 1. On a 100 MB CSV plus 50 modules (benchmarks/bundle_packing.py), levels
# 1/3/6/9 took 1.0/2.1/6.6/13.0 s for 1.00/0.94/0.90/0.89 of the level-1 size: level 6
# saves 4.9 MB for 5.6 s more, which uploads in 0.4 s at 100 Mbit/s and 3.9 s at 10 Mbit/s.
LEVEL = 1
_FORMAT = 1  # bump when the archive's bytes change for the same files, to retire the index
_MTIME = 315532800  # 1980-01-01, the earliest time zip and wheel tools accept
# A file changed this close before a pack may change again within the same timestamp
# tick, unseen by its stat; the index does not vouch for it. Whole-second timestamps come
# from coarse file systems (FAT keeps 2 s).
_RACY_NS = 100_000_000
_RACY_COARSE_NS = 2_000_000_000
# Variables that point git at another repository than the source folder's.
_GIT_LOCATION = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY")


@dataclass(frozen=True)
class Refused:
    """A file kept out of the bundle although no ignore file excludes it, and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class Bundle:
    """A packed source tree: where the tarball is, its hash, what it holds and what it refused."""

    path: Path
    sha256: str
    files: int
    size: int
    contents: tuple[tuple[str, int], ...] = ()
    """(name, bytes) of every file in the archive, in archive order."""
    refused: tuple[Refused, ...] = ()
    notes: tuple[str, ...] = ()
    """Advice for the user (a bundle too large for code); the CLI prints them."""

    @property
    def name(self) -> str:
        """The content-addressed file name, e.g. ``3f2a9c0d1e7b6a55.tar.gz``."""
        return f"{self.sha256[:16]}.tar.gz"

    def uri_under(self, code_root: str) -> str:
        """Where the bundle lives under a storage ``code`` prefix."""
        return f"{code_root.rstrip('/')}/{self.name}"

    def __repr__(self) -> str:
        return (
            f"Bundle(name={self.name!r}, files={self.files}, size={self.size}, refused={len(self.refused)})"
        )


@dataclass(frozen=True)
class _Entry:
    """A file to ship: its name in the archive, the file read for it, and its stat."""

    arcname: str
    path: Path
    size: int
    mtime_ns: int
    mode: int


@dataclass(frozen=True)
class _Selection:
    files: list[_Entry]
    refused: list[Refused]


def collect(source_dir: str | Path, *, exclude: Iterable[str | Path] = ()) -> list[Path]:
    """The files to ship, relative to ``source_dir``, sorted (see the module docstring).

    Args:
        source_dir: the user's project folder.
        exclude: local folders the job writes to; those inside ``source_dir`` never ship.

    Raises:
        SpecError: ``source_dir`` is not a folder, a link inside it points out of it, or a
            file to ship cannot be read.
    """
    selection = _select(_source_root(source_dir), exclude)
    kept, _ = _sniff(selection.files)
    return [Path(entry.arcname) for entry in kept]


def pack(
    source_dir: str | Path,
    out_dir: str | Path,
    *,
    include_runtime: bool = False,
    exclude: Iterable[str | Path] = (),
) -> Bundle:
    """Write the reproducible tarball of ``source_dir`` into ``out_dir`` and return it.

    Args:
        source_dir: the user's project folder.
        out_dir: where to write ``<hash>.tar.gz``, and the index of earlier packs.
        include_runtime: also ship the ``cloudtrain_runtime`` package under
            ``.cloudtrain-runtime/`` so a stock TensorFlow image can run it.
        exclude: local folders the job writes to (a local storage root); those inside
            ``source_dir`` never ship, so a local run does not change the next bundle.

    Raises:
        SpecError: ``source_dir`` is not a folder, a link inside it points out of it, or a
            file to ship cannot be read.
    """
    started = time.time_ns()
    root, out = _source_root(source_dir), Path(out_dir)
    selection = _select(root, [*exclude, out])
    runtime = _runtime_entries() if include_runtime else []
    key = _index_key(root, [*selection.files, *runtime], include_runtime)
    found = _recall(out, key, selection, runtime)
    if found is not None:
        return found
    kept, sniffed = _sniff(selection.files, scan=True)
    entries = sorted([*kept, *runtime], key=lambda entry: entry.arcname)
    digest, size = _write(entries, out)
    bundle = _bundle(out, digest, size, entries, [*selection.refused, *sniffed])
    _remember(out, key, started, bundle, sniffed)
    return bundle


def _source_root(source_dir: str | Path) -> Path:
    root = Path(source_dir)
    if not root.is_dir():
        raise SpecError(
            f"code.source_dir: {str(root)!r} is not a directory. Point it at your project folder."
        )
    resolved = root.resolve()
    if resolved == Path(resolved.anchor):  # every file of the machine would ship
        raise SpecError(
            f"code.source_dir: {str(root)!r} is the root of the file system. Point it at your project folder."
        )
    return resolved


# -- choosing the files ---------------------------------------------------------------


class _Patterns:
    """gitignore lines, judged as git judges them (gitignore(5)).

    A folder is ignored by the last pattern that matches it; a file by the last pattern
    that matches the file itself (a folder above it that is ignored is pruned first).
    pathspec's GitIgnoreSpec judges files so, but on a folder it lets ``*`` win over a
    later ``!*/``; folders are judged by a plain last-match PathSpec of the same patterns.
    """

    def __init__(self, lines: Iterable[str]) -> None:
        self.lines = tuple(lines)
        self._files = pathspec.GitIgnoreSpec.from_lines(self.lines)
        self._folders = pathspec.PathSpec(self._files.patterns)

    def ignores(self, rel: str, *, folder: bool) -> bool:
        return self._folders.match_file(f"{rel}/") if folder else self._files.match_file(rel)

    def plus(self, lines: Iterable[str]) -> _Patterns:
        return _Patterns((*self.lines, *lines))


@dataclass(frozen=True)
class _Rules:
    """The ignore rules in force in one folder; ``git`` is None where git itself listed the files."""

    fixed: _Patterns
    own: _Patterns
    git: _Patterns | None = None

    def ignores(self, rel: str, *, folder: bool = False) -> bool:
        layers = (self.fixed, self.own, self.git)
        return any(layer is not None and layer.ignores(rel, folder=folder) for layer in layers)

    def from_ignore_files(self, root: Path) -> _Rules:
        """These rules read from ``.git/info/exclude`` and ``.gitignore`` at the root, not from git."""
        lines = [*_lines(root / ".git" / "info" / "exclude"), *_lines(root / ".gitignore")]
        return _Rules(self.fixed, self.own, _Patterns(lines))

    def entering(self, root: Path, rel_dir: str) -> _Rules:
        """The rules inside ``rel_dir``: these, plus its own ``.gitignore`` when git did not list."""
        ignore = root / rel_dir / ".gitignore"
        if self.git is None or not ignore.is_file():
            return self
        lines = (_anchored(text, rel_dir) for text in _lines(ignore))
        return _Rules(self.fixed, self.own, self.git.plus(line for line in lines if line))

    def inside(self, root: Path, rel_dir: str) -> _Rules:
        """The rules from the ignore files for a folder git did not list file by file.

        A folder git lists whole (a nested repository) or a link to a folder is walked
        here, with the ``.gitignore`` of every folder above it.
        """
        rules = self.from_ignore_files(root)
        parts = rel_dir.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            rules = rules.entering(root, "/".join(parts[:depth]))
        return rules


def _select(root: Path, exclude: Iterable[str | Path]) -> _Selection:
    """The files to ship and the credentials refused, judged by name and stat only.

    Raises:
        SpecError: a folder or link under ``root`` cannot be read (permissions, a loop the
            system refuses to follow), naming it.
    """
    try:
        return _select_readable(root, exclude)
    except OSError as err:
        where = os.fsdecode(err.filename) if err.filename is not None else str(root)
        raise SpecError(
            f"code.source_dir: cannot read {where!r} ({err.strerror or type(err).__name__}). "
            f"Fix its permissions, or add it to {IGNORE_FILE}."
        ) from None


def _select_readable(root: Path, exclude: Iterable[str | Path]) -> _Selection:
    rules = _Rules(
        fixed=_Patterns([*ALWAYS_EXCLUDED, *_inside(root, exclude)]),
        own=_Patterns(_lines(root / IGNORE_FILE)),
    )
    listed = _git_listing(root)
    found = _walk(root, "", rules.from_ignore_files(root)) if listed is None else _unignored(listed, rules)
    selection = _Selection([], [])
    for rel, rules_there in found:
        _admit(root, rel, rules_there, selection, frozenset({str(root)}))
    selection.files.sort(key=lambda entry: entry.arcname)
    selection.refused.sort(key=lambda refused: refused.path)
    return selection


def _unignored(listed: list[str], rules: _Rules) -> Iterator[tuple[str, _Rules]]:
    """The paths git listed that no rule of ours ignores, nor any folder above them."""
    folders: dict[str, bool] = {"": False}

    def ignored_folder(rel: str) -> bool:
        if rel not in folders:
            folders[rel] = ignored_folder(rel.rpartition("/")[0]) or rules.ignores(rel, folder=True)
        return folders[rel]

    for name in listed:
        rel = name.rstrip("/")  # git lists a nested repository as a folder
        if not ignored_folder(rel.rpartition("/")[0]) and not rules.ignores(rel, folder=name.endswith("/")):
            yield rel, rules


def _walk(root: Path, rel_dir: str, rules: _Rules) -> Iterator[tuple[str, _Rules]]:
    """Paths under ``rel_dir`` the rules keep, with the rules of their folder; folders pruned as git does."""
    rules = rules.entering(root, rel_dir) if rel_dir else rules
    with os.scandir(root / rel_dir) as found:
        entries = sorted(found, key=lambda entry: entry.name)
    for entry in entries:
        rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
        if entry.is_dir(follow_symlinks=False):
            if not rules.ignores(rel, folder=True):
                yield from _walk(root, rel, rules)
        elif not rules.ignores(rel):
            yield rel, rules


def _admit(root: Path, rel: str, rules: _Rules, selection: _Selection, visiting: frozenset[str]) -> None:
    """Add ``rel`` (a file, a link, or a folder git listed whole) to the selection, or refuse it."""
    full = root / rel
    try:
        info = full.lstat()
    except FileNotFoundError:  # tracked by git, deleted from the work tree
        return
    target = full
    if stat.S_ISLNK(info.st_mode):
        target = Path(os.path.realpath(full))
        try:
            info = full.stat()
        except FileNotFoundError:  # a dangling link
            return
        if stat.S_ISDIR(info.st_mode) and rules.ignores(rel, folder=True):
            return  # "data/" in an ignore file covers a link named data to a folder
        if not target.is_relative_to(root):
            raise SpecError(
                f"code.source_dir: {rel!r} is a link to {str(target)!r}, outside the source folder, "
                f"so it cannot ship. Copy what it points to into the folder, or add {rel!r} to {IGNORE_FILE} "
                "(read data through a data: channel instead)."
            )
    if stat.S_ISDIR(info.st_mode):
        _admit_folder(root, rel, Path(os.path.realpath(full)), rules, selection, visiting)
        return
    if not stat.S_ISREG(info.st_mode):
        selection.refused.append(Refused(rel, "not a regular file (a FIFO, socket or device)"))
        return
    names = {rel, target.relative_to(root).as_posix()}
    kind = next(filter(None, map(secrets.file_name_kind, sorted(names))), None)
    if kind is not None:
        selection.refused.append(Refused(rel, kind))
        return
    selection.files.append(_Entry(rel, target, info.st_size, info.st_mtime_ns, info.st_mode))


def _admit_folder(
    root: Path, rel: str, target: Path, rules: _Rules, selection: _Selection, visiting: frozenset[str]
) -> None:
    """Walk a folder git listed whole, or a link's folder; a link back up is refused."""
    if str(target) in visiting or (root / rel).parent.resolve().is_relative_to(target):
        selection.refused.append(Refused(rel, "a link to a folder that contains it (a loop)"))
        return
    for child, rules_there in _walk(root, rel, rules.inside(root, rel)):
        _admit(root, child, rules_there, selection, visiting | {str(target)})


def _git_listing(root: Path) -> list[str] | None:
    """What git would commit under ``root`` (relative paths), or None outside a git work tree.

    An empty listing is None too: a source folder that git ignores as a whole is walked
    with the ignore files instead of shipping nothing.
    """
    git = shutil.which("git")
    if git is None:
        return None
    env = {name: value for name, value in os.environ.items() if name not in _GIT_LOCATION}
    command = [git, "-C", str(root), "ls-files", "--cached", "--others", "--exclude-standard", "-z"]
    try:
        done = subprocess.run(command, capture_output=True, env=env, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return sorted({os.fsdecode(name) for name in done.stdout.split(b"\0") if name}) or None


def _inside(root: Path, paths: Iterable[str | Path]) -> list[str]:
    """``paths`` strictly inside ``root``, as patterns anchored at the root."""
    anchored = []
    for path in paths:
        resolved = Path(path).resolve()
        if resolved != root and resolved.is_relative_to(root):
            anchored.append(f"/{resolved.relative_to(root).as_posix()}/")
    return anchored


def _anchored(line: str, base: str) -> str | None:
    """A line of ``base/.gitignore`` rewritten to apply from the source root (gitignore(5)).

    A pattern with a slash at its start or middle is relative to its file's folder; one
    without matches at any depth below it.
    """
    if not line.strip() or line.startswith("#"):
        return None
    negate, body = (True, line[1:]) if line.startswith("!") else (False, line)
    anchored = "/" in body.rstrip("/")
    prefixed = f"{base}/{body.lstrip('/')}" if anchored else f"{base}/**/{body}"
    return f"!{prefixed}" if negate else prefixed


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return []


def _sniff(entries: list[_Entry], *, scan: bool = False) -> tuple[list[_Entry], list[Refused]]:
    """Split ``entries`` into those to ship and those whose first bytes are a credential.

    The head of every file is read, whatever its size: a key pasted at the top of a large
    notebook is a key, and 4 KiB costs the same for any file. With ``scan`` (packing, whose
    result the index keeps), a text head is also scanned by detect-secrets
    (``cloudtrain.scanning``); ``collect`` (what ``validate`` reads) keeps to the shapes of
    ``cloudtrain.secrets``, which import nothing.
    """
    kept, refused = [], []
    for entry in entries:
        try:
            with entry.path.open("rb") as file:
                head = file.read(secrets.HEAD_BYTES)
        except OSError as err:
            raise _unreadable(entry, err) from None
        kind = secrets.file_content_kind(head)
        if kind is None and scan and b"\0" not in head:  # a NUL byte: binary, where tokens are noise
            kind = scanning.detected(head.decode("utf-8", errors="replace"))
        if kind is None:
            kept.append(entry)
        else:
            refused.append(Refused(entry.arcname, kind))
    return kept, refused


def _runtime_entries() -> list[_Entry]:
    import cloudtrain_runtime

    package = Path(cloudtrain_runtime.__file__).parent
    return [
        _file_entry(f"{RUNTIME_PREFIX}/cloudtrain_runtime/{path.relative_to(package).as_posix()}", path)
        for path in sorted([*package.rglob("*.py"), *package.rglob("*.sh")])
    ]


def _file_entry(arcname: str, path: Path) -> _Entry:
    info = path.stat()
    return _Entry(arcname, path, info.st_size, info.st_mtime_ns, info.st_mode)


# -- writing the archive ---------------------------------------------------------------


class _Digest:
    """A binary sink that hashes and counts what passes through it on the way to ``file``."""

    def __init__(self, file: BinaryIO) -> None:
        self._file = file
        self.sha256 = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.sha256.update(data)
        self.size += len(data)
        self._file.write(data)
        return len(data)

    def flush(self) -> None:
        self._file.flush()


def _write(entries: list[_Entry], out: Path) -> tuple[str, int]:
    """Stream the archive of ``entries`` into ``out``; its hex digest and size.

    The same files give the same bytes, hence the same name: concurrent packs of one
    project each write their own temporary file and rename the same bundle into place.
    """
    written: list[_Digest] = []

    def archive(file: BinaryIO) -> str:
        sink = _Digest(file)
        with (
            gzip.GzipFile(fileobj=sink, mode="wb", mtime=0, compresslevel=LEVEL, filename="") as gz,
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
        ):
            for entry in entries:
                _add(tar, entry)
        written.append(sink)
        return f"{sink.sha256.hexdigest()[:16]}.tar.gz"

    _atomically(out, archive)
    return written[0].sha256.hexdigest(), written[0].size


def _atomically(folder: Path, write: Callable[[BinaryIO], str]) -> None:
    """Let ``write`` fill a new file and name it, then rename it into ``folder`` under that name.

    The file is written under a unique temporary name and renamed whole (atomic on one
    file system), so no reader, nor a concurrent writer, ever sees a partial file.
    """
    folder.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            name = write(file)
        os.replace(temporary, folder / name)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _add(tar: tarfile.TarFile, entry: _Entry) -> None:
    info = tarfile.TarInfo(entry.arcname)
    info.size = entry.size
    info.mtime = _MTIME
    info.mode = 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    try:
        with entry.path.open("rb") as file:
            tar.addfile(info, file)
    except OSError as err:  # unreadable, or shorter than its stat said: tarfile's "unexpected end of data"
        raise _unreadable(entry, err) from None


def _unreadable(entry: _Entry, err: OSError) -> SpecError:
    return SpecError(
        f"code.source_dir: cannot read {entry.arcname!r} ({err.strerror or err}). "
        f"Make it readable, or add it to {IGNORE_FILE}; if it was being written, run the command again."
    )


def _bundle(out: Path, digest: str, size: int, entries: list[_Entry], refused: list[Refused]) -> Bundle:
    contents = tuple((entry.arcname, entry.size) for entry in entries)
    return Bundle(
        path=out / f"{digest[:16]}.tar.gz",
        sha256=digest,
        files=len(entries),
        size=size,
        contents=contents,
        refused=tuple(sorted(refused, key=lambda item: item.path)),
        notes=_size_notes(contents),
    )


def _size_notes(contents: tuple[tuple[str, int], ...]) -> tuple[str, ...]:
    """Advice when the user's own files (cloudtrain's runtime left out) are too large for code."""
    mine = [(name, size) for name, size in contents if not is_runtime(name)]
    total = sum(size for _, size in mine)
    if total <= LARGE_BYTES:
        return ()
    largest = heapq.nlargest(5, mine, key=lambda item: item[1])
    listed = ", ".join(f"{name} ({size_text(size)})" for name, size in largest)
    return (
        f"The code bundle holds {size_text(total)} of files; the largest: {listed}. "
        f"Bundles are for code: read data through a data: channel, and list large files in {IGNORE_FILE}.",
    )


def is_runtime(arcname: str) -> bool:
    """Whether a bundle entry is cloudtrain's own runtime (``image: auto``), not the user's code."""
    return arcname.startswith(f"{RUNTIME_PREFIX}/")


def size_text(size: int) -> str:
    """``803.2 MB``: decimal units, as disks and clouds count; small sizes in kB or bytes.

    Example:
    >>> size_text(803_200_000), size_text(2_500_000_000), size_text(12_345), size_text(0)
    ('803.2 MB', '2.5 GB', '12.3 kB', '0 B')
    """
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


# -- the index of earlier packs --------------------------------------------------------


def _index_key(root: Path, entries: list[_Entry], include_runtime: bool) -> str:
    """What a pack depends on: the files' names and stat, and the options of the archive."""
    stats = [[e.arcname, str(e.path), e.size, e.mtime_ns, e.mode] for e in entries]
    facts = [_FORMAT, LEVEL, str(root), include_runtime, stats]
    return hashlib.sha256(json.dumps(facts).encode()).hexdigest()


def _recall(out: Path, key: str, selection: _Selection, runtime: list[_Entry]) -> Bundle | None:
    """The bundle an earlier pack of the same files gave, if the index vouches for it."""
    try:
        record = json.loads((out / "index" / f"{key}.json").read_text())
        digest, size, scanned = str(record["sha256"]), int(record["size"]), int(record["scanned_ns"])
        sniffed = [Refused(str(path), str(reason)) for path, reason in record["refused"]]
        if (out / f"{digest[:16]}.tar.gz").stat().st_size != size:
            return None
    except (OSError, ValueError, KeyError, TypeError):  # none yet, or corrupt: pack again
        return None
    if any(entry.mtime_ns >= scanned - _racy_ns(entry.mtime_ns) for entry in selection.files):
        return None
    refused_names = {item.path for item in sniffed}
    kept = [entry for entry in selection.files if entry.arcname not in refused_names]
    entries = sorted([*kept, *runtime], key=lambda entry: entry.arcname)
    return _bundle(out, digest, size, entries, [*selection.refused, *sniffed])


def _racy_ns(mtime_ns: int) -> int:
    return _RACY_COARSE_NS if mtime_ns % 1_000_000_000 == 0 else _RACY_NS


def _remember(out: Path, key: str, started: int, bundle: Bundle, sniffed: list[Refused]) -> None:
    """Record what this pack gave under ``key``; concurrent packs each write a whole file."""
    record = {
        "sha256": bundle.sha256,
        "size": bundle.size,
        "scanned_ns": started,
        "refused": [[item.path, item.reason] for item in sniffed],
    }

    def entry(file: BinaryIO) -> str:
        file.write(json.dumps(record).encode())
        return f"{key}.json"

    _atomically(out / "index", entry)
