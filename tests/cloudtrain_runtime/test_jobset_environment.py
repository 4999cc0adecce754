"""The JobSet environment adapter, from pod environments as JobSet and the Job controller set them.

Each pod sees ``JOBSET_*`` through the downward API from JobSet's annotations, the pods
per Job from the render, and ``JOB_COMPLETION_INDEX`` from the Job controller
(``cloudtrain_runtime.providers.jobset``), one of the built-in environments the runtime asks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cloudtrain_runtime import environments, locations
from cloudtrain_runtime.config import from_dict
from cloudtrain_runtime.errors import ClusterError
from cloudtrain_runtime.providers.jobset import ENVIRONMENT
from tests.cloudtrain_runtime.harness import runtime_config


def _pod(
    index: int, *, hosts: int = 3, job: int = 0, replicas: int = 1, name: str = "demo-0123456789"
) -> dict[str, str]:
    return {
        "JOBSET_NAME": name,
        "JOBSET_REPLICATED_JOB": "host",
        "JOBSET_REPLICATED_JOB_REPLICAS": str(replicas),
        "JOBSET_JOB_INDEX": str(job),
        "CLOUDTRAIN_JOBSET_HOSTS": str(hosts),
        "JOB_COMPLETION_INDEX": str(index),
    }


@pytest.mark.parametrize(
    ("env", "task_id", "rank", "chief"),
    [
        (_pod(0), "chief_0", 0, True),  # pod 0 is the chief
        (_pod(1), "worker_0", 1, False),  # the next pods are workers, in index order
        (_pod(2), "worker_1", 2, False),
        (_pod(1, hosts=2, job=1, replicas=2), "worker_2", 3, False),  # job 1's pods follow job 0's
        (_pod(0, hosts=1), "chief_0", 0, True),  # one host: the chief alone
    ],
)
def test_rank_and_role_come_from_the_job_and_pod_index(
    env: dict[str, str], task_id: str, rank: int, chief: bool
) -> None:
    info = ENVIRONMENT.cluster(env, root="/")
    assert (info.provider, info.task_id, info.rank, info.is_chief) == ("jobset", task_id, rank, chief)
    assert info.tf_config is not None
    assert info.tf_config["task"] == {"type": info.task_type, "index": info.task_index}


def test_the_hosts_are_the_jobset_hostnames_in_rank_order() -> None:
    info = ENVIRONMENT.cluster(_pod(0, hosts=2, job=1, replicas=2), root="/")
    assert info.hosts == (
        "demo-0123456789-host-0-0.demo-0123456789:2222",
        "demo-0123456789-host-0-1.demo-0123456789:2222",
        "demo-0123456789-host-1-0.demo-0123456789:2222",
        "demo-0123456789-host-1-1.demo-0123456789:2222",
    )
    assert info.hosts[info.rank] == "demo-0123456789-host-1-0.demo-0123456789:2222"  # job 1, pod 0


@pytest.mark.parametrize(
    ("env", "detected"),
    [
        (_pod(0), True),  # a JobSet pod
        ({"JOBSET_NAME": "demo"}, False),  # no completion index: not an Indexed Job's pod
        ({"JOB_COMPLETION_INDEX": "0"}, False),  # an Indexed Job outside a JobSet
        ({}, False),
    ],
)
def test_detection(env: dict[str, str], detected: bool) -> None:
    assert ENVIRONMENT.detects(env, "/") is detected


def test_storage_is_the_gcs_fuse_mount_under_the_root() -> None:
    assert ENVIRONMENT.cluster(_pod(0), root="/sandbox").storage_mount == Path("/sandbox/gcs")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"JOB_COMPLETION_INDEX": "3"}, "outside a JobSet of 1 Job(s) of 3 pod(s)"),  # past the last pod
        ({"JOBSET_JOB_INDEX": "1"}, "outside a JobSet of 1 Job(s)"),  # past the last Job
        ({"JOB_COMPLETION_INDEX": "-1"}, "JOB_COMPLETION_INDEX must be a whole number from 0"),
        ({"JOB_COMPLETION_INDEX": "１"}, "JOB_COMPLETION_INDEX must be a whole number"),  # a full-width digit
        ({"CLOUDTRAIN_JOBSET_HOSTS": "0"}, "CLOUDTRAIN_JOBSET_HOSTS must be a whole number from 1"),
        ({"CLOUDTRAIN_JOBSET_HOSTS": "9" * 5000}, "CLOUDTRAIN_JOBSET_HOSTS must be a whole number"),  # huge
        ({"JOBSET_NAME": "Demo"}, "JOBSET_NAME must be a JobSet or replicatedJob name"),
        ({"JOBSET_NAME": "demo\x00x"}, "JOBSET_NAME must be a JobSet"),  # a NUL byte
        ({"JOBSET_REPLICATED_JOB": ""}, "JOBSET_REPLICATED_JOB must be"),
    ],
)
def test_a_broken_pod_environment_is_one_cluster_error(change: dict[str, str], message: str) -> None:
    with pytest.raises(ClusterError) as raised:
        ENVIRONMENT.cluster({**_pod(0), **change}, root="/")
    assert message in str(raised.value)
    assert len(str(raised.value)) < 500  # one line, however large the input


def test_it_is_the_environment_a_pod_is_detected_as() -> None:
    assert environments.detect(_pod(1), "/") is ENVIRONMENT
    # a pod's environment beats the plain TF_CONFIG adapter that would otherwise take any TF_CONFIG
    assert (
        environments.detect({**_pod(1), "TF_CONFIG": '{"cluster": {}, "task": {"type": "worker"}}'}, "/")
        is ENVIRONMENT
    )


def test_emulated_pods_reach_each_other_on_loopback_ports() -> None:
    """``CLOUDTRAIN_HOSTS`` maps the host names, which resolve only in the cluster, as SageMaker's does."""
    names = [f"demo-0123456789-host-0-{i}.demo-0123456789" for i in range(2)]
    loopback = ",".join(f"{name}=127.0.0.1:{4000 + i}" for i, name in enumerate(names))
    info = ENVIRONMENT.cluster({**_pod(1, hosts=2), "CLOUDTRAIN_HOSTS": loopback}, root="/")
    assert info.hosts == ("127.0.0.1:4000", "127.0.0.1:4001")
    assert info.tf_config == {
        "cluster": {"chief": ["127.0.0.1:4000"], "worker": ["127.0.0.1:4001"]},
        "task": {"type": "worker", "index": 0},
    }


