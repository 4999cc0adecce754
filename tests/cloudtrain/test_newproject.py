"""The job name ``cloudtrain init`` gives a new project, and the template it writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from cloudtrain import newproject
from cloudtrain.specfile import load_spec


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("churn-model", "churn-model"),  # already valid
        ("Churn_Model v2", "churn-model-v2"),  # case, '_' and spaces
        ("--weird--", "weird"),  # no '-' at either end
        ("2024-run", "job-2024-run"),  # must start with a letter
        ("ß", "my-job"),  # nothing left
        ("a", "my-job"),  # too short
        ("x" * 100, "x" * 63),  # too long
    ],
)
def test_slug_makes_a_valid_job_name(text: str, name: str) -> None:
    assert newproject.slug(text) == name
    assert newproject.valid_name(name)


def test_the_name_is_written_into_the_spec_and_the_code(tmp_path: Path) -> None:
    newproject.create(tmp_path, name="fraud-detector")
    spec = load_spec(tmp_path / "job.yaml")
    assert spec.name == "fraud-detector"
    assert "${name}" not in "".join(path.read_text() for path in tmp_path.rglob("*") if path.is_file())
    assert (
        (tmp_path / "trainer" / "task.py").read_text().startswith('"""The model and data of fraud-detector,')
    )


def test_the_spec_of_a_new_project_leaves_the_cloud_settings_to_the_profile(tmp_path: Path) -> None:
    newproject.create(tmp_path, name="fraud-detector")
    spec = load_spec(tmp_path / "job.yaml")
    assert (spec.vertex.project, spec.sagemaker.role) == (None, None)
    assert spec.storage.root == str(tmp_path / "outputs")
