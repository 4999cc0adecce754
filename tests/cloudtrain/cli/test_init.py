"""``cloudtrain init``: a new project that validates, and trains, at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cloudtrain.newproject import template_files
from tests.conftest import Result

FILES = [".cloudtrainignore", "job.yaml", "trainer/__init__.py", "trainer/task.py"]


def test_a_new_project_validates_at_once(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    project = tmp_path / "churn-model"
    created = run_cli("init", str(project))
    assert created.code == 0, created.err
    assert created.out.splitlines()[: len(FILES) + 1] == [
        f"Created in {project}:",
        *(f"  {f}" for f in FILES),
    ]
    result = run_cli("validate", str(project / "job.yaml"))
    assert (result.code, result.err) == (0, "")
    assert result.out == (
        f"{project / 'job.yaml'} is valid for local: 1 × local (1 CPU device(s)), 1 replica, "
        "global batch 32, strategy one-device\n"
    )


def test_the_name_comes_from_the_folder_or_from_name(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    run_cli("init", str(tmp_path / "My Model_2"))
    run_cli("init", str(tmp_path / "other"), "--name", "fraud-detector")
    assert "\nname: my-model-2\n" in (tmp_path / "My Model_2" / "job.yaml").read_text()
    assert "\nname: fraud-detector\n" in (tmp_path / "other" / "job.yaml").read_text()


def test_init_into_the_current_folder(
    run_cli: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli("init", "--name", "here-job")
    assert result.code == 0, result.err
    assert "  cd " not in result.out  # already there
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()) == FILES


def test_existing_files_are_refused_and_left_alone(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text("mine\n")
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "task.py").write_text("# mine\n")
    result = run_cli("init", str(tmp_path))
    assert (result.code, result.errors) == (
        2,
        [
            f"{tmp_path} already has job.yaml, trainer/task.py. Nothing was written. "
            "Pass --force to overwrite them, or choose another folder."
        ],
    )
    assert (tmp_path / "job.yaml").read_text() == "mine\n"
    assert not (tmp_path / ".cloudtrainignore").exists()


def test_force_overwrites(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text("mine\n")
    result = run_cli("init", str(tmp_path), "--name", "forced-job", "--force")
    assert result.code == 0, result.err
    assert "\nname: forced-job\n" in (tmp_path / "job.yaml").read_text()


def test_force_writes_a_file_in_place_of_a_link_not_through_it(
    run_cli: Callable[..., Result], tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_text("keep me\n")
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "job.yaml").symlink_to(elsewhere)
    assert run_cli("init", str(tmp_path / "project"), "--force").code == 0
    assert elsewhere.read_text() == "keep me\n"
    assert not (tmp_path / "project" / "job.yaml").is_symlink()


def test_a_folder_in_the_way_is_refused_even_with_force(
    run_cli: Callable[..., Result], tmp_path: Path
) -> None:
    (tmp_path / "job.yaml").mkdir()
    result = run_cli("init", str(tmp_path), "--force")
    assert (result.code, result.errors) == (
        2,
        [f"Cannot write the project: job.yaml in {tmp_path} is in the way. Move it away."],
    )


def test_an_invalid_name_is_refused_with_a_valid_one(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    result = run_cli("init", str(tmp_path), "--name", "Churn_Model")
    assert (result.code, result.errors) == (
        2,
        [
            "--name 'Churn_Model' is not a valid job name: use 2-63 lowercase letters, digits and '-', "
            "starting with a letter, e.g. --name churn-model."
        ],
    )
    assert list(tmp_path.iterdir()) == []


def test_the_template_is_package_data_with_every_file(repo: Path) -> None:
    assert sorted(template_files()) == FILES
    pyproject = (repo / "pyproject.toml").read_text()
    for pattern in (
        "templates/project/*",
        "templates/project/.cloudtrainignore",
        "templates/project/trainer/*.py",
    ):
        assert f'"{pattern}"' in pyproject  # shipped in the wheel, dotfile included


def test_a_new_project_takes_the_cloud_settings_from_profile_and_environment(
    run_cli: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "cloudtrain" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("profiles:\n  default:\n    vertex: {storage_root: gs://my-bucket/jobs}\n")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-project")
    run_cli("init", str(tmp_path / "proj"))
    result = run_cli("validate", str(tmp_path / "proj" / "job.yaml"), "--provider", "vertex", "--json")
    assert result.code == 0, result.out
    assert json.loads(result.out)["valid"] is True


@pytest.mark.multiprocess
@pytest.mark.timeout(600)
def test_a_new_project_trains_here_exports_a_model_and_is_priced_from_its_throughput(
    run_cli: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "first-model"
    assert run_cli("init", str(project)).code == 0
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    done = subprocess.run(
        [sys.executable, "-m", "cloudtrain", "submit", str(project / "job.yaml")],
        capture_output=True,
        text=True,
        check=False,
        timeout=540,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    # piped: stdout holds the job ID alone, the followed log is on stderr
    assert "[cloudtrain] Job succeeded. The replica exited 0." in done.stderr
    latest = json.loads((project / "outputs" / "latest.json").read_text())
    assert f"[chief-0] export={latest['model']}\n" in done.stderr
    assert Path(latest["model"]) == project / "outputs" / "runs" / latest["run_id"] / "model"
    assert (Path(latest["model"]) / "saved_model.pb").is_file()
    # regression: its 5 epochs of 8 steps wrote "examples_per_sec": null, and the README's command failed
    monkeypatch.chdir(project)
    priced = run_cli("cost", "job.yaml", "-t", "outputs/latest.json", "--json")
    assert priced.code == 0, priced.err
    speed = json.loads(priced.out)["throughput"]
    assert speed["examples_per_sec"] > 0 and speed["source"].endswith("timed after a short warm-up")


@pytest.mark.parametrize(
    ("folder", "error"),
    [
        (  # regression: FileNotFoundError traceback from newproject.py
            "/proc/cloudtrain-nope",
            "Cannot write the project in /proc/cloudtrain-nope: No such file or directory "
            "(/proc/cloudtrain-nope). Choose a folder this user can write.",
        ),
        (  # regression: ValueError traceback from newproject.py
            "{tmp}/job.yaml/sub",
            "Cannot write the project in {tmp}/job.yaml/sub: {tmp}/job.yaml is a file, not a folder. "
            "Nothing was written. Choose another folder.",
        ),
    ],
    ids=["proc", "below-a-file"],
)
def test_a_folder_that_cannot_be_written_is_one_line(
    run_cli: Callable[..., Result], tmp_path: Path, folder: str, error: str
) -> None:
    (tmp_path / "job.yaml").write_text("name: demo\n")
    result = run_cli("init", folder.format(tmp=tmp_path))
    assert result.code != 0 and "Traceback" not in result.err
    assert result.errors == [error.format(tmp=tmp_path)]


# The profile the template's header points to, with the clouds' settings its plan and dry run need.
PROFILE = """\
profiles:
  default:
    vertex: {project: my-project, region: us-central1, storage_root: gs://my-bucket/cloudtrain}
    sagemaker:
      region: us-east-1
      role: arn:aws:iam::123456789012:role/SageMakerTraining
      storage_root: s3://my-bucket/cloudtrain
"""


def template_commands(job_yaml: str) -> list[str]:
    """The ``cloudtrain ...`` lines of the header of the job.yaml that ``init`` writes, without comments."""
    header = [line.removeprefix("#").strip() for line in job_yaml.splitlines() if line.startswith("#   ")]
    return [line.split("  #")[0].strip() for line in header if line.startswith("cloudtrain ")]


@pytest.mark.multiprocess
@pytest.mark.timeout(600)
def test_every_command_and_path_the_template_shows_runs_on_a_fresh_project(tmp_path: Path) -> None:
    """What ``init`` prints next, then the header's commands in order, the run first, in the new project.

    regression: the header said ``cost job.yaml -t outputs/cloudtrain-throughput.json``, a file
    that runs no longer write (each run has its folder; ``outputs/latest.json`` names the last).
    """
    from tests.test_quickstart import clean_env, commands, run

    home = tmp_path / "user"
    profile = home / ".config" / "cloudtrain" / "config.yaml"  # the header's ~/.config/cloudtrain/config.yaml
    profile.parent.mkdir(parents=True)
    profile.write_text(PROFILE)
    env = {**clean_env(tmp_path), "HOME": str(home)}
    env.pop("XDG_CONFIG_HOME")
    created = subprocess.run(
        [sys.executable, "-m", "cloudtrain", "init", "fresh-model"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    project = tmp_path / "fresh-model"
    job_yaml = (project / "job.yaml").read_text()
    assert "~/.config/cloudtrain/config.yaml" in job_yaml and "trainer/task.py" in job_yaml
    assert (project / "trainer" / "task.py").is_file()
    following = commands(created.split("Next:\n", 1)[1])
    shown = template_commands(job_yaml)
    assert [line.split()[1] for line in shown] == ["validate", "submit", "plan", "submit", "cost", "cost"]
    steps = [*following, *(line for line in shown if line not in following)]
    done = run(steps, tmp_path, tmp_path, env=env)
    assert "Speed: " in done.stdout  # the last command priced the run it measured
    assert (project / "outputs" / "latest.json").is_file()
