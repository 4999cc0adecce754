"""The AWS region SageMaker takes from the AWS tools' variables and config file."""

from __future__ import annotations

from pathlib import Path

import pytest

from cloudtrain.provider.base import Discovered, DiscoversSettings
from cloudtrain.providers import get
from cloudtrain.providers.sagemaker.discover import discover

CONFIG = """\
[default]
region = us-west-2

[profile dev]
region = eu-central-1

[profile noregion]
output = json
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "config"
    path.write_text(CONFIG)
    return path


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({}, ("us-west-2", "{config} [default]")),  # the default profile's region
        ({"AWS_PROFILE": "dev"}, ("eu-central-1", "{config} [profile dev]")),  # the selected profile's
        ({"AWS_DEFAULT_PROFILE": "dev", "AWS_PROFILE": "nope"}, ("eu-central-1", "{config} [profile dev]")),
        ({"AWS_PROFILE": "noregion"}, None),  # the profile sets no region
        ({"AWS_PROFILE": "missing"}, None),  # no such profile
        ({"AWS_DEFAULT_REGION": "ap-south-1"}, ("ap-south-1", "AWS_DEFAULT_REGION")),  # beats the file
        (
            {"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "ap-south-1"},
            ("eu-west-1", "AWS_REGION"),  # the AWS CLI: AWS_REGION overrides AWS_DEFAULT_REGION
        ),
    ],
)
def test_the_region_in_the_aws_tools_order(
    config: Path, variables: dict[str, str], expected: tuple[str, str] | None
) -> None:
    found = discover({"AWS_CONFIG_FILE": str(config), **variables})
    if expected is None:
        assert found == {}
    else:
        assert found == {"region": Discovered(expected[0], expected[1].format(config=config))}


def test_without_aws_config_file_the_file_is_under_home(tmp_path: Path) -> None:
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "config").write_text(CONFIG)
    assert discover({"HOME": str(tmp_path)})["region"].value == "us-west-2"


@pytest.mark.parametrize(
    "content",
    [
        b"\x00\x01\xff binary",  # not text
        b"region = us-east-2\n",  # not INI (no section)
        b"[default]\nregion = \n",  # blank
    ],
)
def test_an_unusable_config_file_gives_no_default_and_no_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "config"
    path.write_bytes(content)
    assert discover({"AWS_CONFIG_FILE": str(path)}) == {}


def test_the_provider_offers_discovery() -> None:
    provider = get("sagemaker")
    assert isinstance(provider, DiscoversSettings)
    assert provider.discover_settings({"AWS_REGION": "eu-west-1"}) == {
        "region": Discovered("eu-west-1", "AWS_REGION")
    }
