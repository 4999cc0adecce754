"""Storage URIs and provider overrides become the paths this replica opens."""

from __future__ import annotations

from pathlib import Path

import pytest

from cloudtrain_runtime import environments, locations
from cloudtrain_runtime.cluster import ClusterInfo
from cloudtrain_runtime.config import from_dict
from cloudtrain_runtime.errors import ConfigError
from cloudtrain_runtime.paths import storage_path
from tests.cloudtrain_runtime.harness import runtime_config


def _cluster(provider: str) -> ClusterInfo:
    return ClusterInfo(provider, "chief", 0, 0, True, ("h:1",), Path("/"))


def _config(**overrides: object) -> object:
    raw = runtime_config(Path("/unused"), **overrides)
    return from_dict(raw, "test")


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("gs://bucket/run/backup", "/sandbox/gcs/bucket/run/backup"),  # Vertex FUSE mount
        ("s3://bucket/run/logs", "/sandbox/s3/bucket/run/logs"),  # local stand-in bucket
        ("/abs/model", "/abs/model"),  # local paths stay
    ],
)
def test_storage_uris_map_under_the_root(uri: str, expected: str) -> None:
    assert storage_path(uri, "/sandbox", environments.mounts()) == Path(expected)


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("hdfs://x/y", "unsupported scheme"),  # no mount for it
        ("gs://b/a\x00b", "NUL character"),  # would fail later, far from its source
    ],
)
def test_unopenable_uris_are_errors(uri: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        storage_path(uri, "/", environments.mounts())


def test_vertex_aip_dirs_override_the_config() -> None:
    config = _config(
        export_dir="gs://b/p/model", backup_dir="gs://b/p/backup", tensorboard_dir="gs://b/p/logs"
    )
    env = {"AIP_MODEL_DIR": "gs://b/base/model/", "AIP_CHECKPOINT_DIR": "gs://b/base/checkpoints/"}
    found = locations.resolve(config, _cluster("vertex"), env, "/root")
    assert found.export == Path("/root/gcs/b/base/model")
    assert found.backup == Path("/root/gcs/b/base/checkpoints")
    assert found.tensorboard == Path("/root/gcs/b/p/logs")  # no AIP_TENSORBOARD_LOG_DIR set
    assert found.result_file == Path("/root/gcs/b/base/cloudtrain-result.json")
    assert found.progress_file == Path("/root/gcs/b/base/cloudtrain-progress.json")  # beside the result


def test_sagemaker_uses_its_fixed_paths() -> None:
    config = _config(name="churn", data={"train": "s3://b/train"}, export_dir="s3://b/p/model")
    found = locations.resolve(config, _cluster("sagemaker"), {}, "/root")
    assert found.export == Path("/root/opt/ml/model/churn/1")  # numeric version for TF Serving
    assert found.backup == Path("/root/opt/ml/checkpoints")
    assert found.tensorboard == Path("/root/opt/ml/output/tensorboard")
    assert found.channels == {"train": Path("/root/opt/ml/input/data/train")}
    assert found.result_file == Path("/root/opt/ml/output/data/cloudtrain-result.json")
    # synced to S3 while the job runs, where the results folder reaches S3 only at its end
    assert found.progress_file == Path("/root/opt/ml/checkpoints/cloudtrain-progress.json")


def test_aip_variables_are_ignored_off_vertex() -> None:
    config = _config(export_dir="/out/model")
    found = locations.resolve(config, _cluster("tf_config"), {"AIP_MODEL_DIR": "gs://x/y"}, "/")
    assert found.export == Path("/out/model")
