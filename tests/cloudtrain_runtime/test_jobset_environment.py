"""The JobSet environment adapter, from pod environments as JobSet and the Job controller set them.

Each pod sees ``JOBSET_*`` through the downward API from JobSet's annotations, the pods
per Job from the render, and ``JOB_COMPLETION_INDEX`` from the Job controller
(``cloudtrain_runtime.providers.jobset``). The adapter is not yet among the environments
the runtime asks, so these tests call it directly.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cloudtrain_runtime.errors import ClusterError
from cloudtrain_runtime.providers.jobset import ENVIRONMENT


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
