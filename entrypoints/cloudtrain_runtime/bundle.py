"""The code bundle: checked against the SHA-256 in its name, then unpacked within limits.

The SDK names every bundle by the SHA-256 of its bytes (``<first 16 hex digits>.tar.gz``,
``cloudtrain.bundle``), so before anything is unpacked the runtime hashes the file and
compares. Then, in three steps, nothing is written into the code folder until the
whole archive has been checked:

1. **Decompress** into a scratch file, stopping past the size limit: at most
   ``ratio`` × the packed size (a 4.7 MB archive may not grow to 1 GiB), never less
   than ``floor_bytes`` and never more than ``max_bytes``. A truncated file or a
   corrupt deflate stream (gzip checks its CRC) is an error here.
2. **Inspect** every member: at most ``members`` of them, their sizes within the same
   limit, a relative path without "..", accepted by tarfile's ``data`` filter (no links
   out of the folder, no devices), and nothing but zeros after the last one (a damaged
   header would otherwise end the archive early, silently).
3. **Extract** with the same filter.

Each failure is one ``ConfigError`` line naming ``CLOUDTRAIN_BUNDLE`` and the file.

Example:
>>> Limits().max_unpacked(4_700_000) < 2**30
True
"""

from __future__ import annotations

import gzip
import hashlib
import re
import shutil
import tarfile
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from cloudtrain_runtime.errors import ConfigError

BUNDLE_ENV = "CLOUDTRAIN_BUNDLE"
CHUNK = 1 << 20
# Where ``cloudtrain.bundle`` packs cloudtrain's own runtime for ``image: auto``:
# not the user's code, so not part of ``code_digest``.
RUNTIME_PREFIX = ".cloudtrain-runtime"
# The SDK uses the first 16 hex digits of the SHA-256; a longer prefix is checked as well.
_DIGEST_NAME = re.compile(r"([0-9a-f]{16,64})\.tar\.gz")


@dataclass(frozen=True)
class Limits:
    """How large a bundle may unpack, and into how many files.

    Source code packs 3-10×; 100× leaves room for repetitive text and still refuses a
    compression bomb. Keep data and model weights out of the bundle: they belong in
    storage, and the ``.cloudtrainignore`` file keeps them out.
    """

    members: int = 50_000
    ratio: int = 100
    floor_bytes: int = 16 << 20
    max_bytes: int = 1 << 30

    def max_unpacked(self, packed: int) -> int:
        """The most bytes an archive of ``packed`` bytes may unpack to."""
        return min(self.max_bytes, max(self.floor_bytes, self.ratio * packed))


def unpack(bundle: Path, scratch: Path, *, limits: Limits | None = None) -> Path:
    """Check ``bundle`` and extract it into a fresh folder under ``scratch``; return the folder.

    Raises:
        ConfigError: when the bundle is missing, does not match its name, is damaged,
            exceeds a limit or has a member that would land outside the folder.
    """
    limits = limits or Limits()
    packed = verify(bundle)
    with tempfile.TemporaryDirectory(prefix="bundle-", dir=scratch) as work:
        tar_file = Path(work, "bundle.tar")
        allowed = limits.max_unpacked(packed)
        _decompress(bundle, tar_file, allowed)
        dest = Path(tempfile.mkdtemp(prefix="code-", dir=scratch))
        try:
            _extract(bundle, tar_file, dest, limits.members, allowed)
        except BaseException:
            shutil.rmtree(dest, ignore_errors=True)
            raise
    return dest


def verify(bundle: Path) -> int:
    """Check that ``bundle``'s SHA-256 starts with the digits in its name; return its size.

    Raises:
        ConfigError: when the name carries no digest, the file is missing or the digest differs.
    """
    match = _DIGEST_NAME.fullmatch(bundle.name)
    if not match:
        raise ConfigError(
            f"{BUNDLE_ENV}: the code bundle {str(bundle)!r} is not named by its SHA-256 "
            "('<hex digest>.tar.gz', as cloudtrain uploads it), so it cannot be checked. "
            "Submit the job with cloudtrain to upload the bundle."
        )
    digest, size = hashlib.sha256(), 0
    for chunk in _chunks(bundle):
        digest.update(chunk)
        size += len(chunk)
    expected = match.group(1)
    if not digest.hexdigest().startswith(expected):
        raise ConfigError(
            f"{BUNDLE_ENV}: the code bundle {str(bundle)!r} does not match its name: its SHA-256 "
            f"starts {digest.hexdigest()[: len(expected)]}. It was damaged or replaced after upload; "
            "submit the job again to upload it afresh."
        )
    return size


