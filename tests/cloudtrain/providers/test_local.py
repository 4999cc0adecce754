"""``local.render`` is pure and gives each replica the environment its provider documents."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cloudtrain.api import plan
from cloudtrain.errors import SpecError
from cloudtrain.providers import local, sagemaker, vertex
from cloudtrain.providers.local.launcher import expand, replica_env
from cloudtrain.specfile import load_spec
from tests.conftest import Result

BUNDLES = {
    "local": "/data/outputs/code/0123456789abcdef.tar.gz",
    "vertex": "gs://my-bucket/binary-classifier/code/0123456789abcdef.tar.gz",
    "sagemaker": "s3://my-bucket/binary-classifier/code/0123456789abcdef.tar.gz",
}


def _render(example_job: Path, provider: str, hosts: int = 2) -> dict[str, Any]:
    spec = load_spec(example_job, [f"resources.hosts={hosts}"])
    return local.render(plan(spec, provider).with_bundle(BUNDLES[provider]).with_run("r1"))


def _env(request: dict[str, Any], name: str) -> dict[str, str]:
    """The variables the launcher gives replica ``name``, from the request's shared cluster and its own part."""
    return replica_env(request, name)


@pytest.mark.parametrize("provider", ["local", "vertex", "sagemaker"])
def test_render_is_pure_and_json_ready(example_job: Path, provider: str) -> None:
    first, second = _render(example_job, provider), _render(example_job, provider)
    assert first == second
    assert json.loads(json.dumps(first)) == first


def test_plain_local_runs_one_runtime_per_host_with_tf_config_on_loopback(example_job: Path) -> None:
    request = _render(example_job, "local", hosts=3)
    assert [r["name"] for r in request["replicas"]] == ["chief-0", "worker-0", "worker-1"]
    assert {tuple(r["argv"]) for r in request["replicas"]} == {(sys.executable, "-m", "cloudtrain_runtime")}
    env = _env(request, "worker-1")
    assert json.loads(env["TF_CONFIG"]) == {
        "cluster": {
            "chief": ["127.0.0.1:<port:0>"],
            "worker": ["127.0.0.1:<port:1>", "127.0.0.1:<port:2>"],
        },
        "task": {"type": "worker", "index": 1},
    }
    assert env["CLOUDTRAIN_ROOT"] == "<run>/hosts/worker-1"
    assert env["CLOUDTRAIN_CPU_DEVICES"] == "1"  # resources.per_host
    assert env["CLOUDTRAIN_BUNDLE"] == BUNDLES["local"]
    assert json.loads(env["CLOUDTRAIN_CONFIG"])["replicas"] == 3
    # the bundle's folder is mounted at its own path, since the runtime opens it under the root
    assert request["replicas"][0]["links"]["data/outputs/code"] == "/data/outputs/code"


def test_several_devices_on_several_hosts_run_one_worker_per_device(example_job: Path) -> None:
    planned = (
        plan(load_spec(example_job, ["resources.per_host=2"]), "local")
        .with_bundle("/tmp/b/0.tar.gz")
        .with_run("r1")
    )
    request = local.render(planned)
    assert [r["name"] for r in request["replicas"]] == ["chief-0", "worker-0", "worker-1", "worker-2"]
    env = _env(request, "worker-2")
    assert env["CLOUDTRAIN_CPU_DEVICES"] == "1"
    assert len(json.loads(env["TF_CONFIG"])["cluster"]["worker"]) == 3


def test_emulating_several_devices_on_several_hosts_is_refused_with_the_fix(example_job: Path) -> None:
    planned = (
        plan(load_spec(example_job, ["resources.per_host=2"]), "vertex")
        .with_bundle("gs://b/c/0.tar.gz")
        .with_run("r1")
    )
    with pytest.raises(SpecError, match=r"--set resources\.per_host=1"):
        local.render(planned)


def test_plain_local_with_one_host_sets_no_tf_config(example_job: Path) -> None:
    request = _render(example_job, "local", hosts=1)
    assert [r["name"] for r in request["replicas"]] == ["chief-0"]
    assert "TF_CONFIG" not in _env(request, "chief-0")


