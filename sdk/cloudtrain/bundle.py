"""Pack the user's source directory into a reproducible, content-addressed tarball.

Every provider ships code the same way: one ``.tar.gz`` named by the SHA-256 of its
bytes, so an unchanged project is never uploaded twice and the container needs no cloud
SDK to fetch it (Vertex reads it through ``/gcs``, SageMaker as an input channel, local
from a folder). The tarball is byte-for-byte reproducible: sorted entries, fixed
mtimes, owners and modes, and a gzip header without a timestamp.

Example:
>>> import tempfile, pathlib
>>> src, out = pathlib.Path(tempfile.mkdtemp()), pathlib.Path(tempfile.mkdtemp())
>>> _ = (src / "task.py").write_text("print('hi')\\n")
>>> a, b = pack(src, out), pack(src, out)
>>> a.sha256 == b.sha256, a.files
(True, 1)
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pathspec

from cloudtrain.errors import SpecError

# Never shipped, whatever the ignore files say: VCS data, local state and credentials.
ALWAYS_EXCLUDED = [
    ".git/",
    ".hg/",
    ".svn/",
    ".cloudtrain/",
    "__pycache__/",
    "*.pyc",
    ".venv/",
    "venv/",
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "*.p12",
    "credentials.json",
    "service-account*.json",
    "*-credentials.json",
    ".aws/",
    ".config/gcloud/",
    ".netrc",
    ".pypirc",
    "id_rsa*",
]
IGNORE_FILES = (".gitignore", ".cloudtrainignore")
RUNTIME_PREFIX = ".cloudtrain-runtime"
_MTIME = 315532800  # 1980-01-01, the earliest time zip and wheel tools accept


@dataclass(frozen=True)
class Bundle:
    """A packed source tree: where the tarball is, its hash and what it holds."""

    path: Path
    sha256: str
    files: int
    size: int

    @property
    def name(self) -> str:
        """The content-addressed file name, e.g. ``3f2a9c0d1e7b6a55.tar.gz``."""
        return f"{self.sha256[:16]}.tar.gz"

    def uri_under(self, code_root: str) -> str:
        """Where the bundle lives under a storage ``code`` prefix."""
        return f"{code_root.rstrip('/')}/{self.name}"

    def __repr__(self) -> str:
        return f"Bundle(name={self.name!r}, files={self.files}, size={self.size})"


def collect(source_dir: str | Path) -> list[Path]:
    """The files to ship, relative to ``source_dir``, sorted.

    Honors ``.gitignore`` and ``.cloudtrainignore`` (gitignore syntax) found at the
    root, plus the fixed exclusions in ``ALWAYS_EXCLUDED``.
    """
    root = Path(source_dir)
    if not root.is_dir():
        raise SpecError(
            f"code.source_dir: {str(root)!r} is not a directory. Point it at your project folder."
        )
    patterns = list(ALWAYS_EXCLUDED)
    for name in IGNORE_FILES:
        ignore = root / name
        if ignore.is_file():
            patterns += ignore.read_text().splitlines()
    spec = pathspec.GitIgnoreSpec.from_lines(patterns)
    return sorted(path for path in _walk(root, spec))


def _walk(root: Path, spec: pathspec.GitIgnoreSpec) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        dirnames[:] = [d for d in dirnames if not spec.match_file(f"{(rel_dir / d).as_posix()}/")]
        for filename in filenames:
            rel = rel_dir / filename
            full = root / rel
            if full.is_symlink() or not full.is_file() or spec.match_file(rel.as_posix()):
                continue
            yield rel


def pack(source_dir: str | Path, out_dir: str | Path, *, include_runtime: bool = False) -> Bundle:
    """Write the reproducible tarball of ``source_dir`` into ``out_dir`` and return it.

    Args:
        source_dir: the user's project folder.
        out_dir: where to write ``<hash>.tar.gz``.
        include_runtime: also ship the ``cloudtrain_runtime`` package under
            ``.cloudtrain-runtime/`` so a stock TensorFlow image can run it.
    """
    root = Path(source_dir)
    entries = [(rel.as_posix(), root / rel) for rel in collect(root)]
    if include_runtime:
        entries += _runtime_entries()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for arcname, path in entries:
            _add(tar, arcname, path.read_bytes())
    data = _gzip(raw.getvalue())
    digest = hashlib.sha256(data).hexdigest()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    bundle = Bundle(path=out / f"{digest[:16]}.tar.gz", sha256=digest, files=len(entries), size=len(data))
    if not bundle.path.exists():
        tmp = bundle.path.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(bundle.path)
    return bundle


def _runtime_entries() -> list[tuple[str, Path]]:
    import cloudtrain_runtime

    package = Path(cloudtrain_runtime.__file__).parent
    return [
        (f"{RUNTIME_PREFIX}/cloudtrain_runtime/{path.relative_to(package).as_posix()}", path)
        for path in sorted(package.rglob("*.py"))
    ]


def _add(tar: tarfile.TarFile, arcname: str, content: bytes) -> None:
    info = tarfile.TarInfo(arcname)
    info.size = len(content)
    info.mtime = _MTIME
    info.mode = 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    tar.addfile(info, io.BytesIO(content))


def _gzip(data: bytes) -> bytes:
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, compresslevel=9, filename="") as gz:
        gz.write(data)
    return out.getvalue()
