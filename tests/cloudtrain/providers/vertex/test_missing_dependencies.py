"""Without a cloud's libraries, every command for that cloud is one ``Error:`` line with the pip command.

Each case runs the real CLI in a fresh interpreter whose import system refuses the hidden
modules, as if they were not installed, and expects no traceback. The SageMaker rows sit
here too: the same check, with boto3 and botocore hidden instead of the Google libraries.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[4]
EXAMPLE = "examples/binary_classifier/job.yaml"
VERTEX_JOB = "projects/my-project/locations/us-central1/customJobs/1"
SAGEMAKER_JOB = "arn:aws:sagemaker:us-east-1:123456789012:training-job/binary-classifier"
# The CLI in an interpreter where every module under HIDDEN fails to import.
HIDE_AND_RUN = """
import sys

HIDDEN = {hidden!r}


def hidden(name):
    return any(name == top or name.startswith(top + ".") for top in HIDDEN)


class Refuse:
    def find_spec(self, name, path=None, target=None):
        if hidden(name):
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


for name in [name for name in sys.modules if hidden(name)]:
    del sys.modules[name]
sys.meta_path.insert(0, Refuse())
from cloudtrain.cli import main

main({argv!r})
"""


def run_without(hidden: tuple[str, ...], *argv: str) -> subprocess.CompletedProcess[str]:
    script = HIDE_AND_RUN.format(hidden=hidden, argv=list(argv))
    env = {name: value for name, value in os.environ.items() if not name.startswith("CLOUDTRAIN_")}
    return subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


VERTEX_COMMANDS = [
    ("submit", EXAMPLE, "--provider", "vertex"),
    ("status", VERTEX_JOB),
    ("logs", VERTEX_JOB),
    ("cancel", VERTEX_JOB),
]
SAGEMAKER_COMMANDS = [
    ("submit", EXAMPLE, "--provider", "sagemaker"),
    ("status", SAGEMAKER_JOB),
    ("logs", SAGEMAKER_JOB),
    ("cancel", SAGEMAKER_JOB),
]
VERTEX_FIX = "Run: pip install 'cloudtrain[vertex]'"
SAGEMAKER_FIX = "Run: pip install 'cloudtrain[sagemaker]'"


def case(hidden: tuple[str, ...], argv: tuple[str, ...], error: str) -> object:
    return pytest.param(hidden, argv, error, id=f"{'+'.join(hidden)}-{argv[0]}")


@pytest.mark.parametrize(
    ("hidden", "argv", "error"),
    [
        *(
            case(("google",), argv, f"google.cloud.aiplatform_v1 is not installed. {VERTEX_FIX}")
            for argv in VERTEX_COMMANDS
        ),
        # google-cloud-aiplatform without google-cloud-storage
        case(
            ("google.cloud.storage",),
            VERTEX_COMMANDS[0],
            f"google.cloud.storage is not installed. {VERTEX_FIX}",
        ),
        # regression: the error translation imported botocore before the check
        *(
            case(("boto3", "botocore"), argv, f"boto3 is not installed. {SAGEMAKER_FIX}")
            for argv in SAGEMAKER_COMMANDS
        ),
        # boto3 present, botocore gone
        case(("botocore",), SAGEMAKER_COMMANDS[0], f"botocore is not installed. {SAGEMAKER_FIX}"),
    ],
)
def test_a_missing_cloud_library_is_one_error_line_with_the_pip_command(
    hidden: tuple[str, ...], argv: tuple[str, ...], error: str
) -> None:
    result = run_without(hidden, *argv)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1
    assert [line for line in result.stderr.splitlines() if line.startswith("Error: ")] == [f"Error: {error}"]
