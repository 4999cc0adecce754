"""The documentation site builds with warnings as errors, and its references come from the code.

The build is the one ``make docs`` makes (``sphinx-build -W``): a broken link or anchor, a
docstring autodoc cannot read or a reference whose module moved fails it. Then the
generated pages name every command, every public name and every spec section.
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest

import cloudtrain
from cloudtrain.cli import COMMANDS
from cloudtrain.spec import JobSpec
from tests.shared import made_once

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built site, one build for every worker of the suite."""
    return made_once(tmp_path_factory, "docs-site", _build)


def _build(out: Path) -> Path:
    build = ["-W", "--keep-going", "-q", "-b", "html", "-d", str(out / "doctrees")]
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", *build, str(DOCS), str(out / "html")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return out / "html"


def text_of(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))


def test_the_site_builds_without_a_warning(site: Path) -> None:
    pages = {path.relative_to(site).as_posix() for path in site.rglob("*.html")}
    assert {"index.html", "quickstart.html", "providers/vertex.html", "reference/spec.html"} <= pages


def test_the_cli_reference_has_every_command(site: Path) -> None:
    text = text_of(site / "reference" / "cli.html")
    for command in COMMANDS:
        assert f"cloudtrain {command} [OPTIONS]" in text, command


def test_the_api_reference_has_every_public_name(site: Path) -> None:
    text = text_of(site / "reference" / "api.html")
    for name in cloudtrain.__all__:
        assert f"cloudtrain.{name}" in text, name


def test_the_spec_reference_has_every_field_of_the_schema(site: Path) -> None:
    text = text_of(site / "reference" / "spec.html")
    schema = JobSpec.model_json_schema()
    for name in schema["properties"]:
        assert name in text, name
    for field in schema["$defs"]["Resources"]["properties"]:
        assert f"resources.{field}" in text, field
