"""The user's ``requirements.txt``: installed in a container of its own, only checked anywhere else.

A project declares its extra pip packages in ``requirements.txt`` beside its code. In
a training container (the replica's root is ``/``) the runtime installs them with this
interpreter's pip before the user's module is imported, on every host, so the code
finds them whatever the image. On this machine (the local provider, or an emulated
cloud, whose replicas run under a stand-in root with this machine's Python) nothing is
installed into the user's environment: an unmet requirement is an error that names it,
and the SDK reports the same before any process starts (``unmet``).

Example:
>>> unmet(["packaging>=1", "surely-not-installed-pkg==1.0"])
['surely-not-installed-pkg==1.0 (not installed)']
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable, Iterable
from importlib import metadata
from pathlib import Path

from cloudtrain_runtime.errors import UserCodeError

FILE = "requirements.txt"
# pip's own words for a package it could not find or build, naming the package.
_PIP_NAMES_PACKAGE = (
    re.compile(r"No matching distribution found for (\S+)"),
    re.compile(r"Could not find a version that satisfies the requirement (\S+)"),
    re.compile(r"Failed to build (\S+)"),
)
Runner = Callable[[list[str]], "subprocess.CompletedProcess[str]"]


def satisfy(directory: Path, root: str, *, run: Runner | None = None) -> None:
    """Install ``directory/requirements.txt`` in a container of its own; elsewhere, check it.

    Raises:
        UserCodeError: pip failed (naming the package), or on this machine a requirement
            is not met (naming it and the command that installs it).
    """
    path = directory / FILE
    if not path.is_file():
        return
    if root == "/":
        install(path, run=run or _pip)
        return
    missing = unmet(read(path))
    if missing:
        raise UserCodeError(
            f"{FILE}: not installed in this Python ({sys.executable}): {', '.join(missing)}. "
            f"Run: {sys.executable} -m pip install -r {path}"
        )


def read(path: Path) -> list[str]:
    """The requirement lines of ``path``: comments and blank lines dropped."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line]


def unmet(lines: Iterable[str]) -> list[str]:
    """The requirements this Python does not meet, each with why (pip options are skipped)."""
    return [f"{line} ({why})" for line in lines if not line.startswith("-") and (why := _why_unmet(line))]


def _why_unmet(line: str) -> str:
    # Imported here, where a requirements.txt is read: every cloudtrain command imports this
    # module (the local provider checks requirements before a submit), few read one.
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        requirement = Requirement(line)
    except InvalidRequirement as err:
        return f"not a requirement: {err}"
    if requirement.marker is not None and not requirement.marker.evaluate():
        return ""
    try:
        version = metadata.version(requirement.name)
    except metadata.PackageNotFoundError:
        return "not installed"
    if requirement.specifier and not requirement.specifier.contains(version, prereleases=True):
        return f"{version} is installed"
    return ""


def install(path: Path, *, run: Runner) -> None:
    """``pip install -r path`` with this interpreter, before anything imports the user's code.

    Raises:
        UserCodeError: one line naming the package pip could not install.
    """
    done = run(
        [sys.executable, "-m", "pip", "install", "--no-input", "--disable-pip-version-check", "-r", str(path)]
    )
    if done.returncode != 0:
        raise UserCodeError(f"{FILE}: pip could not install {_culprit(done.stderr + done.stdout)}")


def _culprit(output: str) -> str:
    """The package pip names in ``output``, else pip's last error line."""
    for pattern in _PIP_NAMES_PACKAGE:
        found = pattern.search(output)
        if found:
            return found.group(1)
    errors = [line for line in output.splitlines() if line.startswith("ERROR")]
    return errors[-1] if errors else "the requirements (pip exited with an error and said nothing more)"


def _pip(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=False)
