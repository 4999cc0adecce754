"""The project and region Google's own tools would use, read without running them.

The project, in the order Google's libraries and gcloud take it: ``GOOGLE_CLOUD_PROJECT``
(and its legacy name ``GCLOUD_PROJECT``), which google-auth puts first
(google.auth.environment_vars); then gcloud's ``core/project`` property, from
``CLOUDSDK_CORE_PROJECT`` or the active configuration's file. The region: the
google-cloud-aiplatform SDK's ``GOOGLE_CLOUD_REGION`` and ``CLOUD_ML_REGION``
(aiplatform.initializer), then gcloud's ``ai/region`` property, from
``CLOUDSDK_AI_REGION`` or the configuration file.

gcloud keeps its configurations in ``$CLOUDSDK_CONFIG`` (default ``~/.config/gcloud``,
``%APPDATA%\\gcloud`` on Windows): ``configurations/config_<name>`` is an INI file, and the
active name is ``$CLOUDSDK_ACTIVE_CONFIG_NAME``, else the text of ``active_config``, else
``default`` (``gcloud topic configurations``).

Example:
>>> discover({"GOOGLE_CLOUD_PROJECT": "my-project", "CLOUDSDK_CONFIG": "/nonexistent"})
{'project': Discovered(value='my-project', source='GOOGLE_CLOUD_PROJECT')}
"""

from __future__ import annotations

import configparser
import os
import re
from collections.abc import Mapping
from pathlib import Path

from cloudtrain.provider.base import Discovered
from cloudtrain.provider.discovery import first_variable, home, ini_value, read_ini

PROJECT_VARIABLES = ("GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT")
REGION_VARIABLES = ("GOOGLE_CLOUD_REGION", "CLOUD_ML_REGION", "CLOUDSDK_AI_REGION")
# spec field -> (section, key) of the gcloud property in a configuration file.
PROPERTIES = {"project": ("core", "project"), "region": ("ai", "region")}
# gcloud's configuration names: lowercase letters, digits and '-', starting with a letter.
_CONFIG_NAME = re.compile(r"[a-z][-a-z0-9]*")

_Configuration = tuple[Path, configparser.RawConfigParser | None]


def discover(environ: Mapping[str, str]) -> dict[str, Discovered]:
    """``project`` and ``region`` as the user's Google tools would pick them; absent ones left out."""
    variables = {"project": PROJECT_VARIABLES, "region": REGION_VARIABLES}
    found: dict[str, Discovered] = {}
    config: _Configuration | None = None
    for field, names in variables.items():
        value = first_variable(environ, names)
        if value is None:
            config = config or _active_configuration(environ)
            value = _property(config, *PROPERTIES[field])
        if value is not None:
            found[field] = value
    return found


def config_dir(environ: Mapping[str, str]) -> Path:
    """gcloud's configuration folder."""
    if environ.get("CLOUDSDK_CONFIG"):
        return Path(environ["CLOUDSDK_CONFIG"])
    if os.name == "nt" and environ.get("APPDATA"):
        return Path(environ["APPDATA"]) / "gcloud"
    return home(environ) / ".config" / "gcloud"


def active_name(environ: Mapping[str, str], folder: Path) -> str | None:
    """The active configuration's name: the variable, else the ``active_config`` file, else default.

    None for a name gcloud would refuse, so no path outside ``configurations/`` is read.
    """
    name = environ.get("CLOUDSDK_ACTIVE_CONFIG_NAME", "").strip()
    if not name:
        try:
            name = (folder / "active_config").read_text(encoding="utf-8").strip() or "default"
        except (OSError, ValueError):
            name = "default"
    return name if _CONFIG_NAME.fullmatch(name) else None


def _active_configuration(environ: Mapping[str, str]) -> _Configuration:
    folder = config_dir(environ)
    name = active_name(environ, folder)
    path = folder / "configurations" / f"config_{name or 'default'}"
    return path, read_ini(path) if name else None


def _property(config: _Configuration, section: str, key: str) -> Discovered | None:
    path, parser = config
    value = ini_value(parser, section, key)
    return Discovered(value, str(path)) if value else None
