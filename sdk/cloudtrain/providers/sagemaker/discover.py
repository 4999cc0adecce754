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

from cloudtrain.provider.base import Discovered
from cloudtrain.provider.discovery import first_variable, home, ini_value, read_ini

REGION_VARIABLES = ("AWS_REGION", "AWS_DEFAULT_REGION")
PROFILE_VARIABLES = ("AWS_DEFAULT_PROFILE", "AWS_PROFILE")
# Variables that give botocore credentials before any file: keys, a web identity, a
# container's credentials endpoint (botocore.credentials' providers).
CREDENTIAL_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    *PROFILE_VARIABLES,
)


def discover(environ: Mapping[str, str]) -> dict[str, Discovered]:
    """``region`` as the user's AWS tools would pick it, or nothing."""
    found = first_variable(environ, REGION_VARIABLES) or profile_region(environ)
    return {"region": found} if found else {}


def config_file(environ: Mapping[str, str]) -> Path:
    """The AWS config file botocore reads."""
    return _aws_file(environ, "AWS_CONFIG_FILE", "config")


def _aws_file(environ: Mapping[str, str], variable: str, name: str) -> Path:
    """``$variable`` (``~`` expanded, as botocore does), else ``~/.aws/<name>``."""
    named = environ.get(variable, "")
    if named.startswith("~"):
        return home(environ) / named[1:].lstrip("/\\")
    return Path(named) if named else home(environ) / ".aws" / name


def credentials_source(environ: Mapping[str, str]) -> str | None:
    """Where boto3 would look for credentials first, if anywhere: a variable or a file; None: nowhere.

    Only says something is set up, not that it works (``cloudtrain check`` asks STS). An
    instance role, found only over the network, is not seen: ``--provider sagemaker`` asks anyway.
    """
    named = first_variable(environ, CREDENTIAL_VARIABLES)
    if named is not None:
        return named.source
    for path in (credentials_file(environ), config_file(environ)):
        if path.is_file():
            return str(path)
    return None


def credentials_file(environ: Mapping[str, str]) -> Path:
    """The shared credentials file botocore reads."""
    return _aws_file(environ, "AWS_SHARED_CREDENTIALS_FILE", "credentials")


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
