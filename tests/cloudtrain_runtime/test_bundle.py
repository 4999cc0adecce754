"""The code bundle: checked against its name, unpacked within limits, every failure one line."""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from cloudtrain.bundle import pack
from cloudtrain_runtime import bundle, usercode
from cloudtrain_runtime.errors import ConfigError

Member = tuple[tarfile.TarInfo, bytes]


def _member(name: str, content: bytes = b"x = 1\n", kind: bytes = tarfile.REGTYPE, link: str = "") -> Member:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = kind, link, len(content) if kind == tarfile.REGTYPE else 0
    return info, content


def _tar(members: list[Member]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for info, content in members:
            tar.addfile(info, io.BytesIO(content) if info.isfile() else None)
    return raw.getvalue()


def _named(folder: Path, data: bytes) -> Path:
    """``data`` saved under its own digest, as the SDK names bundles."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{hashlib.sha256(data).hexdigest()[:16]}.tar.gz"
    path.write_bytes(data)
    return path


def _source(tmp_path: Path) -> Path:
    (tmp_path / "src" / "trainer").mkdir(parents=True)
    (tmp_path / "src" / "trainer" / "task.py").write_text("def build_model(config):\n    return None\n" * 40)
    return tmp_path / "src"


def _packed(tmp_path: Path) -> bytes:
    return pack(_source(tmp_path), tmp_path / "packed").path.read_bytes()


def _refused(path: Path, scratch: Path, limits: bundle.Limits | None = None) -> str:
    """The one error line ``path`` ends in; nothing may be left in ``scratch``."""
    scratch.mkdir(exist_ok=True)
    with pytest.raises(ConfigError) as err:
        bundle.unpack(path, scratch, limits=limits)
    assert list(scratch.iterdir()) == []
    message = str(err.value)
    assert "\n" not in message and message.startswith("CLOUDTRAIN_BUNDLE: ")
    return message


def test_a_real_bundle_with_the_runtime_unpacks(tmp_path: Path) -> None:
    packed = pack(_source(tmp_path), tmp_path / "out", include_runtime=True)
    dest = bundle.unpack(packed.path, tmp_path)
    assert (dest / "trainer" / "task.py").read_text().startswith("def build_model")
    runtime = dest / ".cloudtrain-runtime" / "cloudtrain_runtime"
    assert (runtime / "main.py").is_file() and (runtime / "providers" / "sagemaker.py").is_file()
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(["out", "src", dest.name])


def test_bundle_variable_is_resolved_under_the_root(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("")
    packed = pack(tmp_path / "src", tmp_path / "gcs" / "b" / "code")
    env = {"CLOUDTRAIN_BUNDLE": f"/gcs/b/code/{packed.name}"}
    dest = usercode.code_dir(env, str(tmp_path))
    assert (dest / "a.py").is_file() and dest.parent == tmp_path / "tmp" / "cloudtrain"


def test_links_inside_the_folder_are_kept(tmp_path: Path) -> None:
    members = [_member("pkg/real.py"), _member("pkg/alias.py", kind=tarfile.SYMTYPE, link="real.py")]
    dest = bundle.unpack(_named(tmp_path / "in", gzip.compress(_tar(members))), tmp_path)
    assert (dest / "pkg" / "alias.py").read_text() == "x = 1\n"


def test_a_4_7_mb_archive_may_not_grow_to_1_gib() -> None:
    limits = bundle.Limits()
    assert limits.max_unpacked(4_700_000) == 470_000_000  # 100 × the packed size
    assert limits.max_unpacked(1_000) == 16 << 20  # tiny bundles: a 16 MiB floor
    assert limits.max_unpacked(50_000_000) == 1 << 30  # never more than 1 GiB


def _flip_a_byte(data: bytes) -> bytes:
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0xFF  # inside the deflate stream, past the 10-byte header
    return bytes(flipped)


def _wrong_digest(tmp_path: Path) -> Path:
    path = _named(tmp_path / "in", _packed(tmp_path))
    return path.rename(path.with_name(f"{'0' * 16}.tar.gz"))


def _renamed(tmp_path: Path) -> Path:
    path = _named(tmp_path / "in", _packed(tmp_path))
    return path.rename(path.with_name("bundle.tar.gz"))


def _zeros_bomb(tmp_path: Path) -> Path:
    # 64 MiB of zeros pack to under 300 KB: over 200×, past the 16 MiB floor.
    return _named(tmp_path / "in", gzip.compress(_tar([_member("weights.bin", bytes(64 << 20))]), 1))


def _damaged_header(tmp_path: Path) -> Path:
    tar = bytearray(_tar([_member("a.py"), _member("b.py"), _member("c.py")]))
    tar[1024 + 148 : 1024 + 156] = b"9999999\0"  # b.py's header checksum (ustar offset 148)
    return _named(tmp_path / "in", gzip.compress(bytes(tar)))


CASES: dict[str, tuple[Callable[[Path], Path], str]] = {
    # name: (how the bundle is made, what the one line says)
    "missing": (lambda tmp: tmp / "0123456789abcdef.tar.gz", "does not exist"),
    "wrong digest": (_wrong_digest, "does not match its name: its SHA-256 starts"),
    "no digest in the name": (_renamed, "is not named by its SHA-256"),
    "truncated": (lambda tmp: _named(tmp / "in", _packed(tmp)[:-20]), "is truncated"),
    "flipped byte": (lambda tmp: _named(tmp / "in", _flip_a_byte(_packed(tmp))), "is corrupt"),
    "not gzip": (lambda tmp: _named(tmp / "in", b"print('hi')\n" * 100), "is corrupt (Not a gzipped file"),
    "gzip of no tar": (lambda tmp: _named(tmp / "in", gzip.compress(b"hello" * 200)), "cannot unpack"),
    "zip bomb": (_zeros_bomb, "unpacks to more than"),
    "damaged header": (_damaged_header, "is damaged: unreadable data follows its last readable file"),
    "member data cut": (
        lambda tmp: _named(tmp / "in", gzip.compress(_tar([_member("a.py", b"x" * 5000)])[:2048])),
        "unexpected end of data",
    ),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_broken_bundles_end_in_one_line(tmp_path: Path, case: str) -> None:
    make, message = CASES[case]
    assert message in _refused(make(tmp_path), tmp_path / "scratch")


@pytest.mark.parametrize(
    ("member", "message"),
    [
        (_member("../escape.py"), "has a member outside its folder: '../escape.py'"),  # climbs out
        (_member("pkg/../../escape.py"), "has a member outside its folder"),  # climbs out, later
        (_member("/etc/cron.d/evil"), "has a member outside its folder: '/etc/cron.d/evil'"),  # absolute
        (_member("innocent", kind=tarfile.SYMTYPE, link="/etc/passwd"), "cannot unpack"),  # absolute link
        (_member("up", kind=tarfile.SYMTYPE, link="../../outside"), "cannot unpack"),  # link out
        (_member("hard", kind=tarfile.LNKTYPE, link="../outside"), "cannot unpack"),  # hard link out
        (_member("tty", kind=tarfile.CHRTYPE), "cannot unpack"),  # a device
    ],
)
def test_members_that_escape_the_folder_are_refused(tmp_path: Path, member: Member, message: str) -> None:
    path = _named(tmp_path / "in", gzip.compress(_tar([_member("ok.py"), member])))
    assert message in _refused(path, tmp_path / "scratch")
    assert not (tmp_path / "escape.py").exists()


def test_too_many_members_are_refused(tmp_path: Path) -> None:
    path = _named(tmp_path / "in", gzip.compress(_tar([_member(f"m{i}.py") for i in range(4)])))
    message = _refused(path, tmp_path / "scratch", bundle.Limits(members=3))
    assert "holds more than 3 files" in message


def test_the_code_digest_is_the_users_files_alone(tmp_path: Path) -> None:
    source = _source(tmp_path)
    plain = pack(source, tmp_path / "plain")
    with_runtime = pack(source, tmp_path / "auto", include_runtime=True)
    assert plain.sha256 != with_runtime.sha256  # another archive...
    assert bundle.code_digest(plain.path) == bundle.code_digest(with_runtime.path)  # ...of the same code

    (source / "trainer" / "task.py").write_text("def build_model(config):\n    return 24\n")
    assert bundle.code_digest(pack(source, tmp_path / "edited").path) != bundle.code_digest(plain.path)


def test_an_unreadable_bundle_has_no_code_digest_but_one_line(tmp_path: Path) -> None:
    broken = _named(tmp_path, b"not gzip at all")
    with pytest.raises(ConfigError, match="CLOUDTRAIN_BUNDLE: cannot read the code bundle"):
        bundle.code_digest(broken)
