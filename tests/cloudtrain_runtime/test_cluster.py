"""Every environment adapter, from environments recorded as the providers document them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cloudtrain_runtime import cluster, environments
from cloudtrain_runtime.errors import ClusterError
from cloudtrain_runtime.providers import sagemaker

# Vertex, chief + 2 workers (https://cloud.google.com/vertex-ai/docs/training/distributed-training); Vertex adds "environment" and "job".
VERTEX_CLUSTER = {
    "chief": ["cmle-training-workerpool0-ab-0:2222"],
    "worker": ["cmle-training-workerpool1-ab-0:2222", "cmle-training-workerpool1-ab-1:2222"],
}


def _vertex_env(task_type: str, index: int) -> dict[str, str]:
    tf_config = {
        "cluster": VERTEX_CLUSTER,
        "environment": "cloud",
        "job": {},
        "task": {"type": task_type, "index": index, "trial": "1"},
    }
    return {
        "TF_CONFIG": json.dumps(tf_config),
        "CLUSTER_SPEC": json.dumps({"cluster": {}, "task": {"type": "workerpool1", "index": index}}),
        "AIP_MODEL_DIR": "gs://bucket/run/model/",
    }


def _sagemaker_root(tmp_path: Path, hosts: list[str], current: str) -> str:
    path = tmp_path / "opt/ml/input/config/resourceconfig.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"current_host": current, "hosts": hosts, "network_interface_name": "eth0"}))
    return str(tmp_path)


def test_vertex_chief() -> None:
    info = cluster.from_environment(_vertex_env("chief", 0), root="/r")
    assert (info.provider, info.task_id, info.rank, info.is_chief, info.num_hosts) == (
        "vertex",
        "chief_0",
        0,
        True,
        3,
    )
    assert info.storage_mount == Path("/r/gcs")
    assert info.tf_config is None  # Vertex's own TF_CONFIG is used as is


def test_vertex_worker_ranks_after_the_chief() -> None:
    info = cluster.from_environment(_vertex_env("worker", 1), root="/")
    assert (info.task_id, info.rank, info.is_chief) == ("worker_1", 2, False)
    assert info.hosts[info.rank] == "cmle-training-workerpool1-ab-1:2222"


def test_vertex_single_replica_has_no_tf_config() -> None:
    env = {
        "CLUSTER_SPEC": json.dumps(
            {"cluster": {"workerpool0": ["h:2222"]}, "task": {"type": "workerpool0", "index": 0}}
        )
    }
    info = cluster.from_environment(env, root="/")
    assert (info.provider, info.rank, info.is_chief, info.num_hosts) == ("vertex", 0, True, 1)


def test_legacy_master_counts_as_chief() -> None:
    env = {
        "TF_CONFIG": json.dumps(
            {"cluster": {"master": ["m:1"], "worker": ["w:1"]}, "task": {"type": "master", "index": 0}}
        )
    }
    info = cluster.from_environment(env, root="/")
    assert info.is_chief and info.rank == 0 and info.provider == "tf_config"


def test_plain_tf_config_without_chief_makes_worker_0_chief() -> None:
    env = {
        "TF_CONFIG": json.dumps(
            {"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 0}}
        )
    }
    info = cluster.from_environment(env, root="/")
    assert (info.provider, info.rank, info.is_chief, info.task_id) == ("tf_config", 0, True, "worker_0")


def test_sagemaker_one_host(tmp_path: Path) -> None:
    info = cluster.from_environment({}, root=_sagemaker_root(tmp_path, ["algo-1"], "algo-1"))
    assert (info.provider, info.rank, info.is_chief, info.hosts) == ("sagemaker", 0, True, ("algo-1:8890",))
    assert info.tf_config == {"cluster": {"worker": ["algo-1:8890"]}, "task": {"type": "worker", "index": 0}}
    assert info.storage_mount == tmp_path / "opt/ml"


def test_sagemaker_three_hosts_rank_is_the_index_in_hosts(tmp_path: Path) -> None:
    # SageMaker sorts hosts as strings: algo-10 precedes algo-2 (https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-training-algo-running-container.html).
    hosts = ["algo-1", "algo-10", "algo-2"]
    info = cluster.from_environment({}, root=_sagemaker_root(tmp_path, hosts, "algo-2"))
    assert (info.rank, info.is_chief, info.task_id) == (2, False, "worker_2")
    assert info.tf_config["cluster"]["worker"] == ["algo-1:8890", "algo-10:8890", "algo-2:8890"]
    assert info.tf_config["task"] == {"type": "worker", "index": 2}


def test_sagemaker_host_override_maps_names_to_loopback_ports(tmp_path: Path) -> None:
    root = _sagemaker_root(tmp_path, ["algo-1", "algo-2"], "algo-1")
    env = {"CLOUDTRAIN_HOSTS": "algo-1=127.0.0.1:41231,algo-2=127.0.0.1:41232"}
    info = cluster.from_environment(env, root=root)
    assert info.hosts == ("127.0.0.1:41231", "127.0.0.1:41232")
    cluster.wait_for_peers(info, attempts=1)  # real resolution of the overridden addresses


def test_a_tf_config_wins_over_a_resourceconfig(tmp_path: Path) -> None:
    # SageMaker never sets TF_CONFIG, so one set by hand means the job describes itself.
    root = _sagemaker_root(tmp_path, ["algo-1", "algo-2"], "algo-2")
    env = {"TF_CONFIG": json.dumps({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}})}
    info = cluster.from_environment(env, root=root)
    assert (info.provider, info.hosts, info.tf_config) == ("tf_config", ("a:1",), None)


def test_every_adapter_is_asked_in_order_and_found_by_its_provider() -> None:
    providers = [environment.provider for environment in environments.every()]
    assert providers == ["sagemaker", "vertex", "jobset", "tf_config", "bare"]
    assert all(environments.named(name).provider == name for name in providers)


def test_bare_machine() -> None:
    info = cluster.from_environment({}, root="/")
    assert (info.provider, info.rank, info.is_chief, info.num_hosts) == ("bare", 0, True, 1)


@pytest.mark.parametrize(
    ("tf_config", "message"),
    [
        ("{oops", "TF_CONFIG must be JSON"),  # not JSON
        ('{"cluster": {"worker": ["a:1"]}}', "TF_CONFIG must be JSON"),  # no task
        (
            '{"cluster": {"worker": ["a:1"], "ps": ["p:1"]}, "task": {"type": "worker", "index": 0}}',
            "no parameter servers",
        ),
        ('{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 3}}', "not in its cluster"),
    ],
)
def test_bad_tf_config_is_a_clear_error(tf_config: str, message: str) -> None:
    with pytest.raises(ClusterError, match=message):
        cluster.from_environment({"TF_CONFIG": tf_config}, root="/")


def test_malformed_host_override() -> None:
    with pytest.raises(ClusterError, match=re.escape("algo-1=127.0.0.1:41231")):
        sagemaker.host_overrides("algo-1", example="algo-1")


def _hosts(provider: str, *hosts: str) -> cluster.ClusterInfo:
    return cluster.ClusterInfo(provider, "worker", 0, 0, True, hosts, Path("/"))


def test_peer_resolution_retries_with_backoff_then_fails_naming_the_host() -> None:
    attempts: list[str] = []
    sleeps: list[float] = []

    def resolve(host: str) -> None:
        attempts.append(host)
        if host == "algo-2" and attempts.count(host) < 3:
            raise OSError("not yet")

    cluster.wait_for_peers(
        _hosts("sagemaker", "algo-1:8890", "algo-2:8890"), resolve=resolve, sleep=sleeps.append
    )
    assert attempts == ["algo-1", "algo-2", "algo-2", "algo-2"] and sleeps == [1.0, 2.0]
    bad = _hosts("sagemaker", "127.0.0.1:8890", "no-such-host.invalid:8890")
    with pytest.raises(ClusterError) as err:
        cluster.wait_for_peers(bad, attempts=2, sleep=sleeps.append)
    assert str(err.value) == (
        "Peer host 'no-such-host.invalid' did not resolve after 2 attempts. On SageMaker, check the "
        "job's VPC DNS settings; when emulating hosts locally, map it in CLOUDTRAIN_HOSTS."
    )


@pytest.mark.parametrize(
    "info",
    [
        _hosts("vertex", "a:2222", "b:2222"),  # Vertex peers resolve before the replicas start
        _hosts("tf_config", "a:1", "b:1"),  # whoever wrote TF_CONFIG made the names resolve
        _hosts("sagemaker", "algo-1:8890"),  # one host has no peers
    ],
)
def test_only_late_resolving_environments_with_peers_wait(info: cluster.ClusterInfo) -> None:
    def resolve(host: str) -> None:
        raise AssertionError(f"resolved {host}")

    cluster.wait_for_peers(info, resolve=resolve)


def test_a_name_the_resolver_refuses_fails_at_once() -> None:
    # The IDNA codec refuses labels over 63 characters with a UnicodeError, not an OSError.
    info = _hosts("sagemaker", "127.0.0.1:8890", f"{'a' * 64}.b:8890")
    with pytest.raises(ClusterError, match="is not a host name that can resolve"):
        cluster.wait_for_peers(info, sleep=lambda seconds: None)
