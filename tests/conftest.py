"""Fixtures shared by every test: the repository's paths, a clean cache per test, and the CLI."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings

from cloudtrain.cli import main
from tests.mlflow_server import mlflow_server  # noqa: F401 - a fixture for every test folder

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_JOB = REPO / "examples" / "binary_classifier" / "job.yaml"
PLUGIN = REPO / "tests" / "cloudtrain" / "providers" / "plugin"

# Hypothesis holds each example to a wall-clock deadline (200 ms by default); in parallel
# workers beside training processes that measures the machine's load, not the code. Tests
# that bound their time say so with a deadline of their own.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The multi-process training tests go first, in their collected order.

    They take 5 to 60 s each against milliseconds for most others. The parallel workers,
    handed one test at a time (``--maxschedchunk 1`` in pyproject.toml), share them out as
    they come free and end on the short ones, instead of one worker still training long
    after the others ran out of tests.
    """
    items.sort(key=lambda item: item.get_closest_marker("multiprocess") is None)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bundles and local runs go to a fresh cache, never the developer's home."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(autouse=True)
def _no_terminal_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Output is as wide as a pipe's, however the suite runs.

    pytest-xdist's workers start with ``COLUMNS=80`` and ``LINES=24`` in their environment,
    which a plain ``pytest`` run (and a user piping cloudtrain's output) does not have; the
    tests that want a width set one themselves.
    """
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


# Where boto3 finds credentials before any file: none of the developer's reach a test.
AWS_CREDENTIAL_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
)


@pytest.fixture(autouse=True)
def _no_user_defaults(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No profile, gcloud, AWS or kubeconfig setting or credential of the developer's reaches a test (cloudtrain.defaults).

    Every variable the providers' discovery reads is cleared, and the config files are
    looked for in empty folders; a test that wants a default sets one.
    """
    from cloudtrain.defaults import PROFILE_VARIABLE
    from cloudtrain.providers.kubernetes import discover as kube
    from cloudtrain.providers.kubernetes import kubeconfig
    from cloudtrain.providers.sagemaker import discover as aws
    from cloudtrain.providers.vertex import discover as google

    names = (PROFILE_VARIABLE, *google.PROJECT_VARIABLES, *google.REGION_VARIABLES)
    for name in (*names, "CLOUDSDK_ACTIVE_CONFIG_NAME", *aws.REGION_VARIABLES, *aws.PROFILE_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path_factory.mktemp("gcloud")))
    aws_home = tmp_path_factory.mktemp("aws")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(aws_home / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(aws_home / "credentials"))
    for name in (*AWS_CREDENTIAL_VARIABLES, kube.IN_CLUSTER_VARIABLE):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(kubeconfig.KUBECONFIG_VARIABLE, str(tmp_path_factory.mktemp("kube") / "config"))


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def example_job() -> Path:
    return EXAMPLE_JOB


@dataclass
class Result:
    code: int
    out: str
    err: str

    def __iter__(self) -> Iterator[int | str]:
        """``code, out, err = run_cli(...)``."""
        return iter((self.code, self.out, self.err))

    @property
    def errors(self) -> list[str]:
        """The ``Error: ...`` lines, without the prefix."""
        return [line.removeprefix("Error: ") for line in self.err.splitlines() if line.startswith("Error: ")]


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    """Run the real ``cloudtrain`` entry point in-process, error boundary included.

    ``run_cli("plan", "job.yaml", "--json")`` -> exit code, stdout, stderr.
    """

    def run(*args: str) -> Result:
        with pytest.raises(SystemExit) as exit_info:
            main(list(args))
        captured = capsys.readouterr()
        return Result(int(exit_info.value.code or 0), captured.out, captured.err)

    return run


@pytest.fixture
def toycloud(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Install the third-party ``toycloud`` provider as a real distribution with its entry points.

    A ``.dist-info`` folder on ``sys.path`` (and ``PYTHONPATH``, for subprocesses) declares
    the provider (``cloudtrain.providers``), its spec section (``cloudtrain.spec_sections``)
    and its runtime environment (``cloudtrain.runtime_environments``), exactly as ``pip
    install`` of a plugin package would. The user's profile gives its section a storage
    root, as a plugin's user would. Yields ``$TOYCLOUD_HOME``, where its jobs live.
    """
    from cloudtrain.provider import registry
    from cloudtrain_runtime import environments

    site = tmp_path_factory.mktemp("site-packages")
    dist = site / "toycloud_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toycloud-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[cloudtrain.providers]\ntoycloud = toycloud:provider\n\n"
        "[cloudtrain.spec_sections]\ntoycloud = toycloud_settings:ToyCloudSettings\n\n"
        "[cloudtrain.runtime_environments]\ntoycloud = toycloud_runtime:ENVIRONMENT\n"
    )
    home = tmp_path_factory.mktemp("toycloud-home")
    for path in (str(PLUGIN), str(site)):
        monkeypatch.syspath_prepend(path)
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(PLUGIN), str(site), os.environ.get("PYTHONPATH", "")])
    )
    monkeypatch.setenv("TOYCLOUD_HOME", str(home))
    profile = Path(os.environ["XDG_CONFIG_HOME"]) / "cloudtrain" / "config.yaml"
    profile.parent.mkdir(parents=True, exist_ok=True)
    profile.write_text("profiles:\n  default:\n    toycloud:\n      storage_root: toy://lake\n")
    registry.forget_entry_points()
    environments.forget_entry_points()
    yield home
    monkeypatch.undo()
    registry.forget_entry_points()
    environments.forget_entry_points()
