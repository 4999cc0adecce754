"""The runtime's environments are an open registry: built-ins without package metadata, then packages'.

A stock TensorFlow image holds only the bundled runtime source, no distribution of
cloudtrain: the built-in environments must be found there all the same. An installed
package adds its own through the ``cloudtrain.runtime_environments`` entry point, with
its detection, cluster view, storage scheme and artifact locations.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from cloudtrain_runtime import environments, locations
from cloudtrain_runtime.config import from_dict
from cloudtrain_runtime.errors import ConfigError
from tests.cloudtrain_runtime.harness import runtime_config

ENTRYPOINTS = Path(__file__).resolve().parents[2] / "entrypoints"

# A package's environment: recognised by its own variable, one host, its scheme at /lake.
LAKE_MODULE = textwrap.dedent(
    """
    from types import MappingProxyType
    from cloudtrain_runtime.replica import Environment, single_replica

    class Lake(Environment):
        provider = "lake"
        label = "Lake Cloud"
        mounts = MappingProxyType({"lake://": "/lake/"})

        def detects(self, env, root):
            return "LAKE_JOB" in env

        def cluster(self, env, root):
            return single_replica(self.provider, self.mount(root))

    ENVIRONMENT = Lake()
    """
)


def install(site: Path, entry: str, module: str = LAKE_MODULE) -> None:
    """A distribution in ``site`` declaring ``entry`` in the runtime environments group, as pip would."""
    dist = site / "lake_cloud-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: lake-cloud\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[{environments.ENTRY_POINT_GROUP}]\n{entry}\n")
    (site / "lake_runtime.py").write_text(module)


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "site-packages"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "lake_runtime", raising=False)
    environments.forget_entry_points()
    yield folder
    monkeypatch.undo()
    sys.modules.pop("lake_runtime", None)
    environments.forget_entry_points()


def test_the_built_ins_are_found_without_any_package_metadata(tmp_path: Path) -> None:
    """``python -S``: no site-packages, so no distribution at all, as in an image with only the runtime.

    It runs in an empty folder: ``-c`` puts the working directory on ``sys.path``, and a
    checkout's root holds the ``cloudtrain.egg-info`` an editable install writes there.
    """
    program = (
        f"import sys, importlib.metadata; sys.path.insert(0, {str(ENTRYPOINTS)!r}); "
        "from cloudtrain_runtime import environments; "
        "print(len(list(importlib.metadata.distributions())), [e.provider for e in environments.every()])"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", program], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert done.stdout.split(maxsplit=1) == ["0", "['sagemaker', 'vertex', 'jobset', 'tf_config', 'bare']\n"]


def test_an_installed_environment_is_asked_before_the_neutral_ones(site: Path) -> None:
    install(site, "lake = lake_runtime:ENVIRONMENT")
    order = [environment.provider for environment in environments.every()]
    assert order == ["sagemaker", "vertex", "jobset", "lake", "tf_config", "bare"]
    found = environments.detect(
        {"LAKE_JOB": "1", "TF_CONFIG": '{"cluster": {}, "task": {"type": "worker"}}'}, "/"
    )
    assert found.provider == "lake"  # its own marker wins over the plain TF_CONFIG


def test_its_scheme_opens_where_it_mounts_it(site: Path, tmp_path: Path) -> None:
    install(site, "lake = lake_runtime:ENVIRONMENT")
    raw = runtime_config(
        tmp_path,
        backup_dir="lake://pond/runs/r1/checkpoints",
        tensorboard_dir="lake://pond/runs/r1/logs",
        export_dir="lake://pond/runs/r1/model",
        data={"train": "gs://bucket/train"},
    )
    config = from_dict(raw, "the test")
    env = {"LAKE_JOB": "1"}
    cluster = environments.detect(env, str(tmp_path)).cluster(env, str(tmp_path))
    where = locations.resolve(config, cluster, env, str(tmp_path))
    assert where.export == tmp_path / "lake/pond/runs/r1/model"
    assert where.channels["train"] == tmp_path / "gcs/bucket/train"  # the built-ins' schemes still open
    assert environments.mounts()["lake://"] == "/lake/"


def test_a_package_whose_environment_fails_to_load_is_one_error_naming_it(site: Path) -> None:
    install(site, "lake = lake_runtime:ENVIRONMENT", module="raise ImportError('no module named lakefs')")
    with pytest.raises(
        ConfigError, match=r"The runtime environment 'lake' \(lake_runtime:ENVIRONMENT\) failed to load"
    ):
        environments.every()


def test_an_entry_point_that_is_no_environment_is_refused(site: Path) -> None:
    install(site, "lake = lake_runtime:ENVIRONMENT", module="ENVIRONMENT = {'provider': 'lake'}")
    with pytest.raises(ConfigError, match=r"is a dict, not a cloudtrain_runtime\.replica\.Environment"):
        environments.every()


def test_hyperparameter_files_come_from_the_environments_that_have_one() -> None:
    assert environments.hyperparameter_files() == [("SageMaker", "/opt/ml/input/config/hyperparameters.json")]
    assert json.dumps(environments.mounts()) == '{"s3://": "/s3/", "gs://": "/gcs/"}'