def test_vertex_emulation_gives_each_replica_what_vertex_gives(example_job: Path) -> None:
    request = _render(example_job, "vertex", hosts=3)
    job = vertex.provider.render(
        plan(load_spec(example_job, ["resources.hosts=3"]), "vertex")
        .with_bundle(BUNDLES["vertex"])
        .with_run("r1")
    )
    container = job["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]
    assert [r["name"] for r in request["replicas"]] == ["chief-0", "worker-0", "worker-1"]
    env = _env(request, "worker-0")
    tf_config = json.loads(env["TF_CONFIG"])
    assert tf_config["task"] == {"type": "worker", "index": 0}
    assert tf_config["cluster"] == {
        "chief": ["127.0.0.1:<port:0>"],
        "worker": ["127.0.0.1:<port:1>", "127.0.0.1:<port:2>"],
    }
    assert tf_config["environment"] == "cloud"
    assert tf_config["job"] == job["jobSpec"]
    cluster_spec = json.loads(env["CLUSTER_SPEC"])
    assert cluster_spec["task"] == {"type": "workerpool1", "index": 0}
    assert set(cluster_spec["cluster"]) == {"workerpool0", "workerpool1"}
    assert env["AIP_MODEL_DIR"] == "gs://my-bucket/binary-classifier/runs/r1/model/"
    assert env["AIP_CHECKPOINT_DIR"] == "gs://my-bucket/binary-classifier/runs/r1/checkpoints/"
    assert env["AIP_TENSORBOARD_LOG_DIR"] == "gs://my-bucket/binary-classifier/runs/r1/logs/"
    # The job's ID is taken when the run is submitted, the same on every replica and attempt.
    assert env["CLOUD_ML_JOB_ID"] == "<job>"
    for item in container["env"]:
        assert env[item["name"]] == item["value"]
    # image: auto -> the request's bootstrap command, run by this machine's Python
    assert request["replicas"][1]["argv"] == [sys.executable, *container["command"][1:]]
    assert request["replicas"][1]["links"] == {"gcs": "<buckets>/gcs"}
    assert (
        request["upload"]["target"]
        == "<buckets>/gcs/my-bucket/binary-classifier/code/0123456789abcdef.tar.gz"
    )


def test_vertex_emulation_of_one_replica_has_cluster_spec_but_no_tf_config(example_job: Path) -> None:
    env = _env(_render(example_job, "vertex", hosts=1), "chief-0")
    assert "TF_CONFIG" not in env  # "Vertex does not set TF_CONFIG for single-replica training jobs"
    assert json.loads(env["CLUSTER_SPEC"])["task"] == {"type": "workerpool0", "index": 0}


def test_sagemaker_emulation_builds_an_opt_ml_tree_per_host_and_no_tf_config(example_job: Path) -> None:
    request = _render(example_job, "sagemaker")
    cloud = sagemaker.provider.render(
        plan(load_spec(example_job), "sagemaker").with_bundle(BUNDLES["sagemaker"]).with_run("r1")
    )
    algo2 = expand(request["cluster"], request["replicas"][1])
    assert algo2["name"] == "algo-2"
    assert "TF_CONFIG" not in algo2["env"]
    assert algo2["env"]["CLOUDTRAIN_HOSTS"] == "algo-1=127.0.0.1:<port:0>,algo-2=127.0.0.1:<port:1>"
    # The name is taken at submit (never one an earlier job had): the request's, or its next -rN.
    assert algo2["env"]["TRAINING_JOB_NAME"] == "<job>"
    assert request["job"] == cloud["TrainingJobName"]
    assert algo2["env"]["CLOUDTRAIN_BUNDLE"] == cloud["Environment"]["CLOUDTRAIN_BUNDLE"]
    assert algo2["env"] == _env(request, "algo-2")
    files = algo2["files"]
    config = {
        path.rsplit("/", 1)[1]: json.loads(text) for path, text in files.items() if path.endswith(".json")
    }
    # image: auto keeps the DLC's entrypoint, so its start-up scripts stand in under the host's root
    assert sorted(path for path in files if not path.endswith(".json")) == [
        "usr/local/bin/entrypoint.sh",
        "usr/local/bin/start_cuda_compat.sh",
    ]
    assert algo2["argv"][:3] == ["bash", "-m", "<run>/hosts/algo-2/usr/local/bin/entrypoint.sh"]
    assert config["resourceconfig.json"]["current_host"] == "algo-2"
    assert config["resourceconfig.json"]["hosts"] == ["algo-1", "algo-2"]
    assert config["hyperparameters.json"] == cloud["HyperParameters"]
    assert config["inputdataconfig.json"]["code"]["TrainingInputMode"] == "File"
    checkpoints = "<buckets>/s3/my-bucket/binary-classifier/runs/r1/checkpoints/"
    assert {"source": checkpoints, "target": "opt/ml/checkpoints"} in algo2["copy_in"]
    assert algo2["sync_out"] == [
        {"source": "opt/ml/checkpoints", "target": checkpoints},
        {
            "source": "opt/ml/output/tensorboard",
            "target": "<buckets>/s3/my-bucket/binary-classifier/runs/r1/logs",
        },
    ]
    assert request["restarts"]["host"] == {"limit": 0, "rule": "the request has no RetryStrategy"}
    targets = [item["target"] for item in request["collect"]]
    output = "<buckets>/s3/my-bucket/binary-classifier/runs/r1/output/<job>/output"
    assert targets == [f"{output}/model.tar.gz", f"{output}/output.tar.gz"]


def test_a_fault_is_added_to_the_request_and_checked(example_job: Path) -> None:
    request = _render(example_job, "local")
    assert local.with_fault(request, "worker:0@epoch:1")["fault"] == "worker:0@epoch:1"
    assert local.with_fault(request, None) is request
    with pytest.raises(SpecError, match=r"--fault: 'worker-0@1' is not a fault"):
        local.with_fault(request, "worker-0@1")
    assert local.with_fault(request, "hang@step:20")["fault"] == "hang@step:20"
    with pytest.raises(SpecError, match=r"hang@step:<n> for one replica that stops making progress"):
        local.with_fault(request, "hang@epoch:1")  # a hang is at a step, within an epoch


@pytest.mark.parametrize(
    ("provider", "emulate", "fault", "message"),
    [
        (
            "vertex",
            "sagemaker",
            None,
            r"--emulate runs the job on this machine, so it needs --provider local",
        ),
        ("sagemaker", None, "chief:0@epoch:1", r"--fault runs the job on this machine"),
        ("local", "azure", None, r"--emulate: 'azure' is not a provider to emulate"),
    ],
)
def test_emulate_and_fault_need_the_local_provider(
    provider: str, emulate: str | None, fault: str | None, message: str
) -> None:
    with pytest.raises(SpecError, match=message):
        local.check_options(provider, emulate=emulate, fault=fault)
        local.Local(emulate=emulate, fault=fault)


def test_an_emulating_local_provider_plans_for_the_emulated_one(example_job: Path) -> None:
    spec = load_spec(str(example_job), ("vertex.project=my-project", "storage.root=gs://bucket/x"))
    assert local.Local(emulate="vertex").plan(spec).provider == "vertex"
    assert local.Local().plan(spec).provider == "local"


def test_submit_dry_run_with_emulate_prints_the_local_request_for_that_provider(
    example_job: Path, run_cli: Callable[..., Result]
) -> None:
    result = run_cli("submit", str(example_job), "--emulate", "sagemaker", "--dry-run")
    assert result.code == 0, result.err
    request = json.loads(result.out)
    assert request["emulates"] == "sagemaker"
    assert [r["name"] for r in request["replicas"]] == ["algo-1", "algo-2"]


def test_submit_with_emulate_on_a_cloud_provider_is_refused_with_the_fix(
    example_job: Path, run_cli: Callable[..., Result]
) -> None:
    result = run_cli("submit", str(example_job), "-p", "vertex", "--emulate", "vertex")
    assert result.code == 2
    assert result.err == (
        "Error: --emulate runs the job on this machine, so it needs --provider local (got 'vertex'). "
        "Use: cloudtrain submit JOB --provider local --emulate vertex\n"
    )


def test_unmet_requirements_stop_a_local_submit_before_any_process_starts(
    example_job: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Callable[..., Result]
) -> None:
    project = tmp_path / "project"
    shutil.copytree(example_job.parent, project, ignore=shutil.ignore_patterns("outputs"))
    (project / "requirements.txt").write_text("surely-not-installed-pkg>=2\n")
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path / "home"))
    result = run_cli("submit", str(project / "job.yaml"))
    assert result.code != 0
    [error] = result.errors
    assert error.startswith(f"{project / 'requirements.txt'}: this Python ({sys.executable}) lacks ")
    assert "surely-not-installed-pkg>=2 (not installed)" in error
    assert error.endswith(f"Run: {sys.executable} -m pip install -r {project / 'requirements.txt'}")
    assert not (tmp_path / "home" / "runs").exists()  # nothing started, nothing installed
