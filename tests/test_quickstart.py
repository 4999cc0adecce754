"""The quick start runs as written, and the README keeps what a newcomer needs first.

Every command of ``docs/quickstart.md`` is the path a newcomer copies: ``init``, ``validate``,
two local runs, ``cost`` without and with the measured speed, ``compare`` of the two runs,
then a Vertex AI plan and dry run of the same project. The page's bash blocks run in one
shell, in order, as pasted (``cd`` included), from an empty folder, with this checkout's
``cloudtrain`` first on the ``PATH``. The README's cloud dry run runs from the repository
root, where its set-up commands leave the example.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
QUICKSTART = REPO / "docs" / "quickstart.md"
README = REPO / "README.md"
BASH = re.compile(r"```bash\n(.*?)```", re.DOTALL)
ACTIVATE = "source .venv/bin/activate"


def marked(text: str, name: str) -> str:
    """The bash block between ``<!-- name -->`` and ``<!-- /name -->``."""
    found = re.search(rf"<!-- {name} -->\n```bash\n(.*?)```\n<!-- /{name} -->", text, re.DOTALL)
    assert found, f"no <!-- {name} --> block"
    return found[1]


def commands(block: str) -> list[str]:
    """A block's command lines, without their comments."""
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def clean_env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "CLOUDTRAIN_LOCAL_HOME": str(tmp_path / "home"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),  # no profile of this machine's user
        "COLUMNS": "200",
    }


def run(
    lines: list[str], cwd: Path, tmp_path: Path, env: dict[str, str] | None = None, *, expect: int = 0
) -> subprocess.CompletedProcess[str]:
    """``lines`` in one shell, stopping at the first that fails; ``env`` defaults to ``clean_env``."""
    done = subprocess.run(
        ["bash", "-c", " &&\n".join(lines)],
        cwd=cwd,
        env=clean_env(tmp_path) if env is None else env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == expect, done.stdout[-4000:] + done.stderr[-4000:]
    return done


@pytest.mark.multiprocess
@pytest.mark.timeout(600)
def test_every_command_of_the_quick_start_runs_as_written(tmp_path: Path) -> None:
    text = QUICKSTART.read_text()
    first_hour, dry_run = marked(text, "newcomer"), marked(text, "cloud-dry-run")
    assert BASH.findall(text) == [first_hour, dry_run]  # no command on the page that this test skips
    assert [command.split()[1] for command in commands(first_hour)] == [
        "init",
        "validate",
        "submit",
        "submit",
        "cost",
        "cost",
        "compare",
    ]
    assert [command.split()[1] for command in commands(dry_run)] == ["plan", "submit"]
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    done = run(commands(first_hour) + commands(dry_run), workspace, tmp_path)
    project = workspace / "my-model"
    runs = project / "outputs" / "runs"
    assert sorted(path.name for path in runs.iterdir()) == ["one-host", "two-hosts"]
    assert (runs / "two-hosts" / "model" / "saved_model.pb").is_file()
    assert "is valid for local" in done.stdout
    assert re.search(r"\bt4\b", done.stdout)  # the price list names the clouds' shapes
    assert "one-host" in done.stdout and "two-hosts" in done.stdout  # compare names both runs
    assert "gs://my-bucket/my-model/runs/{run}/model" in done.stdout  # the plan, on Vertex AI
    assert '"workerPoolSpecs"' in done.stdout  # the dry run's CustomJob
    assert "Plan: 1 × n1-standard-8" in done.stderr

    # regression: the block again, after an edit of the model, said "nothing to redo" and succeeded
    task = project / "trainer" / "task.py"
    task.write_text(task.read_text().replace("Dense(16,", "Dense(24,"))
    again = run(commands(first_hour)[1:], project, tmp_path, expect=2)  # init made the project once
    errors = [line for line in again.stderr.splitlines() if line.startswith("Error:")]
    assert errors == [
        f"Error: Run 'one-host' finished (its export is {runs / 'one-host' / 'model'}) with other code, so it "
        "was left as it is. Restore the code and spec the run started with, or submit it as a new run "
        "(cloudtrain submit --new, or another --run-id)."
    ]
    assert sorted(path.name for path in runs.iterdir()) == ["one-host", "two-hosts"]  # nothing new ran


def test_the_readme_cloud_dry_run_runs_as_written(tmp_path: Path) -> None:
    activate, *lines = commands(marked(README.read_text(), "cloud-dry-run"))
    assert activate == ACTIVATE  # stands for this checkout's environment, first on the PATH
    assert [command.split()[1] for command in lines] == ["plan", "submit", "cost"]
    done = run(lines, REPO, tmp_path)
    assert "gs://my-bucket/binary-classifier/runs/{run}/model" in done.stdout  # the plan, on Vertex AI
    assert '"TrainingJobName"' in done.stdout  # the dry run's CreateTrainingJob request
    assert "ml.g4dn.xlarge" in done.stdout  # the price list


def test_the_readme_starts_with_its_two_set_up_commands() -> None:
    text = README.read_text()
    assert text.startswith("# cloudtrain\n\n```bash\nmake run    # ")
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    assert [line.split()[:2] for line in block.splitlines()] == [["make", "run"], ["make", "test"]]
    assert len(text.splitlines()) < 250  # the rest is in docs/
