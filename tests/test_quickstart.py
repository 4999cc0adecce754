"""The README's first-hour path runs as written, command by command, in an empty folder.

It is the path a newcomer copies: ``init``, ``validate``, two local runs, ``cost`` without and
with the measured speed, and ``compare`` of the two runs. Each line runs in one shell, as
pasted (``cd`` included), with this checkout's ``cloudtrain`` first on the ``PATH``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"<!-- newcomer -->\n```bash\n(.*?)```\n<!-- /newcomer -->", re.DOTALL)

pytestmark = [pytest.mark.multiprocess, pytest.mark.timeout(600)]


def newcomer_commands() -> list[str]:
    """The block's command lines, without their comments."""
    found = BLOCK.search(README.read_text())
    assert found, "README.md has no <!-- newcomer --> block"
    return [line.split("  #")[0].strip() for line in found[1].splitlines() if line.strip()]


def test_the_first_hour_runs_as_written(tmp_path: Path) -> None:
    commands = newcomer_commands()
    assert [command.split()[1] for command in commands] == [
        "init",
        "validate",
        "submit",
        "submit",
        "cost",
        "cost",
        "compare",
    ]
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "CLOUDTRAIN_LOCAL_HOME": str(tmp_path / "home"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "COLUMNS": "200",
    }
    script = " &&\n".join(commands)
    done = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    project = tmp_path / "my-model"
    runs = project / "outputs" / "runs"
    assert sorted(path.name for path in runs.iterdir()) == ["one-host", "two-hosts"]
    assert (runs / "two-hosts" / "model" / "saved_model.pb").is_file()
    assert "is valid for local" in done.stdout
    assert re.search(r"\bt4\b", done.stdout)  # the price list names the clouds' shapes
    assert "one-host" in done.stdout and "two-hosts" in done.stdout  # compare names both runs
