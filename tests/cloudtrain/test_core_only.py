"""With only the core package installed, every optional dependency a command needs is one clear line.

A fresh virtual environment (``python -m venv``, no network) sees exactly cloudtrain's
core dependencies: a ``.pth`` file points at a folder of links to them in this
environment's site-packages, and at the project's ``sdk`` and ``entrypoints``. Each case
submits the example job there, through the CLI or the Python API, and must end in one
``Error: ... pip install 'cloudtrain[EXTRA]'`` line with no traceback.
"""

from __future__ import annotations

import os
import subprocess
import sysconfig
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = "examples/binary_classifier/job.yaml"
# pyproject.toml [project] dependencies, as import names, with what they import in turn.
CORE = (
    "click",
    "pydantic",
    "pydantic_core",
    "annotated_types",
    "typing_extensions",
    "typing_inspection",
    "yaml",
    "_yaml",
    "rich",
    "markdown_it",
    "mdurl",
    "pygments",
    "pathspec",
    "packaging",
)
# The Python API, with the CLI's error boundary reduced to what a pipeline would do:
# print a cloudtrain error in one line; anything else escapes with its traceback.
API_SCRIPT = """
import sys
import cloudtrain
try:
    cloudtrain.submit({spec!r}, provider={provider!r})
except cloudtrain.MissingDependencyError as err:
    sys.exit(f"Error: {{err}}")
"""


def _link_core(target: Path) -> None:
    """Link each core package (a folder, a module or an extension) of this environment into ``target``."""
    site = Path(sysconfig.get_paths()["purelib"])
    for name in CORE:
        found = [site / name, site / f"{name}.py", *site.glob(f"{name}.*.so")]
        for path in (p for p in found if p.exists()):
            (target / path.name).symlink_to(path)


@pytest.fixture(scope="session")
def core_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a fresh environment that can import cloudtrain and its core only."""
    root = tmp_path_factory.mktemp("core-only")
    venv.create(root / "env", with_pip=False, symlinks=True)
    python = root / "env" / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    packages = root / "packages"
    packages.mkdir()
    _link_core(packages)
    paths = [packages, REPO / "sdk", REPO / "entrypoints"]
    (Path(site) / "cloudtrain-core.pth").write_text("".join(f"{p}\n" for p in paths))
    return python


def _run(python: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "CLOUDTRAIN_LOCAL_HOME": str(tmp_path / "local"),
    }
    return subprocess.run([python, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


def _assert_one_error_naming(result: subprocess.CompletedProcess[str], extra: str) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, result.stderr
    assert errors[0].endswith(f"Run: pip install 'cloudtrain[{extra}]'"), errors


def test_the_environment_has_the_core_and_nothing_else(core_python: Path, tmp_path: Path) -> None:
    probe = "import importlib.util as u; print([m for m in ('numpy', 'google', 'boto3', 'botocore') if u.find_spec(m)])"
    found = _run(core_python, tmp_path, "-c", probe)
    assert found.stdout.strip() == "[]", found.stderr
    assert _run(core_python, tmp_path, "-m", "cloudtrain", "validate", EXAMPLE).returncode == 0


CASES = [
    # (provider argument, extra named in the error)
    ("vertex", "vertex"),
    ("sagemaker", "sagemaker"),
    ("local", "runtime"),  # the replicas need TensorFlow, Keras and numpy here
]


@pytest.mark.parametrize(("provider", "extra"), CASES)
def test_cli_submit_names_the_extra(core_python: Path, tmp_path: Path, provider: str, extra: str) -> None:
    args = ("-m", "cloudtrain", "submit", EXAMPLE)
    result = _run(core_python, tmp_path, *args, *(("--provider", provider) if provider != "local" else ()))
    _assert_one_error_naming(result, extra)


@pytest.mark.parametrize(("provider", "extra"), CASES)
def test_python_api_submit_names_the_extra(
    core_python: Path, tmp_path: Path, provider: str, extra: str
) -> None:
    script = API_SCRIPT.format(spec=EXAMPLE, provider=None if provider == "local" else provider)
    _assert_one_error_naming(_run(core_python, tmp_path, "-c", script), extra)


def test_jax_backend_names_both_extras(core_python: Path, tmp_path: Path) -> None:
    result = _run(
        core_python, tmp_path, "-m", "cloudtrain", "submit", EXAMPLE, "--set", "training.keras_backend=jax"
    )
    _assert_one_error_naming(result, "runtime,jax")
    assert "jax, keras, tensorflow and numpy are not installed" in result.stderr


def test_cost_plot_names_the_extra(core_python: Path, tmp_path: Path) -> None:
    args = ("cost", EXAMPLE, "--throughput", "1200@t4", "--plot", str(tmp_path / "cost.png"))
    _assert_one_error_naming(_run(core_python, tmp_path, "-m", "cloudtrain", *args), "plot")


def test_require_never_raises_anything_else(core_python: Path, tmp_path: Path) -> None:
    # regression: find_spec("google.cloud.aiplatform") raised ModuleNotFoundError without "google"
    script = (
        "from cloudtrain.errors import MissingDependencyError, require\n"
        "try:\n"
        "    require('google.cloud.aiplatform', 'vertex')\n"
        "except MissingDependencyError as err:\n"
        "    print(err)\n"
    )
    result = _run(core_python, tmp_path, "-c", script)
    assert result.stdout.strip() == (
        "google.cloud.aiplatform is not installed. Run: pip install 'cloudtrain[vertex]'"
    ), result.stderr


def test_doctor_without_tensorflow_reports_it_with_the_extra(core_python: Path, tmp_path: Path) -> None:
    # regression: "The checks gave no report (exit 1, Expecting value: line 1 column 1 (char 0)): ModuleNotFoundError"
    result = _run(core_python, tmp_path, "-m", "cloudtrain", "doctor")
    assert result.returncode == 1 and "Traceback" not in result.stderr and "Error:" not in result.stderr
    tensorflow = next(
        line for line in result.stdout.splitlines() if line.split()[:2] == ["fail", "tensorflow"]
    )
    fix = result.stdout.splitlines()[result.stdout.splitlines().index(tensorflow) + 1]
    assert "pip install 'cloudtrain[runtime]'" in fix
