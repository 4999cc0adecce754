"""The Google Cloud project and region Vertex takes from gcloud's and the Google libraries' settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from cloudtrain.provider.base import Discovered, DiscoversSettings
from cloudtrain.providers import get
from cloudtrain.providers.vertex.discover import discover


def _gcloud(root: Path, configs: dict[str, str], active: str | None = None) -> dict[str, str]:
    """A gcloud configuration folder with ``configurations/config_<name>`` files; its environment."""
    (root / "configurations").mkdir(parents=True)
    for name, text in configs.items():
        (root / "configurations" / f"config_{name}").write_text(text)
    if active is not None:
        (root / "active_config").write_text(f"{active}\n")
    return {"CLOUDSDK_CONFIG": str(root), "HOME": "/nonexistent"}


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({}, None),  # nothing set: no default
        (
            {"CLOUDSDK_CORE_PROJECT": "sdk-project"},
            ("sdk-project", "CLOUDSDK_CORE_PROJECT"),
        ),  # gcloud's property
        (
            {"GCLOUD_PROJECT": "legacy-project"},
            ("legacy-project", "GCLOUD_PROJECT"),
        ),  # google-auth's old name
        (
            {"GOOGLE_CLOUD_PROJECT": "env-project", "CLOUDSDK_CORE_PROJECT": "sdk-project"},
            ("env-project", "GOOGLE_CLOUD_PROJECT"),  # google-auth reads it before anything of gcloud's
        ),
        ({"GOOGLE_CLOUD_PROJECT": "  "}, None),  # blank is unset
    ],
)
def test_the_project_variables_in_the_order_google_reads_them(
    variables: dict[str, str], expected: tuple[str, str] | None
) -> None:
    found = discover({"CLOUDSDK_CONFIG": "/nonexistent", **variables})
    assert found.get("project") == (Discovered(*expected) if expected else None)


def test_the_active_gcloud_configuration_gives_project_and_ai_region(tmp_path: Path) -> None:
    environ = _gcloud(
        tmp_path,
        {
            "default": "[core]\nproject = default-project\n",
            "work": "[core]\naccount = me@example.com\nproject = work-project\n[ai]\nregion = europe-west4\n",
        },
        active="work",
    )
    source = str(tmp_path / "configurations" / "config_work")
    assert discover(environ) == {
        "project": Discovered("work-project", source),
        "region": Discovered("europe-west4", source),
    }


def test_cloudsdk_active_config_name_beats_the_active_config_file(tmp_path: Path) -> None:
    environ = _gcloud(
        tmp_path,
        {"default": "[core]\nproject = default-project\n", "work": "[core]\nproject = work-project\n"},
    )
    assert discover(environ)["project"].value == "default-project"  # no active_config file: 'default'
    environ["CLOUDSDK_ACTIVE_CONFIG_NAME"] = "work"
    assert discover(environ)["project"].value == "work-project"


def test_without_cloudsdk_config_the_folder_is_under_home(tmp_path: Path) -> None:
    _gcloud(tmp_path / ".config" / "gcloud", {"default": "[core]\nproject = home-project\n"})
    assert discover({"HOME": str(tmp_path)})["project"].value == "home-project"


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({"CLOUDSDK_AI_REGION": "us-east1"}, ("us-east1", "CLOUDSDK_AI_REGION")),  # gcloud's ai/region
        ({"CLOUD_ML_REGION": "us-west1", "CLOUDSDK_AI_REGION": "us-east1"}, ("us-west1", "CLOUD_ML_REGION")),
        (
            {"GOOGLE_CLOUD_REGION": "asia-east1", "CLOUD_ML_REGION": "us-west1"},
            ("asia-east1", "GOOGLE_CLOUD_REGION"),  # the aiplatform SDK reads it first
        ),
    ],
)
def test_the_region_variables_beat_the_configuration_file(
    tmp_path: Path, variables: dict[str, str], expected: tuple[str, str]
) -> None:
    environ = _gcloud(tmp_path, {"default": "[ai]\nregion = europe-west4\n"})
    assert discover({**environ, **variables})["region"] == Discovered(*expected)


@pytest.mark.parametrize(
    "content",
    [
        b"\xff\xfe\x00garbage",  # not UTF-8
        b"project = no section header\n",  # not INI
        b"[core\nproject = x\n",  # a broken section header
        b"x" * 300_000,  # too large to be a gcloud configuration
    ],
)
def test_an_unreadable_configuration_file_gives_no_default_and_no_error(
    tmp_path: Path, content: bytes
) -> None:
    environ = _gcloud(tmp_path, {})
    (tmp_path / "configurations" / "config_default").write_bytes(content)
    assert discover(environ) == {}


def test_a_configuration_name_gcloud_would_refuse_reads_no_file(tmp_path: Path) -> None:
    environ = _gcloud(tmp_path, {"default": "[core]\nproject = default-project\n"}, active="../../elsewhere")
    (tmp_path.parent / "elsewhere").write_text("[core]\nproject = outside-project\n")
    assert discover(environ) == {}


def test_the_provider_offers_discovery() -> None:
    provider = get("vertex")
    assert isinstance(provider, DiscoversSettings)
    assert provider.discover_settings(
        {"GOOGLE_CLOUD_PROJECT": "my-project", "CLOUDSDK_CONFIG": "/nonexistent"}
    ) == {"project": Discovered("my-project", "GOOGLE_CLOUD_PROJECT")}
