"""Code bundles are reproducible, content-addressed, cached by stat, and never ship secrets or local state."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import tarfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cloudtrain import api, bundle
from cloudtrain.bundle import Bundle, collect, pack
from cloudtrain.errors import SpecError
from cloudtrain.planning import plan
from cloudtrain.specfile import load_spec
from tests.conftest import Result

LONG_AGO_NS = 1_600_000_000_123_456_789  # 2020: far outside any "just changed" window
TASK = "def build_model(config): ...\n\n\ndef make_dataset(context): ...\n"
# An allow-list .gitignore: ignore everything, then re-include folders, code and JSON.
ALLOW_LIST = "*\n!*/\n!*.py\n!*.json\n"
RunCli = Callable[..., Result]
PEM = (
    "-----BEGIN "
    + "RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n-----END RSA PRIVATE KEY-----\n"
)


def make_project(root: Path) -> Path:
    write(root / "trainer" / "task.py", TASK)
    write(root / "trainer" / "__init__.py", "")
    write(root / "README.md", "hi\n")
    return root


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def settle(root: Path) -> None:
    """Date every file long ago, as in a project last edited yesterday."""
    for path in [root, *root.rglob("*")]:
        os.utime(path, ns=(LONG_AGO_NS, LONG_AGO_NS), follow_symlinks=False)


def shipped(packed: Bundle) -> set[str]:
    return {name for name, _ in packed.contents}


def refused(packed: Bundle) -> dict[str, str]:
    return {item.path: item.reason for item in packed.refused}


@pytest.fixture(params=["git", "ignore-files"])
def listing(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], None]:
    """Prepare a project folder for one way of listing: a git work tree, or no git at all."""
    if request.param == "ignore-files":
        monkeypatch.setenv("PATH", "")  # git cannot be found: the ignore files are read instead
        return lambda root: None
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    return lambda root: subprocess.run(["git", "init", "-q", str(root)], check=True)


# -- reproducible and content-addressed -------------------------------------------------


def test_same_content_same_hash_regardless_of_mtime(tmp_path: Path) -> None:
    src = make_project(tmp_path / "src")
    first = pack(src, tmp_path / "out")
    os.utime(src / "README.md", (1, 1))
    second = pack(src, tmp_path / "out")
    assert first.sha256 == second.sha256
    assert first.name == f"{first.sha256[:16]}.tar.gz"


def test_changed_content_changes_hash(tmp_path: Path) -> None:
    src = make_project(tmp_path / "src")
    before = pack(src, tmp_path / "out")
    (src / "README.md").write_text("changed\n")
    assert pack(src, tmp_path / "out").sha256 != before.sha256


def test_same_files_give_the_same_bytes_whatever_the_cache_holds(tmp_path: Path) -> None:
    src = make_project(tmp_path / "src")
    settle(src)
    pack(src, tmp_path / "warm")
    warm = pack(src, tmp_path / "warm")  # from the index
    cold = pack(src, tmp_path / "cold")
    assert warm == dataclasses.replace(cold, path=warm.path)
    assert warm.path.read_bytes() == cold.path.read_bytes()


def test_tarball_is_normalised(tmp_path: Path) -> None:
    src = make_project(tmp_path / "src")
    (src / "run.sh").write_text("#!/bin/sh\n")
    (src / "run.sh").chmod(0o755)
    packed = pack(src, tmp_path / "out")
    with tarfile.open(packed.path) as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == sorted(m.name for m in members)
    assert all(m.isfile() and m.mtime == members[0].mtime and m.uid == 0 and m.mode == 0o644 for m in members)
    assert [(m.name, m.size) for m in members] == list(packed.contents)
    assert packed.size == packed.path.stat().st_size


def test_runtime_source_can_travel_in_the_bundle(tmp_path: Path) -> None:
    src = make_project(tmp_path / "src")
    with tarfile.open(pack(src, tmp_path / "out", include_runtime=True).path) as tar:
        names = tar.getnames()
    assert ".cloudtrain-runtime/cloudtrain_runtime/__init__.py" in names


def test_missing_source_dir_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"code\.source_dir"):
        collect(tmp_path / "nope")


# -- credentials never ship ---------------------------------------------------------------

CREDENTIAL_FILES = [
    "my-project-1a2b3c4d5e6f.json",  # a key as the Cloud console names it: <project>-<12 hex>.json
    "key.json",  # the name most guides give a downloaded service-account key
    "keys/prod-key.json",  # *-key.json
    "service-account-prod.json",  # service-account*.json
    "application_default_credentials.json",  # gcloud auth application-default login
    "credentials.json",  # generic credentials
    "Credentials.JSON",  # names are matched whatever their case
    "deploy-credentials.json",  # *-credentials.json
    "id_rsa",  # SSH private keys
    "deploy/id_ed25519",
    "id_ecdsa",
    "id_dsa",
    ".ssh/config",  # anything in an .ssh folder
    ".docker/config.json",  # registry auth
    "ops/.kube/config",  # cluster credentials, at any depth
    ".git-credentials",  # git credential store
    ".npmrc",  # npm auth tokens
    ".boto",  # boto / gsutil keys
    ".s3cfg",  # s3cmd keys
    ".envrc",  # direnv
    ".env",  # dotenv
    ".env.production",  # dotenv variants
    "terraform.tfstate",  # Terraform state holds secrets in plain text
    "infra/terraform.tfstate.backup",
    "signing.jks",  # Java keystore
    "client.pfx",  # PKCS #12
    "client.p12",
    "tls/server.pem",  # PEM keys
    "tls/server.key",
    ".bash_history",  # shell history
    ".zsh_history",
    ".netrc",  # machine passwords
    ".pypirc",  # PyPI tokens
    ".aws/credentials",  # AWS profiles
    ".config/gcloud/credentials.db",  # gcloud's own credential store
    "secrets.yaml",  # regression: a secrets file shipped in the bundle
    "config/secrets.yml",
    "secrets.json",
    "release.keystore",  # Android / Java keystores
    ".pgpass",  # PostgreSQL passwords
    ".htpasswd",  # Apache passwords
    "vault.kdbx",  # KeePass
    ".dockercfg",  # old Docker registry credentials
]


def pack_re_included(tmp_path: Path, listing: Callable[[Path], None], path: str) -> Bundle:
    """Pack a project holding ``path``, which both ignore files re-include by name."""
    src = make_project(tmp_path / "src")
    listing(src)
    write(src / ".gitignore", f"{ALLOW_LIST}!.*\n!*.*\n!{path}\n")
    write(src / ".cloudtrainignore", f"!{path}\n")
    write(src / path, "harmless bytes, dangerous name\n")
    packed = pack(src, tmp_path / "out")
    assert "trainer/task.py" in shipped(packed)
    return packed


@pytest.mark.parametrize("path", CREDENTIAL_FILES)
def test_credential_files_never_ship_even_when_ignore_files_re_include_them(
    tmp_path: Path, listing: Callable[[Path], None], path: str
) -> None:
    packed = pack_re_included(tmp_path, listing, path)
    assert path not in shipped(packed)
    assert path in refused(packed)  # refused, not silently ignored: the ignore files let it through
    assert Path(path) not in collect(tmp_path / "src")


SA_KEY = json.dumps(
    {
        "type": "service_account",
        "project_id": "my-project",
        "private_key_id": "0123456789abcdef0123456789abcdef01234567",
        "private_key": PEM,
        "client_email": "trainer@my-project.iam.gserviceaccount.com",
    },
    indent=2,
)
AWS_KEY_ID = "AKIA" + "IOSFODNN7EXAMPLE"  # AWS's documented example key
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"

SNIFFED = [
    ("notes/deploy.txt", PEM, "a private key (PEM)"),  # PEM private key under an innocent name
    ("ssh_host", "-----BEGIN " + "OPENSSH PRIVATE KEY-----\nb3Blbg==\n", "a private key (PEM)"),
    ("config/settings.json", SA_KEY, "a service-account key (JSON)"),  # renamed key file
    ("explore.ipynb", json.dumps({"cells": [{"source": [SA_KEY]}]}), "a service-account key (JSON)"),
    ("adc.json", '{"type": "authorized_user", "refresh_token": "1//0g"}', "a user's refresh token (JSON)"),
    ("profile.cfg", f"[default]\naws_secret_access_key = {AWS_SECRET}\n", "an AWS secret access key"),
    ("settings.py", f'KEY = "{AWS_KEY_ID}"\nSECRET = "{AWS_SECRET}"\n', "an AWS secret access key"),
]
# Found by detect-secrets while packing (collect, what validate reads, keeps to the own shapes).
SCANNED = [
    ("deploy.sh", "git clone https://ghp_" + "a1B2c3D4e5" * 4 + "@github.com/org/repo\n", "a GitHub token"),
    ("notify.py", 'TOKEN = "xoxb-' + "123456789012-1234567890123-" + 'AbCdEfGh" * 3\n', "a Slack token"),
    ("db.cfg", "url = postgres://admin:" + "hunter2@db.internal/app\n", "a URL with a password"),
]
NOT_SNIFFED = [
    ("ca.txt", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"),  # certificates are public
    ("client.json", '{"type": "service_account", "client_email": "x@y"}'),  # no private key
    ("lock.txt", "rev = 0123456789abcdef0123456789abcdef01234567\n"),  # 40 characters without a key ID
    ("docs.md", "Set aws_secret_access_key in ~/.aws/credentials.\n"),  # the words, not a key
]


@pytest.mark.parametrize(("path", "content", "reason"), SNIFFED)
def test_credentials_are_recognised_by_content(tmp_path: Path, path: str, content: str, reason: str) -> None:
    src = make_project(tmp_path / "src")
    write(src / path, content)
    packed = pack(src, tmp_path / "out")
    assert refused(packed) == {path: reason}
    assert Path(path) not in collect(src)


@pytest.mark.parametrize(("path", "content"), NOT_SNIFFED)
def test_near_misses_ship(tmp_path: Path, path: str, content: str) -> None:
    src = make_project(tmp_path / "src")
    write(src / path, content)
    packed = pack(src, tmp_path / "out")
    assert path in shipped(packed)
    assert packed.refused == ()


def test_content_refusals_are_remembered_by_the_index(tmp_path: Path) -> None:
    src = make_project(tmp_path / "src")
    notes = write(src / "notes.txt", PEM)
    settle(src)
    first = pack(src, tmp_path / "out")
    notes.write_text("x" * len(PEM))  # same size and mtime: a second sniff would find nothing
    os.utime(notes, ns=(LONG_AGO_NS, LONG_AGO_NS))
    assert refused(pack(src, tmp_path / "out")) == refused(first) == {"notes.txt": "a private key (PEM)"}


# -- ignore files, as git reads them ------------------------------------------------------


def test_nested_gitignore_and_info_exclude_apply_as_in_git(
    tmp_path: Path, listing: Callable[[Path], None]
) -> None:
    src = make_project(tmp_path / "src")
    listing(src)
    write(src / ".git" / "info" / "exclude", "scratch/\n")
    write(src / ".gitignore", "*.log\n")
    write(src / "sub" / ".gitignore", "!keep.log\n/top.py\nlocal/\n")
    write(src / ".cloudtrainignore", "*.csv\n")
    for path in [
        "root.log",
        "sub/keep.log",
        "sub/other.log",
        "sub/top.py",
        "sub/deeper/top.py",
        "sub/local/x.py",
        "other/local/x.py",
        "scratch/notes.py",
        "data.csv",
    ]:
        write(src / path, "x\n")
    names = {path.as_posix() for path in collect(src)}
    assert {"sub/keep.log", "sub/deeper/top.py", "other/local/x.py", "trainer/task.py"} <= names
    assert not names & {
        "root.log",
        "sub/other.log",
        "sub/top.py",
        "sub/local/x.py",
        "scratch/notes.py",
        "data.csv",
    }


def test_git_ships_what_it_tracks_and_nested_repositories_are_walked(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    src = make_project(tmp_path / "src")
    subprocess.run(["git", "init", "-q", str(src)], check=True)
    write(src / ".gitignore", "*.txt\n")
    write(src / "tracked.txt", "x\n")
    subprocess.run(["git", "-C", str(src), "add", "-f", "tracked.txt"], check=True)
    write(src / "vendor" / "lib" / "mod.py", "x\n")
    write(src / "vendor" / "lib" / ".gitignore", "*.tmp\n")
    write(src / "vendor" / "lib" / "junk.tmp", "x\n")
    subprocess.run(["git", "init", "-q", str(src / "vendor" / "lib")], check=True)
    names = {path.as_posix() for path in collect(src)}
    assert {"tracked.txt", "vendor/lib/mod.py"} <= names  # git ships a tracked file whatever .gitignore says
    assert "vendor/lib/junk.tmp" not in names
    assert not any(name.startswith("vendor/lib/.git/") for name in names)


HYGIENE = [
    ".git/config",  # version control
    ".venv/lib/site.py",  # virtual environments
    "venv/bin/activate",
    ".cloudtrain/state.json",  # cloudtrain's local state
    "outputs/model/saved_model.pb",  # the local provider's default storage root
    "trainer/__pycache__/task.cpython-311.pyc",  # bytecode
    "old.pyc",
    ".pytest_cache/v/cache/nodeids",  # tool caches
    ".mypy_cache/3.11/cache.json",
    ".ruff_cache/0.6.0/cache",
    "notebooks/.ipynb_checkpoints/explore-checkpoint.ipynb",
    "trainer.egg-info/PKG-INFO",  # packaging output
    "build/lib/trainer/task.py",
    "dist/trainer-0.1.tar.gz",
]


@pytest.mark.parametrize("path", HYGIENE)
def test_local_state_and_caches_never_ship(
    tmp_path: Path, listing: Callable[[Path], None], path: str
) -> None:
    assert path not in shipped(pack_re_included(tmp_path, listing, path))


def test_build_and_dist_are_left_out_only_at_the_root(tmp_path: Path) -> None:
    src = make_project(tmp_path / "src")
    write(src / "trainer" / "build" / "graph.py", "x\n")  # a package of the user's named build
    assert "trainer/build/graph.py" in shipped(pack(src, tmp_path / "out"))


# -- what a run writes never changes the bundle -----------------------------------------

JOB = """\
name: local-run
code: {module: trainer.task}
storage: {root: ./runs}
vertex: {project: my-project, storage_root: gs://my-bucket/local-run}
"""


@pytest.mark.parametrize("provider", ["local", "vertex"])
def test_a_local_run_does_not_change_the_bundle(tmp_path: Path, provider: str) -> None:
    src = make_project(tmp_path / "project")
    write(src / "job.yaml", JOB)
    settle(src)
    planned = plan(load_spec(src / "job.yaml"), provider)
    _, before = api.pack_code(planned)
    runs = src / "runs"  # what a local run leaves behind (storage.root: ./runs)
    write(runs / "model" / "saved_model.pb", "graph")
    write(runs / "model" / "variables" / "variables.index", "index")
    write(runs / "logs" / "train" / "events.out.tfevents.1700000000.host.1.v2", "events")
    write(runs / "backup" / "chief" / "checkpoint", "state")
    (runs / "code").mkdir()
    shutil.copy(before.path, runs / "code" / before.name)
    _, after = api.pack_code(planned)
    assert after.sha256 == before.sha256
    assert not any(name.startswith("runs/") for name in shipped(after))


def test_bundles_written_inside_the_source_folder_are_left_out(tmp_path: Path) -> None:
    src = make_project(tmp_path / "src")
    first = pack(src, src / "bundles")
    settle(src)
    assert pack(src, src / "bundles").sha256 == first.sha256


# -- links and special files ------------------------------------------------------------


@pytest.mark.parametrize("kind", ["file", "folder"])
def test_a_link_out_of_the_source_folder_is_an_error_naming_it(
    tmp_path: Path, listing: Callable[[Path], None], kind: str
) -> None:
    src = make_project(tmp_path / "src")
    listing(src)
    outside = write(tmp_path / "elsewhere" / "data.csv", "a,b\n")
    (src / "data").symlink_to(outside if kind == "file" else outside.parent)
    with pytest.raises(SpecError) as raised:
        pack(src, tmp_path / "out")
    assert str(raised.value).startswith(
        f"code.source_dir: 'data' is a link to {str(outside if kind == 'file' else outside.parent)!r}, "
        "outside the source folder, so it cannot ship."
    )
    assert "add 'data' to .cloudtrainignore" in str(raised.value)


@pytest.mark.parametrize("pattern", ["data", "data/", "/data/"])
def test_an_ignored_link_out_is_fine(tmp_path: Path, listing: Callable[[Path], None], pattern: str) -> None:
    src = make_project(tmp_path / "src")
    listing(src)
    write(tmp_path / "elsewhere" / "big.csv", "a,b\n")
    (src / "data").symlink_to(tmp_path / "elsewhere")
    write(src / ".cloudtrainignore", f"{pattern}\n")
    assert not any(name.startswith("data") for name in shipped(pack(src, tmp_path / "out")))


def test_links_inside_are_followed_as_files(tmp_path: Path, listing: Callable[[Path], None]) -> None:
    src = make_project(tmp_path / "src")
    listing(src)
    (src / "latest.py").symlink_to("trainer/task.py")
    (src / "shared").symlink_to("trainer", target_is_directory=True)
    (src / "trainer" / "again").symlink_to("..", target_is_directory=True)
    packed = pack(src, tmp_path / "out")
    assert {"latest.py", "shared/task.py", "trainer/task.py"} <= shipped(packed)
    assert refused(packed) == {
        "shared/again": "a link to a folder that contains it (a loop)",
        "trainer/again": "a link to a folder that contains it (a loop)",
    }
    with tarfile.open(packed.path) as tar:
        member = tar.getmember("latest.py")
        assert member.isfile()
        assert tar.extractfile(member).read() == TASK.encode()  # type: ignore[union-attr]


def test_a_fifo_is_skipped(tmp_path: Path) -> None:
    src = make_project(tmp_path / "src")
    os.mkfifo(src / "pipe")
    packed = pack(src, tmp_path / "out")  # never blocks reading it
    assert "pipe" not in shipped(packed)
    assert refused(packed) == {"pipe": "not a regular file (a FIFO, socket or device)"}


# -- the index: an unchanged project is not read again ----------------------------------


def test_an_unchanged_project_is_not_read_again(tmp_path: Path) -> None:
    src = make_project(tmp_path / "src")
    data = write(src / "data.csv", "a,b\n1,2\n")
    settle(src)
    first = pack(src, tmp_path / "out")
    # Same size and mtime, other bytes: only a pack that reads contents would notice.
    data.write_text("a,b\n3,4\n")
    os.utime(data, ns=(LONG_AGO_NS, LONG_AGO_NS))
    assert pack(src, tmp_path / "out") == first
    os.utime(data, ns=(LONG_AGO_NS + 1, LONG_AGO_NS + 1))  # the mtime moved: read again
    assert pack(src, tmp_path / "out").sha256 != first.sha256


def test_a_file_changed_just_before_a_pack_is_read_again(tmp_path: Path) -> None:
    src = make_project(tmp_path / "src")
    settle(src)
    data = write(src / "data.csv", "a,b\n1,2\n")
    stamp = time.time_ns() + 1_000_000_000  # newer than the pack's start: it may change within its tick
    os.utime(data, ns=(stamp, stamp))
    first = pack(src, tmp_path / "out")
    data.write_text("a,b\n3,4\n")
    os.utime(data, ns=(stamp, stamp))
    assert pack(src, tmp_path / "out").sha256 != first.sha256


def test_a_corrupt_index_or_a_missing_bundle_is_packed_again(tmp_path: Path) -> None:
    src = make_project(tmp_path / "src")
    settle(src)
    first = pack(src, tmp_path / "out")
    (entry,) = (tmp_path / "out" / "index").glob("*.json")
    entry.write_text('{"sha256": ')
    assert pack(src, tmp_path / "out") == first
    assert json.loads(entry.read_text())["sha256"] == first.sha256
    first.path.unlink()
    assert pack(src, tmp_path / "out") == first
    assert first.path.is_file()


def test_concurrent_packs_agree_and_leave_no_temporary_files(tmp_path: Path) -> None:
    src = make_project(tmp_path / "src")
    write(src / "data.csv", "a,b\n" * 50_000)
    settle(src)
    out = tmp_path / "out"
    with ThreadPoolExecutor(max_workers=4) as pool:
        packed = list(pool.map(lambda _: pack(src, out), range(4)))
    assert len({item.sha256 for item in packed}) == 1
    assert sorted(path.name for path in out.iterdir()) == sorted([packed[0].name, "index"])
    assert [path.suffix for path in (out / "index").iterdir()] == [".json"]


# -- size advice and the CLI ---------------------------------------------------------------


def test_a_large_bundle_names_its_largest_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundle, "LARGE_BYTES", 1000)
    src = make_project(tmp_path / "src")
    write(src / "data" / "train.csv", "x" * 3000)
    (note,) = pack(src, tmp_path / "out").notes
    assert note.startswith("The code bundle holds 3.1 kB of files; the largest: data/train.csv (3.0 kB), ")
    assert note.endswith("list large files in .cloudtrainignore.")


# regression: the size counted cloudtrain's own runtime files as the user's
def test_cloudtrains_runtime_is_not_counted_as_the_users_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: RunCli
) -> None:
    src = make_project(tmp_path / "src")
    write(src / "job.yaml", JOB)
    mine = sum(path.stat().st_size for path in src.rglob("*") if path.is_file())
    monkeypatch.setattr(bundle, "LARGE_BYTES", mine + 1)
    packed = pack(src, tmp_path / "out", include_runtime=True)
    runtime = [name for name, _ in packed.contents if bundle.is_runtime(name)]
    assert runtime and packed.notes == ()  # the runtime alone is larger than LARGE_BYTES
    args = ("--provider", "vertex", "--dry-run")
    code = next(
        line
        for line in run_cli("submit", str(src / "job.yaml"), *args).err.splitlines()
        if line.startswith("Code: ")
    )
    count = len(packed.contents) - len(runtime)
    assert re.fullmatch(
        rf"Code: [0-9a-f]{{16}}\.tar\.gz, [\d.]+ kB: {count} files of yours \({bundle.size_text(mine)}\), "
        rf"and cloudtrain's runtime \({len(runtime)} files\) -> gs://.*",
        code,
    ), code


def test_dry_run_lists_what_ships_and_what_was_refused(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bundle, "LARGE_BYTES", 1000)
    src = make_project(tmp_path / "project")
    write(src / "job.yaml", JOB)
    write(src / ".env", "TOKEN=x\n")
    write(src / "data.csv", "x" * 3000)
    result = run_cli("submit", str(src / "job.yaml"), "--dry-run", "--list-files")
    assert result.code == 0, result.err
    lines = result.err.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Ships in "))
    assert lines[start + 1 : start + 6] == [
        "  README.md (3 bytes)",
        "  data.csv (3000 bytes)",
        f"  job.yaml ({len(JOB)} bytes)",
        "  trainer/__init__.py (0 bytes)",
        f"  trainer/task.py ({len(TASK)} bytes)",
    ]
    assert lines[start + 6] == "Refused: .env (a dotenv file)"
    assert lines[start + 7].startswith("Note: The code bundle holds ")


def test_a_link_out_is_one_error_line_from_the_cli(tmp_path: Path, run_cli: RunCli) -> None:
    src = make_project(tmp_path / "project")
    write(src / "job.yaml", JOB)
    (src / "data").symlink_to(tmp_path)
    result = run_cli("submit", str(src / "job.yaml"), "--dry-run")
    assert result.code == 2
    assert result.errors == [
        f"code.source_dir: 'data' is a link to {str(tmp_path)!r}, outside the source folder, so it cannot "
        "ship. Copy what it points to into the folder, or add 'data' to .cloudtrainignore (read data "
        "through a data: channel instead)."
    ]


def test_an_unreadable_folder_is_a_spec_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # regression: code.source_dir: / ended in PermissionError from realpath(/proc/1/cwd)
    (tmp_path / "task.py").write_text("x = 1\n")
    (tmp_path / "locked").mkdir()
    real_scandir = os.scandir

    def refuse(path: str | os.PathLike[str]) -> object:
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(bundle.os, "scandir", refuse)
    monkeypatch.setattr(bundle, "_git_listing", lambda root: None)
    with pytest.raises(SpecError) as error:
        collect(tmp_path)
    assert error.value.problems == [
        f"code.source_dir: cannot read {str(tmp_path / 'locked')!r} (Permission denied). "
        "Fix its permissions, or add it to .cloudtrainignore."
    ]


def test_the_file_system_root_is_no_source_folder() -> None:
    with pytest.raises(SpecError, match=r"code.source_dir: '/' is the root of the file system"):
        collect("/")


@pytest.mark.parametrize(("path", "content", "reason"), SCANNED)
def test_packing_refuses_what_detect_secrets_finds(
    tmp_path: Path, path: str, content: str, reason: str
) -> None:
    src = make_project(tmp_path / "src")
    write(src / path, content)
    packed = pack(src, tmp_path / "out")
    assert refused(packed) == {path: reason}
    assert path not in shipped(packed)


def test_a_binary_file_is_not_scanned_for_tokens(tmp_path: Path) -> None:
    src = make_project(tmp_path / "src")
    (src / "weights.bin").write_bytes(b"\0\1" + ("ghp_" + "a1B2c3D4e5" * 4).encode())
    assert "weights.bin" in shipped(pack(src, tmp_path / "out"))
