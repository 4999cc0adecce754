"""The local request holds the cluster once, so it grows with the hosts, not with their square.

Each replica still gets exactly the environment its provider documents: the launcher
builds it from the request's shared ``cluster`` entry and the replica's own part.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from cloudtrain import api
from cloudtrain.providers import local, vertex
from cloudtrain.providers.local.launcher import expand, replica_env, resolve_ports
from cloudtrain.specfile import load_spec

RESOURCE_CONFIG = "opt/ml/input/config/resourceconfig.json"


def _overrides(hosts: int) -> list[str]:
    """Hosts of one CPU each, which every provider's catalog and checks accept in any number."""
    return [f"resources.hosts={hosts}", "resources.accelerator=cpu", "resources.per_host=1"]


def _request(example_job: Path, tmp_path: Path, emulate: str | None, hosts: int) -> dict[str, Any]:
    overrides = _overrides(hosts)
    if emulate is None:  # a local storage.root next to job.yaml would be written by packing
        overrides.append(f"storage.root={tmp_path / 'outputs'}")
    return api.prepare(load_spec(example_job, overrides), local.Local(emulate=emulate), run_id="r1").request


def _size(request: dict[str, Any]) -> int:
    """Bytes of ``request.json`` as ``submit`` writes it."""
    return len(json.dumps(request, indent=2))


@pytest.mark.parametrize("emulate", [None, "vertex", "sagemaker"])
def test_the_request_grows_linearly_with_the_hosts(
    example_job: Path, tmp_path: Path, emulate: str | None
) -> None:
    sizes = [_size(_request(example_job, tmp_path, emulate, hosts)) for hosts in (2, 20, 200)]
    # regression: every replica carried every host's address, 2,000 hosts gave a 108 MB request
    assert sizes[2] / sizes[1] < 15, sizes
    assert sizes[1] / sizes[0] < 15, sizes


def test_plain_local_replicas_get_tf_config_with_the_whole_cluster_and_their_task(
    example_job: Path, tmp_path: Path
) -> None:
    request = _request(example_job, tmp_path, None, 3)
    assert replica_env(request, "worker-1")["TF_CONFIG"] == (
        '{"cluster": {"chief": ["127.0.0.1:<port:0>"], "worker": ["127.0.0.1:<port:1>", '
        '"127.0.0.1:<port:2>"]}, "task": {"type": "worker", "index": 1}}'
    )
    assert "TF_CONFIG" not in json.dumps(request["replicas"][2]["env"])


def test_vertex_replicas_get_tf_config_and_cluster_spec_as_vertex_writes_them(
    example_job: Path, tmp_path: Path
) -> None:
    request = _request(example_job, tmp_path, "vertex", 3)
    spec = load_spec(example_job, _overrides(3))
    job = vertex.render(api.pack_code(vertex.provider.plan(spec).with_run("r1"))[0])["jobSpec"]
    chief, workers = ["127.0.0.1:<port:0>"], ["127.0.0.1:<port:1>", "127.0.0.1:<port:2>"]
    cloud = {"environment": "cloud", "job": job}
    env = replica_env(request, "worker-1")
    assert env["TF_CONFIG"] == json.dumps(
        {"cluster": {"chief": chief, "worker": workers}, **cloud, "task": {"type": "worker", "index": 1}}
    )
    assert env["CLUSTER_SPEC"] == json.dumps(
        {
            "cluster": {"workerpool0": chief, "workerpool1": workers},
            **cloud,
            "task": {"type": "workerpool1", "index": 1},
        }
    )


def test_sagemaker_hosts_get_the_resolver_and_their_own_resource_config(
    example_job: Path, tmp_path: Path
) -> None:
    request = _request(example_job, tmp_path, "sagemaker", 3)
    algo3 = expand(request["cluster"], request["replicas"][2])
    assert algo3["env"]["CLOUDTRAIN_HOSTS"] == (
        "algo-1=127.0.0.1:<port:0>,algo-2=127.0.0.1:<port:1>,algo-3=127.0.0.1:<port:2>"
    )
    text = algo3["files"][RESOURCE_CONFIG]
    assert text.startswith('{"current_host": "algo-3", "current_instance_type": ')  # its own host first
    config = json.loads(text)
    assert config["hosts"] == config["instance_groups"][0]["hosts"] == ["algo-1", "algo-2", "algo-3"]
    assert "cluster" not in algo3


def test_each_attempt_fills_the_shared_cluster_with_the_same_fresh_ports(
    example_job: Path, tmp_path: Path
) -> None:
    request = _request(example_job, tmp_path, None, 3)
    replicas = resolve_ports(request)
    tf_configs = [json.loads(replica["env"]["TF_CONFIG"]) for replica in replicas]
    assert [config["task"] for config in tf_configs] == [
        {"type": "chief", "index": 0},
        {"type": "worker", "index": 0},
        {"type": "worker", "index": 1},
    ]
    clusters = [config["cluster"] for config in tf_configs]
    assert clusters[0] == clusters[1] == clusters[2]
    addresses = [*clusters[0]["chief"], *clusters[0]["worker"]]
    assert all(re.fullmatch(r"127\.0\.0\.1:\d+", address) for address in addresses), addresses
    assert len(set(addresses)) == 3
