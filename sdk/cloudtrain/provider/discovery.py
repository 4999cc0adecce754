"""Reading what the clouds' own tools keep: environment variables and their INI files.

gcloud and the AWS CLI keep a user's project and region in environment variables and in
INI files under the home folder. A provider's ``discover_settings`` reads them with
these helpers, without running the tools (each would cost a second) and without their
SDKs. The files belong to other programs: one that is missing, unreadable, too large or
not valid INI is skipped, never an error here; the tool that owns it reports it.

Example:
>>> first_variable({"AWS_REGION": "", "AWS_DEFAULT_REGION": "eu-west-1"}, ("AWS_REGION", "AWS_DEFAULT_REGION"))
Discovered(value='eu-west-1', source='AWS_DEFAULT_REGION')
"""

from __future__ import annotations

import configparser
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

from cloudtrain.provider.base import Discovered

# Such files are a few hundred bytes; a larger one is not worth reading for a default.
MAX_INI_BYTES = 256 * 1024


def home(environ: Mapping[str, str]) -> Path:
    """The user's home folder as ``environ`` gives it (``HOME``, ``USERPROFILE`` on Windows)."""
    found = environ.get("HOME") or environ.get("USERPROFILE")
    return Path(found) if found else Path.home()


def first_variable(environ: Mapping[str, str], names: Iterable[str]) -> Discovered | None:
    """The first of ``names`` set to a non-blank value in ``environ``, and its name."""
    for name in names:
        value = environ.get(name, "").strip()
        if value:
            return Discovered(value, name)
    return None


def read_ini(path: Path) -> configparser.RawConfigParser | None:
    """``path`` parsed as INI, or None when it is absent, not a small regular file, or not INI.

    Duplicate sections and keys are accepted, the last one winning, as both gcloud and
    botocore read them; no ``%`` interpolation, as neither does.
    """
    text = _small_text(path)
    if text is None:
        return None
    parser = configparser.RawConfigParser(strict=False, default_section="\0none")
    try:
        parser.read_string(text, source=str(path))
    except configparser.Error:
        return None
    return parser


def ini_value(parser: configparser.RawConfigParser | None, section: str, key: str) -> str | None:
    """``key`` of ``section``, stripped; None when absent or blank."""
    if parser is None or not parser.has_option(section, key):
        return None
    return parser.get(section, key).strip() or None


def _small_text(path: Path) -> str | None:
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_INI_BYTES:
            return None
        with open(path, "rb") as handle:
            return handle.read(MAX_INI_BYTES).decode("utf-8")
    except (OSError, ValueError):  # ValueError: a NUL in the path, or a file that is not UTF-8
        return None
