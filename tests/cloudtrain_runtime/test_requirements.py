"""requirements.txt: installed with the real pip in a container of its own, only checked elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from cloudtrain_runtime import requirements
from cloudtrain_runtime.errors import UserCodeError

REPO = Path(__file__).resolve().parents[2]


def test_unmet_names_what_is_missing_or_the_wrong_version() -> None:
    found = requirements.unmet(
        [
            "packaging>=1",  # installed and new enough
            "packaging<1",  # installed, too new
            "surely-not-installed-pkg",
            "pywin32; sys_platform == 'win32'",  # not for this platform
            "-r other.txt",  # a pip option: pip's business
            "not a requirement !",
        ]
    )
    assert found[0].startswith("packaging<1 (") and found[0].endswith(" is installed)")
    assert found[1] == "surely-not-installed-pkg (not installed)"
    assert found[2].startswith("not a requirement ! (not a requirement: ")
    assert len(found) == 3


def test_on_this_machine_nothing_is_installed_and_the_error_names_the_package(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("# extra packages\nsurely-not-installed-pkg==1.0  # pinned\n")
    with pytest.raises(
        UserCodeError, match=r"not installed in this Python .*surely-not-installed-pkg==1.0"
    ) as err:
        requirements.satisfy(tmp_path, root=str(tmp_path / "hosts" / "chief-0"))
    assert f"-m pip install -r {tmp_path / 'requirements.txt'}" in str(err.value)


def test_no_requirements_file_is_nothing_to_do(tmp_path: Path) -> None:
    requirements.satisfy(tmp_path, root="/")


def test_in_a_container_a_package_pip_cannot_find_is_one_line_naming_it(tmp_path: Path) -> None:
    # --no-index: the real pip, offline, fails at once without touching this environment
    (tmp_path / "requirements.txt").write_text("--no-index\nsurely-not-a-real-package==1.0\n")
    with pytest.raises(UserCodeError) as err:
        requirements.satisfy(tmp_path, root="/")
    assert str(err.value) == "requirements.txt: pip could not install surely-not-a-real-package==1.0"


def test_in_a_container_the_requirements_are_installed_before_the_code_runs(tmp_path: Path) -> None:
    """The runtime's own install, run by a throwaway Python standing in for the image's."""
    wheels = tmp_path / "wheels"
    _tiny_wheel(wheels, "cloudtrain_tiny_dep", "1.0")
    code = tmp_path / "code"
    code.mkdir()
    (code / "requirements.txt").write_text(f"--no-index\n--find-links {wheels}\ncloudtrain-tiny-dep==1.0\n")
    image = tmp_path / "image"
    venv.create(image, with_pip=True)
    python = image / "bin" / "python"
    program = (
        "import sys; from pathlib import Path; from cloudtrain_runtime import requirements; "
        "requirements.satisfy(Path(sys.argv[1]), root='/'); import cloudtrain_tiny_dep; "
        "print(cloudtrain_tiny_dep.VERSION)"
    )
    # the runtime and `packaging` come from this checkout; pip installs into the throwaway Python
    path = os.pathsep.join([str(REPO / "entrypoints"), sysconfig.get_paths()["purelib"]])
    done = subprocess.run(
        [python, "-c", program, str(code)],
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1.0"
    assert sys.prefix != str(image)  # this environment was never the target


def _tiny_wheel(folder: Path, name: str, version: str) -> None:
    """A minimal pure-Python wheel: one module, and the metadata pip reads."""
    folder.mkdir()
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": f"VERSION = {version!r}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{path},,\n" for path in [*files, f"{info}/RECORD"])
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as wheel:
        for path, text in {**files, f"{info}/RECORD": record}.items():
            wheel.writestr(path, text)