def code_digest(bundle: Path) -> str:
    """A digest of the user's files in ``bundle`` (names and bytes), cloudtrain's runtime left out.

    What a run's code is (``cloudtrain_runtime.backups``): a new cloudtrain version
    shipped beside the same files is the same code, one changed line is not. The SDK
    asks it of the bundle it packed, the runtime of the bundle it unpacks; both read
    the same archive, so both get the same digest.

    Raises:
        ConfigError: the bundle cannot be read as a gzip'd tar archive.
    """
    digest = hashlib.sha256()
    try:
        with tarfile.open(bundle, "r:gz") as tar:
            for member in tar:
                if member.isfile() and not member.name.startswith(f"{RUNTIME_PREFIX}/"):
                    digest.update(f"{member.name}\0{member.size}\0".encode())
                    file = tar.extractfile(member)
                    assert file is not None  # a regular file's data
                    while chunk := file.read(CHUNK):
                        digest.update(chunk)
    except (tarfile.TarError, OSError, EOFError, zlib.error) as err:
        raise ConfigError(f"{BUNDLE_ENV}: cannot read the code bundle {str(bundle)!r}: {err}") from None
    return digest.hexdigest()[:16]


def _chunks(bundle: Path) -> Iterator[bytes]:
    try:
        with bundle.open("rb") as file:
            yield from iter(lambda: file.read(CHUNK), b"")
    except FileNotFoundError:
        raise ConfigError(f"{BUNDLE_ENV}: the code bundle {str(bundle)!r} does not exist.") from None
    except (OSError, ValueError) as err:  # ValueError: a NUL in the path
        reason = err.strerror if isinstance(err, OSError) else err
        raise ConfigError(f"{BUNDLE_ENV}: cannot read {str(bundle)!r} ({reason}).") from None


def _decompress(bundle: Path, target: Path, allowed: int) -> None:
    written = 0
    try:
        with gzip.open(bundle, "rb") as packed, target.open("wb") as out:
            while chunk := packed.read(CHUNK):
                written += len(chunk)
                if written > allowed:
                    raise ConfigError(
                        f"{BUNDLE_ENV}: the code bundle {str(bundle)!r} unpacks to more than {allowed} "
                        f"bytes, the limit for its packed size. Keep data and model files out of "
                        "code.source_dir (list them in .cloudtrainignore) and read them from storage."
                    )
                out.write(chunk)
    except EOFError:
        raise ConfigError(
            f"{BUNDLE_ENV}: the code bundle {str(bundle)!r} is truncated: its compressed stream ends early."
        ) from None
    except (gzip.BadGzipFile, zlib.error) as err:
        raise ConfigError(f"{BUNDLE_ENV}: the code bundle {str(bundle)!r} is corrupt ({err}).") from None
    except OSError as err:
        raise ConfigError(f"{BUNDLE_ENV}: cannot unpack {str(bundle)!r}: {err}") from None


def _extract(bundle: Path, tar_file: Path, dest: Path, members: int, allowed: int) -> None:
    try:
        with tarfile.open(tar_file, "r:") as tar:
            checked = _checked_members(bundle, tar, dest, members, allowed)
            _check_end(bundle, tar_file, tar.offset)
            tar.extractall(dest, members=checked, filter="data")
    except (tarfile.TarError, OSError) as err:
        raise ConfigError(f"{BUNDLE_ENV}: cannot unpack {str(bundle)!r}: {err}") from None


def _checked_members(
    bundle: Path, tar: tarfile.TarFile, dest: Path, most: int, allowed: int
) -> list[tarfile.TarInfo]:
    checked: list[tarfile.TarInfo] = []
    total = 0
    for member in tar:
        total += member.size
        if len(checked) == most or total > allowed:
            what = f"more than {most} files" if len(checked) == most else f"more than {allowed} bytes"
            raise ConfigError(
                f"{BUNDLE_ENV}: the code bundle {str(bundle)!r} holds {what}. Keep data, model files "
                "and environments out of code.source_dir (list them in .cloudtrainignore)."
            )
        _check_path(bundle, member)
        tarfile.data_filter(member, str(dest))
        checked.append(member)
    return checked


def _check_path(bundle: Path, member: tarfile.TarInfo) -> None:
    # The data filter would strip a leading "/" and extract the member anyway; cloudtrain
    # packs relative paths only, so either form means the archive was made to escape.
    path = PurePosixPath(member.name)
    if path.is_absolute() or ".." in path.parts:
        raise ConfigError(
            f"{BUNDLE_ENV}: the code bundle {str(bundle)!r} has a member outside its folder: "
            f"{member.name!r}. cloudtrain packs relative paths only; rebuild the bundle with cloudtrain."
        )


def _check_end(bundle: Path, tar_file: Path, offset: int) -> None:
    """Only zero blocks may follow the last member; anything else is a header tarfile gave up on."""
    with tar_file.open("rb") as file:
        file.seek(offset)
        for chunk in iter(lambda: file.read(CHUNK), b""):
            if chunk.strip(b"\0"):
                raise ConfigError(
                    f"{BUNDLE_ENV}: the code bundle {str(bundle)!r} is damaged: unreadable data follows "
                    f"its last readable file, at byte {offset} of the archive."
                )
