"""The region the AWS tools would use, read without botocore.

In the AWS CLI's order: ``AWS_REGION``, which "overrides the values in the environment
variable AWS_DEFAULT_REGION and the profile setting region" (AWS CLI User Guide,
cli-configure-envvars); then ``AWS_DEFAULT_REGION``; then ``region`` of the selected
profile in the config file: ``$AWS_CONFIG_FILE`` (default ``~/.aws/config``), profile
``$AWS_DEFAULT_PROFILE`` or ``$AWS_PROFILE`` (botocore's configprovider checks them in that
order) or ``default``. The default profile is the section ``[default]`` (or
``[profile default]``); any other is ``[profile NAME]`` (botocore.configloader).

Example:
>>> discover({"AWS_REGION": "eu-west-1"})
{'region': Discovered(value='eu-west-1', source='AWS_REGION')}
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from cloudtrain.providers.base import Discovered
from cloudtrain.providers.discovery import first_variable, home, ini_value, read_ini

REGION_VARIABLES = ("AWS_REGION", "AWS_DEFAULT_REGION")
PROFILE_VARIABLES = ("AWS_DEFAULT_PROFILE", "AWS_PROFILE")


def discover(environ: Mapping[str, str]) -> dict[str, Discovered]:
    """``region`` as the user's AWS tools would pick it, or nothing."""
    found = first_variable(environ, REGION_VARIABLES) or profile_region(environ)
    return {"region": found} if found else {}


def config_file(environ: Mapping[str, str]) -> Path:
    """The AWS config file botocore reads."""
    named = environ.get("AWS_CONFIG_FILE", "")
    if named.startswith("~"):  # botocore expands the home folder
        return home(environ) / named[1:].lstrip("/\\")
    return Path(named) if named else home(environ) / ".aws" / "config"


def profile_region(environ: Mapping[str, str]) -> Discovered | None:
    """``region`` of the selected profile in the config file."""
    selected = first_variable(environ, PROFILE_VARIABLES)
    profile = selected.value if selected else "default"
    path = config_file(environ)
    parser = read_ini(path)
    sections = ["default", "profile default"] if profile == "default" else [f"profile {profile}"]
    for section in sections:
        value = ini_value(parser, section, "region")
        if value:
            return Discovered(value, f"{path} [{section}]")
    return None