def test_a_malformed_loopback_map_names_the_form_with_a_pod_host_name() -> None:
    with pytest.raises(
        ClusterError, match=r"CLOUDTRAIN_HOSTS entries must look like demo-0123456789-host-0-0\.demo"
    ):
        ENVIRONMENT.cluster({**_pod(0, hosts=1), "CLOUDTRAIN_HOSTS": "no-address"}, root="/")


@pytest.mark.parametrize(
    ("root", "kept"),
    [
        ("gs://bucket/demo", False),  # FUSE writes through: the verified export lets the backup go
        ("s3://bucket/demo", True),  # the sidecar never deletes in S3: the backup stays, and says why
    ],
)
def test_on_s3_the_backup_is_kept_after_the_export(tmp_path: Path, root: str, kept: bool) -> None:
    config = from_dict(
        runtime_config(
            tmp_path,
            backup_dir=f"{root}/runs/r1/checkpoints",
            tensorboard_dir=f"{root}/runs/r1/logs",
            export_dir=f"{root}/runs/r1/model",
        ),
        "the test",
    )
    info = ENVIRONMENT.cluster(_pod(0, hosts=1), str(tmp_path))
    where = locations.resolve(config, info, _pod(0, hosts=1), str(tmp_path))
    scheme = root.split("://")[0].replace("gs", "gcs")
    assert where.export == tmp_path / scheme / "bucket/demo/runs/r1/model"
    assert (where.keep_backups is not None) is kept
